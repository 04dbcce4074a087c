package trtmc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
)

func correctnessOpts(t *testing.T) CorrectnessOptions {
	t.Helper()
	trtmctest.OnPath(t)
	d := t.TempDir()
	bundle := filepath.Join(d, "served", "qwen3-vl-2b.bundle")
	require.NoError(t, os.MkdirAll(filepath.Dir(bundle), 0o755))
	require.NoError(t, os.WriteFile(bundle, []byte("the served bundle"), 0o644))
	engines, artifacts := filepath.Join(d, "correctness", "engines"), filepath.Join(d, "correctness", "artifacts")
	return CorrectnessOptions{
		Profile: "qwen3-vl-2b", Bundle: bundle, EngineDir: engines, ArtifactsDir: artifacts,
		Out: filepath.Join(d, "correctness.json"), Dir: d, Runner: proc.OS{}, Stdout: io.Discard, Stderr: io.Discard,
		Argv: []string{"pytest", "tests/e2e/models/qwen_vl/test_qwen_vl_e2e.py", "--e2e-model", "qwen3-vl-2b",
			"--engine-dir", engines, "--trtmc-binary", "build/trtmc", "--e2e-artifacts-dir", artifacts},
	}
}

func readCorrectness(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

// A passing case: every metric kept, every thresholded metric a gate with
// value, operator, threshold and outcome; on an engine directory that
// holds exactly the served bundle under the manifest's name.
func TestCorrectnessPass(t *testing.T) {
	o := correctnessOpts(t)
	res, err := RunCorrectness(context.Background(), o)
	require.NoError(t, err)
	require.NotNil(t, res.Passed)
	assert.True(t, *res.Passed)
	assert.Equal(t, []Gate{
		{Name: "qwen3-vl-2b/full_generation/token_match_rate", Value: 1, Op: ">=", Threshold: 0.9, Passed: true},
		{Name: "qwen3-vl-2b/vision_encode/cosine_similarity", Value: 0.9991, Op: ">=", Threshold: 0.99, Passed: true},
	}, res.Gates)
	assert.Equal(t, 0.012, res.Metrics["qwen3-vl-2b/vision_encode/max_abs_diff"], "informational metrics are kept, not gated")
	assert.Len(t, res.Metrics, 3)
	require.Len(t, res.Cases, 1)
	assert.Equal(t, "pass", res.Cases[0].Status)

	// What the harness's correctness stage reads: passed, metrics, gates.
	m := readCorrectness(t, o.Out)
	assert.Equal(t, true, m["passed"])
	assert.Len(t, m["gates"], 2)
	assert.Equal(t, CorrectnessSchema, m["schema"])
	target, err := os.Readlink(filepath.Join(o.EngineDir, "qwen3-vl-2b.bundle"))
	require.NoError(t, err)
	assert.Equal(t, o.Bundle, target)
}

func TestCorrectnessFailIsAVerdict(t *testing.T) {
	o := correctnessOpts(t)
	t.Setenv("FAKE_PYTEST", "fail")
	res, err := RunCorrectness(context.Background(), o)
	var cf *CorrectnessFailed
	require.ErrorAs(t, err, &cf)
	assert.Contains(t, err.Error(), "qwen3-vl-2b/full_generation/token_match_rate 0.4 not >= 0.9")
	assert.Contains(t, err.Error(), "case qwen3-vl-2b failed (full_generation)")
	assert.False(t, *res.Passed)
	m := readCorrectness(t, o.Out)
	assert.Equal(t, false, m["passed"], "a failed case is written: the row shows which gate failed")
}

// Outputs that cannot be trusted give no result at all, and say why,
// naming the profile.
func TestCorrectnessUntrustworthyOutputs(t *testing.T) {
	for scenario, want := range map[string]string{
		"no-metrics":   "correctness output without metrics",
		"skip":         "was skipped: a skipped case is no correctness result",
		"error":        "ended in error (reference)",
		"contradict":   "TRTMC says passed=true but 0.4 >= 0.9 is false",
		"build":        "built qwen3-vl-2b-rebuilt.bundle: it did not use the served bundle",
		"touch-bundle": "changed during the e2e case",
		"none":         "wrote no result.json",
		"exit5":        "did not run to a verdict (pytest exited 5",
	} {
		t.Run(scenario, func(t *testing.T) {
			o := correctnessOpts(t)
			t.Setenv("FAKE_PYTEST", scenario)
			_, err := RunCorrectness(context.Background(), o)
			require.Error(t, err)
			var cf *CorrectnessFailed
			assert.NotErrorAs(t, err, &cf)
			assert.ErrorContains(t, err, want)
			assert.ErrorContains(t, err, "profile qwen3-vl-2b")
			_, statErr := os.Stat(o.Out)
			assert.True(t, os.IsNotExist(statErr), "no correctness result is written from untrustworthy output")
		})
	}
}

func TestCorrectnessRefusesAStaleArtifactsDirAndAMissingCommand(t *testing.T) {
	o := correctnessOpts(t)
	require.NoError(t, os.MkdirAll(filepath.Join(o.ArtifactsDir, "old"), 0o755))
	_, err := RunCorrectness(context.Background(), o)
	assert.ErrorContains(t, err, "is not empty")

	o = correctnessOpts(t)
	o.Argv = []string{"pytest-not-installed"}
	_, err = RunCorrectness(context.Background(), o)
	assert.ErrorContains(t, err, "pytest-not-installed")

	o = correctnessOpts(t)
	o.Bundle = filepath.Join(t.TempDir(), "missing.bundle")
	_, err = RunCorrectness(context.Background(), o)
	assert.ErrorContains(t, err, "profile qwen3-vl-2b: the served bundle")
}

// The manifest's bundle name is the one the case looks for.
func TestCorrectnessUsesTheManifestBundleName(t *testing.T) {
	o := correctnessOpts(t)
	o.BundleName = "qwen3-vl-2b-vl.bundle"
	_, err := RunCorrectness(context.Background(), o)
	require.NoError(t, err)
	_, err = os.Lstat(filepath.Join(o.EngineDir, "qwen3-vl-2b-vl.bundle"))
	assert.NoError(t, err)
}

// convertOne writes one result.json and converts it as RunCorrectness
// does, for profile qwen3-vl-2b whose manifest has the given cases.
func convertOne(t *testing.T, doc string, cases ...string) (*CorrectnessResult, CaseResult, []string, error) {
	t.Helper()
	root := t.TempDir()
	p := filepath.Join(root, "qwen3-vl-2b", "result.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(doc), 0o644))
	res := &CorrectnessResult{Metrics: map[string]float64{}, Gates: []Gate{}}
	c, failed, err := convertResult(p, root, res, "qwen3-vl-2b", cases)
	return res, c, failed, err
}

const vlStage = `"full_generation":{"status":"passed","composite_rule":%q,"metrics":{
	"non_empty_output":{"value":1,"threshold":1,"operator":">=","passed":true},
	"normalized_text_edit_distance":{"value":%g,"threshold":0.3,"operator":"<=","passed":%t},
	"token_agreement_rate":{"value":%g,"threshold":0.8,"operator":">=","passed":%t}}}`

func vlResult(rule string, ned float64, ta float64) string {
	return `{"case_name":"qwen3-vl-2b","status":"pass","failure_type":null,"stages":{` +
		fmt.Sprintf(vlStage, rule, ned, ned <= 0.3, ta, ta >= 0.8) + `}}`
}

// TRTMC's results are read closed (issue 25 items 4 to 6): every way a
// result can say pass while something in it does not is a failure naming
// the file and the field, never a green gate.
func TestCorrectnessReadsTRTMCClosed(t *testing.T) {
	good := `{"case_name":"qwen3-vl-2b","status":"pass","failure_type":null,"stages":{"s":{"status":"passed","metrics":{"m":{"value":1,"threshold":0.9,"operator":">=","passed":true}}}}}`
	_, _, failed, err := convertOne(t, good)
	require.NoError(t, err)
	require.Empty(t, failed, "the control: a good result passes")
	for name, tt := range map[string]struct {
		doc   string
		cases []string
		want  string
	}{
		"a stage that failed":           {strings.Replace(good, `"status":"passed"`, `"status":"fail"`, 1), nil, `qwen3-vl-2b/result.json: stages.s.status is "fail", not passed`},
		"a stage that timed out":        {strings.Replace(good, `"status":"passed"`, `"status":"timeout"`, 1), nil, `stages.s.status is "timeout", not passed`},
		"a stage that was skipped":      {strings.Replace(good, `"status":"passed"`, `"status":"skipped"`, 1), nil, `stages.s.status is "skipped", not passed`},
		"a stage without a status":      {strings.Replace(good, `"status":"passed",`, ``, 1), nil, `stages.s.status is "missing", not passed`},
		"an unknown case status":        {strings.Replace(good, `"status":"pass"`, `"status":"passed"`, 1), nil, `status "passed" is not one of TRTMC's (pass, fail, skip, error)`},
		"a failure_type with a pass":    {strings.Replace(good, `"failure_type":null`, `"failure_type":"full_generation"`, 1), nil, `failure_type is "full_generation" although status is pass`},
		"a metric failed, no gate":      {strings.Replace(good, `}}}}}`, `},"u":{"value":0.0,"passed":false}}}}}`, 1), nil, "stages.s.metrics.u says passed: false with no threshold"},
		"another model's case":          {strings.Replace(good, `"case_name":"qwen3-vl-2b"`, `"case_name":"internvl3-2b"`, 1), nil, `case_name "internvl3-2b" is not a case of profile qwen3-vl-2b (its cases: qwen3-vl-2b): another model's result`},
		"a case not of the manifest":    {good, []string{"qwen3-vl-2b-chat"}, `case_name "qwen3-vl-2b" is not a case of profile qwen3-vl-2b (its cases: qwen3-vl-2b-chat)`},
		"no case name":                  {strings.Replace(good, `"case_name":"qwen3-vl-2b",`, ``, 1), nil, "case_name is missing"},
		"no stages":                     {`{"case_name":"qwen3-vl-2b","status":"pass","stages":{}}`, nil, "stages: none"},
		"a composite rule that fails":   {vlResult("non_empty_output AND (normalized_text_edit_distance OR token_agreement_rate)", 0.5, 0.2), nil, `does not hold over the stage's gates`},
		"a rule over a missing gate":    {vlResult("non_empty_output AND (semantic_similarity OR token_agreement_rate)", 0.1, 0.2), nil, "cannot be established: semantic_similarity is not recorded"},
		"a rule the harness can't read": {vlResult("text-only (logits unavailable for seq2seq): ned <= threshold", 0.1, 0.9), nil, "cannot be evaluated"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, failed, err := convertOne(t, tt.doc, tt.cases...)
			require.NoError(t, err, "a failure, not a broken result")
			assert.Contains(t, strings.Join(failed, "\n"), tt.want)
		})
	}
}

// A gate's reference side is carried when the stage records it as TRTMC's
// comparators record a reference-side value, ref_<name> beside the gated
// metric (comparators/segmentation.py: trt_num_detections and
// ref_num_detections), whether as a metric object or a legacy bare
// number; a gate without one has no reference, and a ref_ metric is never
// the reference of itself or of another name.
func TestCorrectnessCarriesTheReferenceSide(t *testing.T) {
	doc := `{"case_name":"qwen3-vl-2b","status":"pass","failure_type":null,"stages":{
 "map":{"status":"passed","metrics":{
   "map_50_95":{"value":0.468307,"threshold":0.448189,"operator":">=","passed":true},
   "ref_map_50_95":{"value":0.468189,"threshold":null,"operator":">=","passed":true},
   "map_50":{"value":0.628337,"threshold":0.606492,"operator":">=","passed":true},
   "ref_map_50":0.626492,
   "num_boxes":{"value":463,"threshold":1,"operator":">=","passed":true}}}}}`
	res, _, failed, err := convertOne(t, doc)
	require.NoError(t, err)
	require.Empty(t, failed)
	ref := func(v float64) *float64 { return &v }
	assert.Equal(t, []Gate{
		{Name: "qwen3-vl-2b/map/map_50", Value: 0.628337, Op: ">=", Threshold: 0.606492, Passed: true, Reference: ref(0.626492)},
		{Name: "qwen3-vl-2b/map/map_50_95", Value: 0.468307, Op: ">=", Threshold: 0.448189, Passed: true, Reference: ref(0.468189)},
		{Name: "qwen3-vl-2b/map/num_boxes", Value: 463, Op: ">=", Threshold: 1, Passed: true},
	}, res.Gates)
	assert.Equal(t, 0.468189, res.Metrics["qwen3-vl-2b/map/ref_map_50_95"], "the reference side stays a metric too")
}

// A composite rule is honoured as TRTMC defines it: a stage passes with a
// thresholded metric that says passed: false when its rule holds over the
// stage's gates. That metric stays a metric, not a gate.
func TestCorrectnessHonoursTheCompositeRule(t *testing.T) {
	res, c, failed, err := convertOne(t, vlResult("non_empty_output AND (normalized_text_edit_distance OR token_agreement_rate)", 0.1, 0.2))
	require.NoError(t, err)
	assert.Empty(t, failed)
	names := []string{}
	for _, g := range res.Gates {
		names = append(names, g.Name)
		assert.True(t, g.Passed)
	}
	assert.ElementsMatch(t, []string{"qwen3-vl-2b/full_generation/non_empty_output", "qwen3-vl-2b/full_generation/normalized_text_edit_distance"}, names)
	assert.Equal(t, 0.2, res.Metrics["qwen3-vl-2b/full_generation/token_agreement_rate"])
	require.Len(t, c.Composite, 1)
	assert.Equal(t, []string{"qwen3-vl-2b/full_generation/token_agreement_rate 0.2 not >= 0.8"}, c.Composite[0].NotNeeded)

	// A gate the rule does not name is TRTMC's comparator's business as
	// well: the stage's status comes from the rule alone (the VL
	// comparator's semantic_similarity), so it is listed, not gated.
	doc := strings.Replace(vlResult("non_empty_output AND (normalized_text_edit_distance OR token_agreement_rate)", 0.1, 0.9),
		`"token_agreement_rate"`, `"semantic_similarity":{"value":0.5,"threshold":0.8,"operator":">=","passed":false},"token_agreement_rate"`, 1)
	res, c, failed, err = convertOne(t, doc)
	require.NoError(t, err)
	assert.Empty(t, failed)
	require.Len(t, c.Composite, 1)
	assert.Equal(t, []string{"qwen3-vl-2b/full_generation/semantic_similarity 0.5 not >= 0.8 (outside the rule)"}, c.Composite[0].NotNeeded)
	assert.Len(t, res.Gates, 3)

	// "all metrics must pass" is the all-pass rule: every gate must hold.
	_, _, failed, err = convertOne(t, vlResult("all metrics must pass", 0.1, 0.2))
	require.NoError(t, err)
	assert.Contains(t, strings.Join(failed, "\n"), "token_agreement_rate 0.2 not >= 0.8")

	// The rule over comparisons ("x >= T") reads each as that metric's gate.
	_, _, failed, err = convertOne(t, vlResult("non_empty_output >= T AND (normalized_text_edit_distance <= T OR token_agreement_rate >= T)", 0.1, 0.2))
	require.NoError(t, err)
	assert.Empty(t, failed)
}

// Through the fake e2e case: a case for another model and a stage that
// timed out make the row failed, naming the field (TRTMC's result said
// pass both times).
func TestCorrectnessForeignResults(t *testing.T) {
	for scenario, want := range map[string]string{
		"other-case":    `case_name "internvl3-2b" is not a case of profile qwen3-vl-2b`,
		"stage-timeout": `stages.full_generation.status is "timeout", not passed`,
		"failure-type":  `failure_type is "full_generation" although status is pass`,
		"unflagged":     "says passed: false with no threshold",
	} {
		t.Run(scenario, func(t *testing.T) {
			o := correctnessOpts(t)
			t.Setenv("FAKE_PYTEST", scenario)
			res, err := RunCorrectness(context.Background(), o)
			var cf *CorrectnessFailed
			require.ErrorAs(t, err, &cf)
			assert.ErrorContains(t, err, want)
			require.NotNil(t, res.Passed)
			assert.False(t, *res.Passed)
		})
	}
}

// Every case of the profile's manifest must have its result.
func TestCorrectnessNeedsEveryCase(t *testing.T) {
	o := correctnessOpts(t)
	o.Cases = []string{"qwen3-vl-2b", "qwen3-vl-2b-ocr"}
	_, err := RunCorrectness(context.Background(), o)
	assert.ErrorContains(t, err, "case qwen3-vl-2b-ocr of profile qwen3-vl-2b wrote no result.json")
}

// newerCheckout turns the options' checkout into TRTMC's newer layout:
// no tests/e2e/models case, the family's qualification profile and/or its
// newer e2e test.
func newerCheckout(t *testing.T, o *CorrectnessOptions, qualify, e2e bool) {
	t.Helper()
	o.Family, o.Layout = "qwen_vl", LayoutAuto
	if qualify {
		p := filepath.Join(o.Dir, "families", "qwen_vl", "tests", "qualification", "qwen3-vl-2b.accuracy.yaml")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("schema_version: trtmc.qualification/v1\nmodel: qwen3-vl-2b\nkind: accuracy\n"), 0o644))
	}
	if e2e {
		p := filepath.Join(o.Dir, "families", "qwen_vl", "tests", "test_e2e.py")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("# fake\n"), 0o644))
	}
}

