package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/golden"
)

func knownFamily(name string) bool { return name == "ref-vlm" || name == "ref-detect" }

func TestLoadValid(t *testing.T) {
	inv, err := Load([]string{"testdata/valid.yaml"}, knownFamily)
	require.NoError(t, err)
	g := inv.Groups["vlm"]
	require.NotNil(t, g)
	assert.Equal(t, 50, g.Workload.Measured)
	require.Len(t, g.Profiles, 3)
	p := g.Profiles[0]
	assert.Equal(t, "qwen3-vl-2b", p.ID)
	assert.True(t, p.Counted())
	assert.False(t, g.Profiles[1].Counted(), "variants are not counted")
	assert.False(t, g.Profiles[2].Counted(), "partial profiles are not counted")
	assert.Equal(t, "testdata/valid.yaml:15", p.Where("id"))
	assert.Equal(t, "testdata/valid.yaml:23", p.Where("bundle.sha256"))
	assert.Equal(t, "tp2", g.Profiles[1].Parallelism.String())
	assert.Equal(t, "L0 smoke profile; not full-model coverage", g.Profiles[2].Exclusion.Reason)
}

// TestGoldenProblems checks the exact error output for broken inventories:
// every problem, each with file:line and field.
func TestGoldenProblems(t *testing.T) {
	for _, name := range []string{"syntax", "three", "many"} {
		t.Run(name, func(t *testing.T) {
			_, err := Load([]string{filepath.Join("testdata", name+".yaml")}, knownFamily)
			require.Error(t, err)
			var probs Problems
			require.ErrorAs(t, err, &probs)
			got := err.Error() + "\n"
			golden.Assert(t, name, []byte(got))
			for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
				assert.Regexp(t, `^testdata/`+name+`\.yaml:\d+: `, line, "every problem names file:line")
			}
		})
	}
}

func TestDuplicateIDsAcrossFiles(t *testing.T) {
	_, err := Load([]string{"testdata/valid.yaml", "testdata/valid.yaml"}, knownFamily)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `testdata/valid.yaml:3: groups.vlm: group "vlm" is defined twice`)
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"valid", "syntax", "three", "many"} {
		data, err := os.ReadFile(filepath.Join("testdata", name+".yaml"))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		inv, probs := Parse("fuzz.yaml", data)
		require.NotNil(t, inv)
		for _, p := range probs {
			require.Equal(t, "fuzz.yaml", p.File)
		}
		// Validation of whatever parsed must never panic either.
		_ = Validate(inv, knownFamily)
	})
}

// Issue 13, findings 1 and 9, through validation: each id (and group
// name) below was accepted by `inventory validate`; now each is one
// problem at the id's line whose text carries no raw control, bidi or
// invisible character.
func TestValidateRejectsHostileNames(t *testing.T) {
	data, err := os.ReadFile("testdata/valid.yaml")
	require.NoError(t, err)
	for _, id := range []string{"$(touch${IFS}PWNED)", "a;b", "a`id`b", "*", "~", "$HOME",
		"evil\u202etxt", "a\u200eb", "zero\u200bwidth", "full\uff0fslash", ".hidden"} {
		doc := strings.Replace(string(data), "id: qwen3-vl-2b\n", "id: "+strconv.Quote(id)+"\n", 1)
		inv, pprobs := Parse("inv.yaml", []byte(doc))
		require.Empty(t, pprobs)
		all := Validate(inv, knownFamily)
		all.clean()
		var probs Problems
		for _, p := range all {
			if strings.HasSuffix(p.Field, ": id") {
				probs = append(probs, p)
			}
		}
		require.Len(t, probs, 1, "%q: %v", id, all)
		assert.Equal(t, 15, probs[0].Line)
		assert.Contains(t, probs[0].String(), "is not a valid name")
		for _, p := range all {
			for _, c := range []byte(p.String()) {
				require.True(t, c >= 0x20 && c < 0x7f, "%q: problem carries byte %#x raw: %s", id, c, p)
			}
		}
		gdoc := strings.Replace(string(data), "  vlm:\n", "  "+strconv.Quote(id)+":\n", 1)
		inv, gprobs := Parse("inv.yaml", []byte(gdoc))
		require.Empty(t, gprobs)
		gprobs = Validate(inv, knownFamily)
		require.NotEmpty(t, gprobs, "group %q", id)
		assert.Contains(t, gprobs[0].String(), "group name")
	}
}

// An alias bomb (9^9 strings if expanded) is refused by the YAML decoder's
// aliasing limit or lands in a field of the wrong type: problems, at once,
// never an expansion.
func TestAliasBombIsAProblem(t *testing.T) {
	var b strings.Builder
	b.WriteString("schema: trtmc-qual/inventory/v1\ngroups:\n  vlm:\n    zz:\n")
	b.WriteString(`      a: &a ["x","x","x","x","x","x","x","x","x"]` + "\n")
	prev := "a"
	for _, n := range "bcdefghi" {
		refs := strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ",")
		fmt.Fprintf(&b, "      %c: &%c [%s]\n", n, n, refs)
		prev = string(n)
	}
	b.WriteString("    profiles:\n      - id: p\n        gaps: *i\n")
	_, probs := Parse("bomb.yaml", []byte(b.String()))
	require.NotEmpty(t, probs)
	assert.Contains(t, probs.Error(), "bomb.yaml:4: groups.vlm.zz: unknown field")
}

func TestTokenizerFieldsAreChecked(t *testing.T) {
	doc := `schema: trtmc-qual/inventory/v1
groups:
  vlm:
    workload: {endpoint_type: chat, warmup: 5, measured: 50, concurrency: 1, dataset: {corpus: c}}
    profiles:
      - id: a
        checkpoint: x/a
        family: f
        task: t
        kind: normal
        precision: fp16
        bundle: {path: a.bundle}
        tokenizer: {sha256: ABC}
        status: planned
`
	inv, probs := Parse("inv.yaml", []byte(doc))
	probs = append(probs, Validate(inv, nil)...)
	var msgs []string
	for _, p := range probs {
		msgs = append(msgs, p.String())
	}
	all := strings.Join(msgs, "\n")
	assert.Contains(t, all, `inv.yaml:13: profile a: tokenizer.sha256: must be 64 lowercase hex characters, got "ABC"`)
	assert.Contains(t, all, "profile a: tokenizer.path: a pinned tokenizer needs its directory")
}
