package inventory

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSuggest(t *testing.T) {
	fields := []string{"bundle", "checkpoint", "controls", "exclusion", "family", "id", "precision", "revision", "source_commit", "status"}
	for word, want := range map[string][]string{
		"chekpoint":    {"checkpoint"},
		"chekcpoint":   {"checkpoint"}, // a transposition is one edit
		"precison":     {"precision"},
		"Precision":    {"precision"}, // case does not count
		"sourcecommit": {"source_commit"},
		"revison":      {"revision"},
		"stauts":       {"status"},
		"ids":          {"id"},
		"colour":       nil, // nothing close
		"checkpoint":   nil, // the word is a candidate
		"":             nil,
	} {
		assert.Equal(t, want, Suggest(word, fields), word)
	}
	ids := []string{"yolo11n", "yolov5n", "yolov8n", "rt-detr", "detr-resnet-50"}
	assert.Equal(t, []string{"rt-detr"}, Suggest("rtdetr", ids))
	assert.Equal(t, []string{"yolov5n", "yolov8n"}, Suggest("yolov6n", ids), "every candidate at the smallest distance, in order")
	assert.Equal(t, []string{"vlm"}, Suggest("vlmm", []string{"vlm", "detection", "gpu"}))
	assert.Equal(t, []string{"detection"}, Suggest("detecton", []string{"vlm", "detection", "gpu"}))
	assert.Nil(t, Suggest("abc", []string{"xyz"}), "a short word takes one edit at most")

	assert.Equal(t, `did you mean "rt-detr"?`, DidYouMean("rtdetr", ids))
	assert.Equal(t, `did you mean "yolov5n" or "yolov8n"?`, DidYouMean("yolov6n", ids))
	assert.Equal(t, `did you mean "a", "b" or "c"?`, DidYouMean("x", []string{"a", "b", "c", "d"}), "three at most")
	assert.Empty(t, DidYouMean("colour", fields))
	assert.Equal(t, `no group "vlmm"; did you mean "vlm"?`, WithHint(`no group "vlmm"`, "vlmm", []string{"vlm", "gpu"}))
	assert.Equal(t, `no group "x"`, WithHint(`no group "x"`, "x", []string{"vlm", "detection"}), "nothing close: as it was")
	assert.Equal(t, `did you mean "a\u202eb"?`, DidYouMean("a\u202ec", []string{"a\u202eb"}), "a candidate is quoted, escaped")
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3}, {"ab", "ba", 1}, {"ca", "abc", 3}, {"héllo", "hello", 1}} {
		assert.Equal(t, c.d, editDistance(c.a, c.b), "%q %q", c.a, c.b)
		assert.Equal(t, c.d, editDistance(c.b, c.a), "symmetric: %q %q", c.b, c.a)
	}
}

// parseProblems parses valid.yaml with one line replaced and returns its
// problems, parse and validation, as Load reports them.
func parseProblems(t *testing.T, old, repl string) []string {
	t.Helper()
	data, err := os.ReadFile("testdata/valid.yaml")
	require.NoError(t, err)
	require.Contains(t, string(data), old)
	path := t.TempDir() + "/inv.yaml"
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(data), old, repl, 1)), 0o644))
	_, err = Load([]string{path}, knownFamily)
	require.Error(t, err)
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		out = append(out, strings.TrimPrefix(l, path))
	}
	return out
}

// Issue 36: "measured: 5O" was reported first as "must be > 0" at the
// group's line, then as yaml's "cannot unmarshal" at its own; now once,
// at its own line, naming the field and the value.
func TestTypeErrorOnceAtItsLine(t *testing.T) {
	assert.Equal(t, []string{":8: groups.vlm.workload.measured: 5O: not an integer"},
		parseProblems(t, "measured: 50", "measured: 5O"))
	assert.Equal(t, []string{":8: groups.vlm.workload.measured: 50.5: not an integer"},
		parseProblems(t, "measured: 50", "measured: 50.5"), "never truncated to 50")
	assert.Equal(t, []string{":22: profile qwen3-vl-2b: parallelism.tp: one: not an integer"},
		parseProblems(t, "parallelism: {tp: 1}", "parallelism: {tp: one}"), "a profile's, once (it was the group's and the profile's)")
	assert.Equal(t, []string{":26: profile qwen3-vl-2b: hardware: gb300: must be a list"},
		parseProblems(t, "hardware: [gb300]", "hardware: gb300"))
	assert.Equal(t, []string{":23: profile qwen3-vl-2b: bundle: x.bundle: must be a mapping (path, sha256)"},
		parseProblems(t, "bundle: {path: bundles/qwen3-vl-2b.bundle, sha256: 1111111111111111111111111111111111111111111111111111111111111111}",
			"bundle: x.bundle"), "not also bundle.path and bundle.sha256 missing")
	assert.Equal(t, []string{`:11: groups.vlm.workload.request_timeout_s: "sixty s": not a number`},
		parseProblems(t, "request_timeout_s: 60", `request_timeout_s: "sixty s"`), "a value that is not one word is quoted")
}