// The case that exists at the checkout's commit runs: the older layout's
// when its test file is there (the shipped argv), else the newer layout's.
func TestCorrectnessPicksTheLayoutTheCheckoutHolds(t *testing.T) {
	o := correctnessOpts(t)
	o.Family = "qwen_vl"
	p := filepath.Join(o.Dir, "tests", "e2e", "models", "qwen_vl", "test_qwen_vl_e2e.py")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("# fake\n"), 0o644))
	res, err := RunCorrectness(context.Background(), o)
	require.NoError(t, err)
	assert.Equal(t, LayoutE2EResult, res.Layout)

	o = correctnessOpts(t)
	o.Family = "qwen_vl"
	_, err = RunCorrectness(context.Background(), o)
	assert.ErrorContains(t, err, "no correctness case of family qwen_vl exists")
	assert.ErrorContains(t, err, "families/qwen_vl/tests/qualification/qwen3-vl-2b.accuracy.yaml")
}

// The newer layout's family-owned qualification: report.json read closed;
// a report that names no bundle it ran fails closed on that step (the
// public sources do not establish that trtmc-qualify tests an already
// built bundle).
func TestCorrectnessQualifyReport(t *testing.T) {
	run := func(t *testing.T, scenario string) (*CorrectnessResult, error) {
		o := correctnessOpts(t)
		newerCheckout(t, &o, true, false)
		o.QualifyEnvironment = filepath.Join(o.Dir, "env.yaml")
		t.Setenv("FAKE_QUALIFY", scenario)
		t.Setenv("FAKE_QUALIFY_BUNDLE", o.Bundle)
		return RunCorrectness(context.Background(), o)
	}
	t.Run("no bundle named: the served-bundle step is not established", func(t *testing.T) {
		_, err := run(t, "")
		assert.ErrorContains(t, err, "names no bundle it ran (no item has details.bundle_sha256)")
		assert.ErrorContains(t, err, "step: served bundle")
	})
	t.Run("the served bundle named: gates from the metrics", func(t *testing.T) {
		res, err := run(t, "bundle")
		require.NoError(t, err)
		assert.Equal(t, LayoutQualify, res.Layout)
		assert.Equal(t, []Gate{{Name: "public-vqa-100/vqa/answer_accuracy", Value: 0.97, Op: ">=", Threshold: 0.9, Passed: true}}, res.Gates)
		assert.Equal(t, []string{"trtmc-qualify", "run", "--kind", "accuracy", "--model", "qwen3-vl-2b"}, res.Argv[:6])
	})
	t.Run("another model's report", func(t *testing.T) {
		_, err := run(t, "other-model")
		var cf *CorrectnessFailed
		require.ErrorAs(t, err, &cf)
		assert.ErrorContains(t, err, `items[0].model is "internvl3-2b", not the profile qwen3-vl-2b`)
	})
	t.Run("a failed gate", func(t *testing.T) {
		_, err := run(t, "fail")
		var cf *CorrectnessFailed
		require.ErrorAs(t, err, &cf)
		assert.ErrorContains(t, err, "answer_accuracy 0.5 not >= 0.9")
	})
	t.Run("no environment file", func(t *testing.T) {
		o := correctnessOpts(t)
		newerCheckout(t, &o, true, false)
		_, err := RunCorrectness(context.Background(), o)
		assert.ErrorContains(t, err, "needs a qualification environment file")
	})
}

