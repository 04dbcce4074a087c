package inventory

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

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
			assert.Equal(t, 2, probs.ExitCode())
			got := err.Error() + "\n"
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			assert.Equal(t, string(want), got)
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

func TestSafeName(t *testing.T) {
	for _, ok := range []string{"qwen3-vl-2b", "a.b_c", "InternVL3.5-1B"} {
		assert.True(t, SafeName(ok), ok)
	}
	for _, bad := range []string{"", ".", "..", "a/b", `a\b`, "a b", "a\x00b", "a\nb", "-rf", strings.Repeat("x", 129)} {
		assert.False(t, SafeName(bad), "%q", bad)
	}
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
