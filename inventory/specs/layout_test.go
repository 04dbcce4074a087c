package specs_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/specstest"
)

func manifestsByName(snap *specs.Snapshot) map[string]*specs.Manifest {
	out := map[string]*specs.Manifest{}
	for _, m := range snap.Manifests {
		out[m.Name] = m
	}
	return out
}

func TestSourceReadsTheNewerLayout(t *testing.T) {
	repo := specstest.BuildMove(t)
	snap, err := repo.Source().Read(context.Background(), "families")
	require.NoError(t, err)
	assert.Equal(t, repo.New, snap.Commit)
	var layouts []string
	for _, l := range snap.Layouts {
		layouts = append(layouts, l.Name+"="+l.Root)
	}
	assert.Equal(t, []string{"e2e-models=tests/e2e/models", "families=families"}, layouts,
		"a commit in the middle of a move holds both layouts, and both are read")

	by := manifestsByName(snap)
	alpha := by["alpha-vl-2b"]
	require.NotNil(t, alpha)
	assert.Equal(t, "families/vislm/tests/manifests/alpha-vl-2b.json", alpha.Path)
	assert.Equal(t, specs.LayoutFamilies, alpha.Layout)
	assert.Equal(t, "task", alpha.TaskKey)
	assert.Equal(t, "vision_language_generation", alpha.TaskStrategy)
	assert.Equal(t, "vlm", alpha.Group)
	assert.Equal(t, "example/Alpha-VL-2B", alpha.Checkpoint)
	assert.Equal(t, "1111111111111111111111111111111111111111", alpha.Revision)
	assert.Equal(t, "fp16", alpha.Precision)
	assert.Equal(t, 4096, alpha.MaxSequence)
	assert.Equal(t, &specs.Parallel{TP: 1, Field: "tensor_parallel_size"}, alpha.Parallel)
	assert.False(t, alpha.Parallel.Multi())
	assert.True(t, alpha.Listed, "the newer layout globs its manifests: no MODEL.toml, nothing unlisted")
	assert.Equal(t, []specs.Testcase{{Name: "alpha-vl-2b", Premerge: true}}, alpha.Testcases)

	assert.Equal(t, &specs.Parallel{TP: 2, Field: "tensor_parallel_size"}, by["alpha-vl-2b-tp2"].Parallel)
	tp4 := by["det-large-tp4"]
	assert.Equal(t, &specs.Parallel{TP: 4, Field: "build.tensor_parallel_size"}, tp4.Parallel)
	assert.Equal(t, []string{"tensor_parallel_size"}, tp4.BuildArgs)
	assert.Equal(t, "detection", tp4.Group)
	gamma := by["gamma-vl-4b"]
	assert.Equal(t, "gamma-vl-4b", gamma.Checkpoint, "without hf_id TRTMC builds from the name")
	assert.Equal(t, "name", gamma.CheckpointField)
	assert.Equal(t, "vision_language_generation", gamma.Testcases[0].SelectedTask)

	// The families not moved are still read in the older layout.
	assert.Equal(t, specs.LayoutE2EModels, by["ocr-one"].Layout)
	assert.Equal(t, "task_strategy", by["ocr-one"].TaskKey)
	fams := map[string]*specs.Family{}
	for _, f := range snap.Families {
		fams[f.Dir] = f
	}
	assert.Equal(t, "families/vislm", fams["vislm"].Path)
	assert.Equal(t, specs.LayoutFamilies, fams["vislm"].Layout)
	assert.Equal(t, "tests/e2e/models/ocrish", fams["ocrish"].Path)
	assert.Equal(t, []string{"detection"}, fams["detectors"].Groups)
	for _, p := range snap.Problems {
		assert.NotEqual(t, specs.LayoutFamilies, layoutOf(p.Path), "no problem in the newer layout's files: %s", p)
	}
}

func layoutOf(p string) string {
	l, _, _, ok := specs.DefaultConfig().Locate(p)
	if !ok {
		return ""
	}
	return l.Name
}

// The newer layout's manifests classify as the same profiles did in the
// older layout: TP variants, L0 partials and normal profiles alike.
func TestClassifyAgreesAcrossLayouts(t *testing.T) {
	repo := specstest.BuildMove(t)
	cfg := specs.DefaultConfig()
	read := func(ref string) *specs.Snapshot {
		snap, err := repo.Source().Read(context.Background(), ref)
		require.NoError(t, err)
		return snap
	}
	old, moved := read("main"), read("families")
	type class struct{ kind, rule, of string }
	classes := func(snap *specs.Snapshot) map[string]class {
		out := map[string]class{}
		for _, g := range cfg.GroupNames() {
			for _, c := range specs.Classify(cfg, snap, g) {
				out[c.Name] = class{c.Class.Kind, c.Class.Rule, c.Class.Of}
			}
		}
		return out
	}
	before, after := classes(old), classes(moved)
	assert.Equal(t, map[string]class{
		"alpha-vl-2b":     {"normal", specs.RuleOnlyProfile, ""},
		"alpha-vl-2b-tp2": {"variant", "variant.tensor_parallel_size", "alpha-vl-2b"},
		// premerge is a CI lane; the -l0 name makes it partial, as before.
		"alpha-vl-2b-l0":  {"partial", "partial.name-l0", "alpha-vl-2b"},
		"beta-vl-7b":      {"normal", specs.RuleOnlyProfile, ""},
		"beta-vl-7b-int8": {"variant", "variant.quantization", "beta-vl-7b"},
		"gamma-vl-4b":     {"normal", specs.RuleOnlyProfile, ""},
		"det-small":       {"normal", specs.RuleOnlyProfile, ""},
		"det-large":       {"normal", specs.RuleOnlyProfile, ""},
		"det-large-tp4":   {"variant", "variant.build.tensor_parallel_size", "det-large"},
	}, pick(after, "alpha-vl-2b", "alpha-vl-2b-tp2", "alpha-vl-2b-l0", "beta-vl-7b", "beta-vl-7b-int8",
		"gamma-vl-4b", "det-small", "det-large", "det-large-tp4"))
	compared := 0
	for name, a := range after {
		b, ok := before[name]
		if !ok {
			continue
		}
		compared++
		assert.Equal(t, b.kind, a.kind, "%s: kind in the older layout %s, in the newer %s", name, b.kind, a.kind)
		assert.Equal(t, b.of, a.of, "%s: the normal profile it belongs to", name)
	}
	for _, moved := range []string{"alpha-vl-2b", "alpha-vl-2b-tp2", "alpha-vl-2b-l0", "beta-vl-7b", "beta-vl-7b-int8",
		"det-small", "det-large", "det-large-tp4"} {
		assert.Contains(t, before, moved, "%s is compared across the move", moved)
	}
	assert.Greater(t, compared, 8, "the moved profiles and the unmoved ones")
}