// The newer layout's e2e test builds its own bundle and asserts without
// recording values: it runs, and the adapter says which steps the sources
// leave unestablished — never a result the row could qualify on.
func TestCorrectnessNewerE2EFailsClosed(t *testing.T) {
	for name, tt := range map[string]struct {
		scenario string
		env      bool
		want     []string
	}{
		"its inputs unset":    {"", false, []string{"reads TRTMC_BINARY, TRTMC_RUNTIME_ROOT, TRTMC_QWEN_VL_MODEL_DIR, which are not set", "step: inputs"}},
		"its own bundle":      {"", true, []string{"passed (pytest exit 0)", "step: metrics", "it built its own bundle (sha256", "step: served bundle"}},
		"a byte-equal bundle": {"same-bundle", true, []string{"the bundle it built is byte for byte the served one", "step: metrics"}},
		"it fails":            {"fail", true, []string{"failed (pytest exit 1)"}},
	} {
		t.Run(name, func(t *testing.T) {
			o := correctnessOpts(t)
			newerCheckout(t, &o, false, true)
			if tt.env {
				o.TRTMCBinary, o.RuntimeRoot, o.ModelDir = "trtmc", t.TempDir(), t.TempDir()
			}
			t.Setenv("FAKE_PYTEST", tt.scenario)
			t.Setenv("FAKE_E2E_BUNDLE", o.Bundle)
			_, err := RunCorrectness(context.Background(), o)
			require.Error(t, err)
			var cf *CorrectnessFailed
			assert.NotErrorAs(t, err, &cf, "no result at all")
			for _, w := range tt.want {
				assert.ErrorContains(t, err, w)
			}
			_, statErr := os.Stat(o.Out)
			assert.True(t, os.IsNotExist(statErr))
		})
	}
}