// Issue 36: a misspelled field was reported twice ("checkpoint: missing"
// and "unknown field"); now once, with the field it most likely means.
func TestMisspelledFieldOnceWithDidYouMean(t *testing.T) {
	assert.Equal(t, []string{`:16: profile qwen3-vl-2b: chekpoint: unknown field; did you mean "checkpoint"?`},
		parseProblems(t, "        checkpoint: Qwen/Qwen3-VL-2B-Instruct\n        revision:", "        chekpoint: Qwen/Qwen3-VL-2B-Instruct\n        revision:"))
	assert.Equal(t, []string{`:23: profile qwen3-vl-2b: bundle.sha265: unknown field; did you mean "sha256"?`},
		parseProblems(t, "sha256: 1111111111111111111111111111111111111111111111111111111111111111}", "sha265: 1111111111111111111111111111111111111111111111111111111111111111}"),
		"a nested field, not also bundle.sha256: missing")
	assert.Equal(t, []string{`:8: groups.vlm.workload.mesured: unknown field; did you mean "measured"?`},
		parseProblems(t, "measured: 50", "mesured: 50"), "not also workload.measured: must be > 0")
	got := parseProblems(t, "gaps: [video input]", "colour: blue")
	assert.Equal(t, []string{":25: profile qwen3-vl-2b: colour: unknown field (known: bundle, checkpoint, controls, exclusion, family, gaps, " +
		"hardware, id, kind, model_name, parallelism, precision, revision, source_commit, status, task, tokenizer, variant_of)"}, got,
		"nothing close: the known fields")
	// A key that is misspelled while the field it resembles is there is
	// only unknown: the field's own checks still run.
	got = parseProblems(t, "        kind: normal\n        precision: fp16\n        parallelism: {tp: 1}\n        bundle: {path: bundles/qwen3-vl-2b.bundle",
		"        kind: normal\n        precision: fp16\n        precison: fp16\n        parallelism: {tp: 1}\n        bundle: {path: bundles/qwen3-vl-2b.bundle")
	assert.Len(t, got, 1)
	assert.Contains(t, got[0], "precison: unknown field (known:")
}

// Issue 35: the workload's trials is a typed field: a value that is not an
// integer, or one outside 1..MaxTrials, is one problem at its own line;
// absent, one trial; given, that many.
func TestWorkloadTrials(t *testing.T) {
	assert.Equal(t, []string{":9: groups.vlm.workload.trials: three: not an integer"},
		parseProblems(t, "measured: 50", "measured: 50\n      trials: three"))
	assert.Equal(t, []string{":9: groups.vlm.workload.trials: must be between 1 and 10, got 0"},
		parseProblems(t, "measured: 50", "measured: 50\n      trials: 0"))
	assert.Equal(t, []string{":9: groups.vlm.workload.trials: must be between 1 and 10, got 11"},
		parseProblems(t, "measured: 50", "measured: 50\n      trials: 11"))
	data, err := os.ReadFile("testdata/valid.yaml")
	require.NoError(t, err)
	for _, c := range []struct {
		old, repl string
		want      int
	}{{"measured: 50", "measured: 50", 1}, {"measured: 50", "measured: 50\n      trials: 3", 3}} {
		path := t.TempDir() + "/inv.yaml"
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(data), c.old, c.repl, 1)), 0o644))
		inv, err := Load([]string{path}, knownFamily)
		require.NoError(t, err)
		assert.Equal(t, c.want, inv.Groups["vlm"].Workload.TrialCount(), c.repl)
	}
}
