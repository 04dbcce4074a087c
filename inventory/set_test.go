package inventory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// setDoc is an inventory written as people write them: comments
// everywhere, flow and block mappings, a profile with nothing after a key.
const setDoc = `# The inventory (a comment at the top)
schema: trtmc-qual/inventory/v1
groups:
  vlm:
    description: single-image chat   # a trailing comment
    workload:
      endpoint_type: chat
      warmup: 5
      measured: 50
      concurrency: 1
      # the corpus, pinned later
      dataset: {corpus: corpora/vlm}
    profiles:
      # the one normal profile
      - id: qwen3-vl-2b
        checkpoint: Qwen/Qwen3-VL-2B-Instruct
        family: ref-vlm
        task: vision_language_generation
        kind: normal
        precision: fp16
        bundle:
          path: bundles/qwen3-vl-2b.bundle   # built by TRTMC's tooling
        tokenizer: {path: tokenizers/qwen3-vl-2b}
        hardware: [gb300]
        status: planned

      - id: qwen3-vl-2b-tp2
        checkpoint: Qwen/Qwen3-VL-2B-Instruct
        revision:
        family: ref-vlm
        task: vision_language_generation
        kind: variant
        variant_of: qwen3-vl-2b
        precision: fp16
        bundle: {path: "bundles/qwen3-vl-2b-tp2.bundle"}
        status: planned
# the end
`

func set(t *testing.T, data string, target Target, as ...string) (string, error) {
	t.Helper()
	var parsed []Assignment
	for _, a := range as {
		x, err := ParseAssignment(a)
		require.NoError(t, err)
		parsed = append(parsed, x)
	}
	r, err := Set(context.Background(), SetOptions{Path: "inv.yaml", Data: []byte(data), Target: target, Assignments: parsed, KnownFamily: knownFamily})
	if err != nil {
		return "", err
	}
	return string(r.Data), nil
}

// only asserts that got is want with exactly the given lines replaced
// (old line → new lines), every other byte the same.
func only(t *testing.T, want string, got string, edits ...[2]string) {
	t.Helper()
	for _, e := range edits {
		require.Contains(t, want, e[0])
		want = strings.Replace(want, e[0], e[1], 1)
	}
	assert.Equal(t, want, got)
}

func TestSetEditsInPlace(t *testing.T) {
	p := Target{Profile: "qwen3-vl-2b"}
	got, err := set(t, setDoc, p, "revision=0123456789abcdef0123456789abcdef01234567", "source_commit=e9132e79fba1bd22e5b121a4f339268e64a6faaf")
	require.NoError(t, err)
	only(t, setDoc, got,
		[2]string{"        checkpoint: Qwen/Qwen3-VL-2B-Instruct\n        family: ref-vlm\n        task: vision_language_generation\n        kind: normal",
			"        checkpoint: Qwen/Qwen3-VL-2B-Instruct\n        revision: 0123456789abcdef0123456789abcdef01234567\n        family: ref-vlm\n        task: vision_language_generation\n        kind: normal"},
		[2]string{"        status: planned\n\n", "        status: planned\n        source_commit: e9132e79fba1bd22e5b121a4f339268e64a6faaf\n\n"})

	// A nested key into a block mapping (its comment kept) and into a flow
	// mapping; a value replaced in place.
	got, err = set(t, setDoc, p, "bundle.sha256="+strings.Repeat("a", 64), "tokenizer.sha256="+strings.Repeat("b", 64), "hardware=gb300, h200", "status=implemented")
	require.NoError(t, err)
	only(t, setDoc, got,
		[2]string{"          path: bundles/qwen3-vl-2b.bundle   # built by TRTMC's tooling\n",
			"          path: bundles/qwen3-vl-2b.bundle   # built by TRTMC's tooling\n          sha256: " + strings.Repeat("a", 64) + "\n"},
		[2]string{"tokenizer: {path: tokenizers/qwen3-vl-2b}", "tokenizer: {path: tokenizers/qwen3-vl-2b, sha256: " + strings.Repeat("b", 64) + "}"},
		[2]string{"hardware: [gb300]", "hardware: [gb300, h200]"},
		[2]string{"        status: planned\n\n", "        status: implemented\n\n"})

	// A missing parent is added as a flow mapping, and the next key of it
	// goes into that mapping; `revision:` with no value gets one; a value
	// that would read back as a number is quoted; a quoted value is
	// replaced whole.
	v := Target{Profile: "qwen3-vl-2b-tp2"}
	got, err = set(t, setDoc, v, "exclusion.reason=tensor-parallel: one server process, no mpirun", "exclusion.owner=release-eng",
		"revision=0123", "bundle.path=bundles/x.bundle")
	require.NoError(t, err)
	only(t, setDoc, got,
		[2]string{"        revision:\n", "        revision: \"0123\"\n"},
		[2]string{`bundle: {path: "bundles/qwen3-vl-2b-tp2.bundle"}`, `bundle: {path: bundles/x.bundle}`},
		[2]string{"        status: planned\n# the end", "        status: planned\n        exclusion: {reason: \"tensor-parallel: one server process, no mpirun\", owner: release-eng}\n# the end"})

	// The group's own fields.
	got, err = set(t, setDoc, Target{Group: "vlm"}, "workload.dataset.sha256="+strings.Repeat("c", 64), "workload.measured=60", "workload.seed=42")
	require.NoError(t, err)
	only(t, setDoc, got,
		[2]string{"dataset: {corpus: corpora/vlm}", "dataset: {corpus: corpora/vlm, sha256: " + strings.Repeat("c", 64) + "}"},
		[2]string{"      measured: 50\n      concurrency: 1\n", "      measured: 60\n      concurrency: 1\n      seed: 42\n"})

	// Setting what is already there changes nothing.
	got, err = set(t, setDoc, p, "status=planned", "hardware=gb300")
	require.NoError(t, err)
	assert.Equal(t, setDoc, got)
}