// A newer family whose tests validate a prebuilt bundle (text families:
// TRTMC_E2E_BUNDLE, TRTMC_E2E_PROFILE, TRTMC_E2E_CHECKPOINT_REVISION,
// idx@6aa3968c) is given the served bundle that way: the served-bundle
// step is then established (it built none of its own), and it still fails
// closed on its metrics; without a pinned revision it cannot be run on the
// served bundle at all (step: inputs); a revision other than the
// manifest's fails the test.
func TestCorrectnessNewerE2EOnThePrebuiltBundle(t *testing.T) {
	const rev = "89644892aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	setup := func(t *testing.T, revision string) CorrectnessOptions {
		o := correctnessOpts(t)
		newerCheckout(t, &o, false, true)
		dir := filepath.Join(o.Dir, "families", "qwen_vl", "tests")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "test_prebuilt_validation.py"), []byte("# reads TRTMC_E2E_BUNDLE\n"), 0o644))
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "manifests"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "manifests", "qwen3-vl-2b.json"),
			[]byte(`{"name":"qwen3-vl-2b","hf_revision":"`+rev+`","testcases":[{"name":"qwen3-vl-2b"}]}`), 0o644))
		o.TRTMCBinary, o.RuntimeRoot, o.ModelDir, o.Revision = "trtmc", t.TempDir(), t.TempDir(), revision
		return o
	}
	o := setup(t, rev)
	_, err := RunCorrectness(context.Background(), o)
	require.Error(t, err)
	assert.ErrorContains(t, err, "passed on the served bundle (given as TRTMC_E2E_BUNDLE, with TRTMC_E2E_PROFILE and TRTMC_E2E_CHECKPOINT_REVISION "+rev+")")
	assert.ErrorContains(t, err, "step: metrics")
	assert.NotContains(t, err.Error(), "step: served bundle")
	entries, _ := os.ReadDir(filepath.Join(o.ArtifactsDir, "basetemp"))
	assert.Empty(t, entries, "it built no bundle of its own")

	o = setup(t, "")
	_, err = RunCorrectness(context.Background(), o)
	assert.ErrorContains(t, err, "the inventory pins no revision for the profile")
	assert.ErrorContains(t, err, "step: inputs")

	o = setup(t, strings.Repeat("b", 40))
	_, err = RunCorrectness(context.Background(), o)
	assert.ErrorContains(t, err, "failed (pytest exit 1)")
	_, statErr := os.Stat(o.Out)
	assert.True(t, os.IsNotExist(statErr), "never a result the row qualifies on")
}

