//go:build integration

package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCISmokeRunsThePipeline wires `ci --smoke` to the real run pipeline:
// the reference vlm group through real AIPerf and trtmc-refserver.
func TestCISmokeRunsThePipeline(t *testing.T) {
	// The shared harness: AIPerf (CI=true fails rather than skips without
	// it) and binaries built for this test binary, never a stale bin/.
	h := getHarness(t)
	root, aiperf, bin := h.root, h.aiperf, h.binDir
	fx := newSpecsFixture(t)
	out := t.TempDir()
	junit := filepath.Join(out, "junit.xml")
	// Bundles and corpora go under the test's own directory.
	inv := filepath.Join(out, "inventory.yaml")
	data, err := os.ReadFile(filepath.Join(root, "inventory", "reference.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(inv, data, 0o644))

	io, _, errOut := testIO()
	f := newFactory(io, nil)
	f.Getenv = func(string) string { return "" }
	f.Smoke = smokeRun(f)
	cmd := newRootCmd(f)
	cmd.SetArgs([]string{"ci", "--repo", fx.Repo, "--base", "main", "--group", "vlm", "--smoke", "--junit", junit,
		"--inventory", inv, "--families", filepath.Join(root, "families", "families.yaml"),
		"--aiperf", aiperf, "--tokenizer", h.tokenizer, "--bin-dir", bin,
		"--config", filepath.Join(out, "none.yaml")})
	require.NoError(t, os.WriteFile(filepath.Join(out, "none.yaml"), []byte("out: "+out+"\n"), 0o644))
	err = cmd.ExecuteContext(context.Background())
	// The reference profiles are not TRTMC manifests, so reconcile needs
	// action (exit 1); the smoke step itself must pass.
	assert.Equal(t, exitFailed, codeFor(err), errOut.String())
	_, states := readJUnit(t, junit)
	assert.Equal(t, "passed", states["smoke-vlm"], errOut.String())
	assert.FileExists(t, filepath.Join(out, "ci-smoke", "vlm", "ref-vlm-small", "result.json"))
	// Every JSON file the real run wrote matches its shipped schema.
	_, per := validateEvidenceCount(t, loadSchemas(t), filepath.Join(out, "ci-smoke"))
	for _, name := range []string{"result", "manifest", "correctness", "joined", "mismatches", "dataset",
		"aiperf-argv", "native-requests", "native-answers", "group-report", "inventory-profiles", "lock"} {
		assert.Positive(t, per[name], "the run wrote a %s document (%v)", name, per)
	}
}