// problemsOf is err as Problems, each as file:line: field: message.
func problemsOf(t *testing.T, err error) []string {
	t.Helper()
	var ps Problems
	require.ErrorAs(t, err, &ps, "%v", err)
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// Bad input is refused, naming file, line and field; nothing is returned
// to write.
func TestSetRefusesBadInput(t *testing.T) {
	p := Target{Profile: "qwen3-vl-2b"}
	for _, c := range []struct {
		target Target
		as     []string
		want   string
	}{
		{p, []string{"revison=x"}, `inv.yaml:15: profile qwen3-vl-2b: revison: unknown field; did you mean "revision"?`},
		{p, []string{"bundle.sha265=x"}, `inv.yaml:21: profile qwen3-vl-2b: bundle.sha265: unknown field; did you mean "sha256"?`},
		{p, []string{"colour=blue"}, `inv.yaml:15: profile qwen3-vl-2b: colour: unknown field (known: bundle, checkpoint, controls, exclusion, family, gaps, hardware, id, kind, model_name, parallelism, precision, revision, source_commit, status, task, tokenizer, variant_of)`},
		{p, []string{"parallelism.tp=two"}, `inv.yaml:15: profile qwen3-vl-2b: parallelism.tp: two: not an integer`},
		{Target{Group: "vlm"}, []string{"workload.measured=5O"}, `inv.yaml:9: groups.vlm.workload.measured: 5O: not an integer`},
		{p, []string{"bundle.sha256=XYZ"}, `inv.yaml:23: profile qwen3-vl-2b: bundle.sha256: must be 64 lowercase hex characters, got "XYZ"`},
		{p, []string{"source_commit=main"}, `inv.yaml:26: profile qwen3-vl-2b: source_commit: must be a full 40-character git commit, got "main"`},
		{p, []string{"family=nosuch"}, `inv.yaml:17: profile qwen3-vl-2b: family: unknown family "nosuch" (not in the family configuration)`},
		{p, []string{"id=other"}, `inv.yaml:15: profile qwen3-vl-2b: id: the profile's id names it everywhere (rows, evidence); rename it by hand`},
		{p, []string{"checkpoint=a\tb"}, `inv.yaml:16: profile qwen3-vl-2b: checkpoint: "a\tb": must be one line of printable text`},
		{p, []string{"bundle=x"}, `inv.yaml:21: profile qwen3-vl-2b: bundle: a struct field: not one inventory set changes; edit the file by hand`},
		{p, []string{"exclusion=x"}, `inv.yaml:15: profile qwen3-vl-2b: exclusion: a struct field: not one inventory set changes; edit the file by hand`},
		{Target{Group: "vlm"}, []string{"workload.generation=x"}, `inv.yaml:6: groups.vlm.workload.generation: not a field inventory set changes; edit the file by hand`},
		{Target{Profile: "qwen3-vl-2"}, []string{"revision=x"}, `inv.yaml: no profile qwen3-vl-2 in the file; did you mean "qwen3-vl-2b"?`},
		{Target{Group: "vml"}, []string{"description=x"}, `inv.yaml: no group vml in the file; did you mean "vlm"?`},
	} {
		_, err := set(t, setDoc, c.target, c.as...)
		assert.Equal(t, []string{c.want}, problemsOf(t, err), "%v", c.as)
	}
	// Every problem the edit makes is named, at the line the edited file
	// would have it on: here also what it does to the variant.
	_, err := set(t, setDoc, p, "kind=sideways")
	assert.Equal(t, []string{`inv.yaml:19: profile qwen3-vl-2b: kind: must be normal, variant or partial, got "sideways"`,
		`inv.yaml:33: profile qwen3-vl-2b-tp2: variant_of: no normal profile "qwen3-vl-2b" in group vlm`}, problemsOf(t, err))
	// A layout it cannot edit byte-exactly: named, to edit by hand.
	folded := strings.Replace(setDoc, "    description: single-image chat   # a trailing comment\n", "    description: >\n      single-image\n      chat\n", 1)
	_, err = set(t, folded, Target{Group: "vlm"}, "description=x")
	assert.Equal(t, []string{"inv.yaml:5: groups.vlm.description: cannot be edited in place: a block scalar (| or >); edit the file by hand"}, problemsOf(t, err))
	block := strings.Replace(setDoc, "        hardware: [gb300]\n", "        hardware:\n          - gb300\n", 1)
	_, err = set(t, block, Target{Profile: "qwen3-vl-2b"}, "hardware=h200")
	assert.Equal(t, []string{"inv.yaml:24: profile qwen3-vl-2b: hardware: cannot be edited in place: hardware is a block list; edit the file by hand"}, problemsOf(t, err))
}

// A file with problems of its own can be edited (set may be what fixes
// them); only a problem the edit makes is refused.
func TestSetRefusesOnlyNewProblems(t *testing.T) {
	broken := strings.Replace(setDoc, "        kind: variant\n", "        kind: sideways\n", 1)
	_, err := set(t, broken, Target{Profile: "qwen3-vl-2b"}, "hardware=h200")
	require.NoError(t, err, "the variant's own problem was there before")
	_, err = set(t, broken, Target{Profile: "qwen3-vl-2b"}, "status=implemented")
	assert.Equal(t, []string{"inv.yaml:21: profile qwen3-vl-2b: bundle.sha256: missing (only a planned profile may omit it)"}, problemsOf(t, err),
		"a problem the edit makes is refused")
	got, err := set(t, broken, Target{Profile: "qwen3-vl-2b-tp2"}, "kind=variant")
	require.NoError(t, err)
	assert.Equal(t, setDoc, got, "set fixed it")
}

// --pin computes each pin by the rule the run checks it by, from the
// entry's own path (relative to the inventory file), after the
// assignments.
func TestSetPins(t *testing.T) {
	dir := t.TempDir()
	for rel, body := range map[string]string{"bundles/qwen3-vl-2b.bundle": "a bundle", "tokenizers/qwen3-vl-2b/tokenizer.json": "{}",
		"tokenizers/other/tokenizer.json": `{"other": 1}`, "corpora/vlm/corpus.json": `{"entries": []}`} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644))
	}
	path := filepath.Join(dir, "inv.yaml")
	ctx := context.Background()
	r, err := Set(ctx, SetOptions{Path: path, Data: []byte(setDoc), Target: Target{Profile: "qwen3-vl-2b"},
		Assignments: []Assignment{{Field: "tokenizer.path", Value: "tokenizers/other"}}, Pins: []string{PinBundle, PinTokenizer}})
	require.NoError(t, err)
	bundle, err := BundleSHA256(ctx, filepath.Join(dir, "bundles/qwen3-vl-2b.bundle"))
	require.NoError(t, err)
	tok, err := TokenizerSHA256(ctx, filepath.Join(dir, "tokenizers/other"))
	require.NoError(t, err)
	assert.Equal(t, []Assignment{{"tokenizer.path", "tokenizers/other"}, {"bundle.sha256", bundle}, {"tokenizer.sha256", tok}}, r.Assignments,
		"the tokenizer pinned is the one the assignment names")
	inv, probs := Parse(path, r.Data)
	require.Empty(t, probs)
	p, _ := inv.Find("qwen3-vl-2b")
	assert.Equal(t, bundle, p.Bundle.SHA256)
	assert.Equal(t, tok, p.Tokenizer.SHA256)

	r, err = Set(ctx, SetOptions{Path: path, Data: []byte(setDoc), Target: Target{Group: "vlm"}, Pins: []string{PinCorpus}})
	require.NoError(t, err)
	corpus, err := CorpusSHA256(ctx, filepath.Join(dir, "corpora/vlm"))
	require.NoError(t, err)
	assert.Contains(t, string(r.Data), "dataset: {corpus: corpora/vlm, sha256: "+corpus+"}")

	// What cannot be pinned is named.
	_, err = Set(ctx, SetOptions{Path: path, Data: []byte(setDoc), Target: Target{Profile: "qwen3-vl-2b-tp2"}, Pins: []string{PinBundle}})
	got := problemsOf(t, err)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], path+":35: profile qwen3-vl-2b-tp2: bundle.sha256: cannot pin the bundle: ")
	_, err = Set(ctx, SetOptions{Path: path, Data: []byte(setDoc), Target: Target{Profile: "qwen3-vl-2b-tp2"}, Pins: []string{PinTokenizer}})
	assert.Equal(t, []string{path + ":27: profile qwen3-vl-2b-tp2: tokenizer.sha256: the profile names no tokenizer directory: set tokenizer.path first (tokenizer.path=DIR)"},
		problemsOf(t, err))
}