// TestReadMetric: one metric of a stage, read closed.
func TestReadMetric(t *testing.T) {
	for _, tc := range []struct {
		raw          string
		gated, holds bool
		legacy       bool
		value        float64
		err          string
	}{
		{raw: `0.93`, legacy: true, value: 0.93},
		{raw: `{"value": 0.93}`, value: 0.93},
		{raw: `{"value": 0.93, "threshold": 0.9, "operator": ">=", "passed": true}`, gated: true, holds: true, value: 0.93},
		{raw: `{"value": 0.8, "threshold": 0.9, "operator": ">=", "passed": false}`, gated: true, value: 0.8},
		{raw: `{"value": 0.8, "threshold": 0.9, "operator": ">=", "passed": true}`, err: "TRTMC says passed=true but 0.8 >= 0.9 is false"},
		{raw: `{"value": 0.8, "threshold": 0.9, "operator": "~", "passed": true}`, err: `unknown operator "~"`},
		{raw: `{"value": 0.8, "threshold": 0.9, "operator": ">="}`, err: "without its outcome"},
		{raw: `{"threshold": 0.9}`, err: "value missing"},
		{raw: `"high"`, err: "not a metric"},
	} {
		sm, legacy, err := readMetric("r.json: stages.s.metrics.m", json.RawMessage(tc.raw))
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.raw)
			assert.ErrorContains(t, err, "r.json: stages.s.metrics.m", "the error names the field")
			continue
		}
		require.NoError(t, err, tc.raw)
		assert.Equal(t, tc.legacy, legacy, tc.raw)
		assert.Equal(t, tc.value, sm.value, tc.raw)
		assert.Equal(t, tc.gated, sm.gated, tc.raw)
		assert.Equal(t, tc.holds, sm.holds, tc.raw)
	}
}