func pick[V any](m map[string]V, keys ...string) map[string]V {
	out := map[string]V{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// Bad manifests of the newer layout are problems that name the file, the
// line and the field, as in the older layout.
func TestNewerLayoutProblemsNameFileLineAndField(t *testing.T) {
	repo := specstest.BuildMove(t)
	snap, err := repo.Source().Read(context.Background(), "broken")
	require.NoError(t, err)
	type prob struct{ kind, path, msg string }
	var got []prob
	for _, p := range snap.Problems {
		if layoutOf(p.Path) == specs.LayoutFamilies {
			got = append(got, prob{p.Kind, p.Path, p.Message})
			assert.True(t, p.Unattributed, "%s: no valid task, so it shows in every group", p.Path)
		}
	}
	const fields = "families/badfam/tests/manifests/bad-fields.json"
	assert.ElementsMatch(t, []prob{
		{specs.ProblemInvalid, fields, "line 6: task: must be a string, got 7"},
		{specs.ProblemInvalid, fields, "line 1: precision: missing"},
		{specs.ProblemInvalid, fields, `line 8: testcases[0]: must be an object, got "not an object"`},
		{specs.ProblemInvalid, fields, "line 10: tensor_parallel_size: must be a positive integer, got 0"},
		{specs.ProblemMalformedJSON, "families/badfam/tests/manifests/bad-syntax.json",
			"line 4: malformed JSON: invalid character 'p' in literal false (expecting 'a')"},
	}, got)
	for _, g := range []string{"vlm", "detection"} {
		assert.Len(t, filterLayout(snap.ProblemsFor(g)), 5, "group %s", g)
	}
}

func filterLayout(ps []*specs.Problem) []*specs.Problem {
	var out []*specs.Problem
	for _, p := range ps {
		if layoutOf(p.Path) == specs.LayoutFamilies {
			out = append(out, p)
		}
	}
	return out
}

func TestParseManifestNamesLines(t *testing.T) {
	cfg := specs.DefaultConfig()
	older, _ := cfg.Layout(specs.LayoutE2EModels)
	newer, _ := cfg.Layout(specs.LayoutFamilies)
	tests := []struct {
		name   string
		layout specs.Layout
		doc    string
		want   []string
		fatal  string
	}{
		{"older: mistyped task_strategy and parallel", older, `{
  "name": "x",
  "hf_id": "a/b",
  "bundle": "x.bundle",
  "family": "f",
  "task_strategy": ["vision_language_generation"],
  "build_args": {"parallel": 2},
  "testcases": []
}`, []string{
			`line 6: task_strategy: must be a string, got ["vision_language_generation"]`,
			"line 7: build_args.parallel: must be an object, got 2",
			"line 8: testcases: is empty",
		}, ""},
		{"older: precision may be absent", older, `{"name": "x", "hf_id": "a/b", "bundle": "b", "family": "f",
 "task_strategy": "t", "testcases": [{}]}`, nil, ""},
		{"newer: task_strategy is not the newer key", newer, `{
  "name": "x",
  "hf_id": "a/b",
  "bundle": "x.bundle",
  "family": "f",
  "task_strategy": "vision_language_generation",
  "precision": "fp16",
  "testcases": [{"name": "x"}],
  "context_parallel_size": "2"
}`, []string{
			"line 1: task: missing",
			`line 9: context_parallel_size: must be a positive integer, got "2"`,
		}, ""},
		{"newer: selected_task with spaces", newer, `{"name": "x", "bundle": "b", "family": "f", "task": "t", "precision": "fp16",
 "testcases": [
   {"name": "x"},
   {"name": "y", "selected_task": " t"}
 ]}`, []string{`line 4: testcases[1].selected_task: must be a non-empty task id, got " t"`}, ""},
		{"truncated", newer, "{\n  \"name\": \"x\",\n", nil, "line 2: malformed JSON: unexpected EOF"},
		{"trailing data", older, "{}\n{}\n", nil, "line 2: malformed JSON: trailing data after the object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, fatal := specs.ParseManifest(tt.layout, "m.json", "f", []byte(tt.doc))
			assert.Equal(t, tt.fatal, fatal)
			if tt.fatal != "" {
				return
			}
			assert.Equal(t, tt.want, m.Problems)
		})
	}
}