// The result is proven: an edit that would change anything but what was
// asked is refused (here the text edit is made to go wrong on purpose).
func TestSetVerifiesTheResult(t *testing.T) {
	o := SetOptions{Path: "inv.yaml", Data: []byte(setDoc), Target: Target{Profile: "qwen3-vl-2b"}}
	wrong := &SetResult{Data: []byte(strings.Replace(setDoc, "precision: fp16", "precision: fp32", 1)), Assignments: nil}
	err := verifySet(o, wrong)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not read back as asked")
	var ps Problems
	assert.False(t, errors.As(err, &ps), "not the user's input: a bug, never written")

	other := &SetResult{Data: []byte(strings.Replace(setDoc, "variant_of: qwen3-vl-2b\n        precision: fp16", "variant_of: qwen3-vl-2b\n        precision: fp32", 1)),
		Assignments: []Assignment{{"status", "planned"}}}
	assert.Error(t, verifySet(o, other), "another profile changed")
	right := &SetResult{Data: []byte(strings.Replace(setDoc, "        precision: fp16\n        bundle:\n", "        precision: fp32\n        bundle:\n", 1)),
		Assignments: []Assignment{{"precision", "fp32"}}}
	assert.NoError(t, verifySet(o, right))
}

func TestParseAssignment(t *testing.T) {
	a, err := ParseAssignment("exclusion.reason=a=b c")
	require.NoError(t, err)
	assert.Equal(t, Assignment{"exclusion.reason", "a=b c"}, a, "the first = splits")
	a, err = ParseAssignment("revision=")
	require.NoError(t, err)
	assert.Equal(t, Assignment{"revision", ""}, a)
	for _, bad := range []string{"revision", "=x", ""} {
		_, err := ParseAssignment(bad)
		assert.Error(t, err, bad)
	}
}

