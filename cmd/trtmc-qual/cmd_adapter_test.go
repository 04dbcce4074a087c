package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
)

// A 1x1 PNG.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"

// The adapter verbs map their outcomes onto the exit-code table: a worker
// that dies is a failed check (1), a missing program a setup error (3), a
// bad flag a usage error (2); the correctness case passes (0) or fails (1).
func TestAdapterExitCodes(t *testing.T) {
	inst := trtmctest.OnPath(t)
	d := t.TempDir()
	bundle := filepath.Join(d, "m.bundle")
	require.NoError(t, os.WriteFile(bundle, []byte("b"), 0o644))
	_, err := base64.StdEncoding.DecodeString(onePixelPNG)
	require.NoError(t, err)
	in := filepath.Join(d, "in.jsonl")
	line := `{"request_id":"r1","route":"/v1/infer","payload":{"input":[{"type":"image_url","url":"data:image/png;base64,` + onePixelPNG + `"}]}}` + "\n"
	require.NoError(t, os.WriteFile(in, []byte(line), 0o644))
	native := func(extra ...string) []string {
		return append([]string{"adapter", "native", "--task", "detect", "--worker-op", "detect", "--bundle", bundle,
			"--requests", in, "--out", filepath.Join(d, "out.jsonl"), "--meta", filepath.Join(d, "meta.json")}, extra...)
	}

	code, _, stderr := runCLI(t, nil, native()...)
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "1 request(s): 1 answered, 0 error line(s); path worker, timing scope public_task_call_wall")

	t.Setenv("FAKE_WORKER", "crash:r1")
	code, _, stderr = runCLI(t, nil, native()...)
	assert.Equal(t, exitFailed, code, stderr)
	assert.Contains(t, stderr, "native worker exited with status 134 during r1")
	t.Setenv("FAKE_WORKER", "")

	// No native worker, or the console script named as one: setup errors.
	code, _, stderr = runCLI(t, nil, native("--worker-binary", filepath.Join(d, "trtmc-server-missing"))...)
	assert.Equal(t, exitSetup, code, stderr)
	assert.Contains(t, stderr, "--worker-binary")
	code, _, stderr = runCLI(t, nil, native("--worker-binary", inst.ConsoleScript)...)
	assert.Equal(t, exitSetup, code, stderr)
	assert.Contains(t, stderr, "is a script")
	t.Setenv("FAKE_TRTMC_SITE_PACKAGES", "") // the TRTMC interpreter lacks the package
	code, _, stderr = runCLI(t, map[string]string{"TRTMC_REPO": d}, native()...)
	assert.Equal(t, exitSetup, code, stderr)
	assert.Contains(t, stderr, "the native worker (the native trtmc-server binary, not the console script on PATH) was not found")
	t.Setenv("FAKE_TRTMC_SITE_PACKAGES", inst.SitePackages)
	// The old --trtmc-server flag is gone: the worker is never the program
	// named trtmc-server on PATH.
	code, _, _ = runCLI(t, nil, native("--trtmc-server", "trtmc-server")...)
	assert.Equal(t, exitUsage, code)

	code, _, _ = runCLI(t, nil, native("--task", "segment")...)
	assert.Equal(t, exitUsage, code)
	code, _, _ = runCLI(t, nil, "adapter", "native", "--task", "chat")
	assert.Equal(t, exitUsage, code)

	corr := func(dir string) []string {
		return []string{"adapter", "correctness", "--profile", "m", "--bundle", bundle, "--engine-dir", filepath.Join(dir, "e"),
			"--artifacts-dir", filepath.Join(dir, "a"), "--out", filepath.Join(dir, "c.json"), "--",
			"pytest", "t.py", "--e2e-model", "m", "--engine-dir", filepath.Join(dir, "e"), "--e2e-artifacts-dir", filepath.Join(dir, "a")}
	}
	env := map[string]string{"TRTMC_REPO": d}
	code, _, stderr = runCLI(t, env, corr(t.TempDir())...)
	assert.Equal(t, exitOK, code, stderr)
	t.Setenv("FAKE_PYTEST", "fail")
	code, _, stderr = runCLI(t, env, corr(t.TempDir())...)
	assert.Equal(t, exitFailed, code, stderr)
	t.Setenv("FAKE_PYTEST", "no-metrics")
	code, _, stderr = runCLI(t, env, corr(t.TempDir())...)
	assert.Equal(t, exitFailed, code, stderr)
	assert.Contains(t, stderr, "profile m: correctness output without metrics")
	code, _, stderr = runCLI(t, nil, corr(t.TempDir())...)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "pass --repo or set TRTMC_REPO")

	// bundle: present → its sha256 on stdout; missing → 1, naming the profile.
	code, stdout, _ := runCLI(t, nil, "adapter", "bundle", "--profile", "m", "--bundle", bundle)
	assert.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "  "+bundle)
	code, _, stderr = runCLI(t, nil, "adapter", "bundle", "--profile", "m", "--bundle", filepath.Join(d, "none.bundle"))
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "profile m: bundle")
}
