package trtmc

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
	"github.com/trtmc-qual/trtmc-qual/qual/proc"
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