func TestPlain(t *testing.T) {
	for s, want := range map[string]bool{"abc": true, "Qwen/Qwen3-VL-2B": true, "release-eng": true, "0123": false, "1e3": false, "true": false,
		"null": false, "~": false, "a: b": false, "a, b": false, "#x": false, "-x": true, "- x": false, "": false, "a #b": false, "[x]": false, "é": true} {
		assert.Equal(t, want, plain(s), "%q", s)
	}
}

// Any assignment to any target either is refused (Problems, naming the
// file) or gives a file that parses and validates as well as before, with
// the value read back: never a panic, never a file the loader would reject.
func FuzzSet(f *testing.F) {
	for _, s := range [][3]string{{"qwen3-vl-2b", "revision", "abc"}, {"qwen3-vl-2b", "bundle.sha256", strings.Repeat("a", 64)},
		{"qwen3-vl-2b-tp2", "exclusion.reason", "a: b, {c}"}, {"", "workload.measured", "5O"}, {"qwen3-vl-2b", "hardware", "a,b,[c]"},
		{"qwen3-vl-2b", "checkpoint", "\"quoted\" #x"}, {"qwen3-vl-2b-tp2", "revision", "0123"}, {"", "description", "é\u202e"}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, profile, field, value string) {
		target := Target{Profile: profile, Group: "vlm"}
		r, err := Set(context.Background(), SetOptions{Path: "inv.yaml", Data: []byte(setDoc), Target: target,
			Assignments: []Assignment{{Field: field, Value: value}}, KnownFamily: knownFamily})
		if err != nil {
			var ps Problems
			require.ErrorAs(t, err, &ps, "%q=%q: refused as bad input, never an edit that reads back otherwise", field, value)
			for _, p := range ps {
				require.Equal(t, "inv.yaml", p.File)
			}
			return
		}
		_, probs := Parse("inv.yaml", r.Data)
		require.Empty(t, probs, "%q=%q gave:\n%s", field, value, r.Data)
	})
}
