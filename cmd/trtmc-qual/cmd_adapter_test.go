package main

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra"
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

// withAdapterVerb runs `trtmc-qual adapter ARGS` with one adapter verb
// (built by mk with a capturing runF) in place of the real one.
func withAdapterVerb(t *testing.T, env map[string]string, mk func(*factory) *cobra.Command, args ...string) (exitCode, string) {
	t.Helper()
	io, _, errOut := testIO()
	f := newFactory(io, nil)
	f.Getenv = func(k string) string { return env[k] }
	root := newRootCmd(f)
	adapter := mustFind(t, root.Commands(), "adapter")
	verb := mk(f)
	adapter.RemoveCommand(mustFind(t, adapter.Commands(), verb.Name()))
	adapter.AddCommand(verb)
	return executeTree(context.Background(), f, root, append([]string{"adapter"}, args...)), errOut.String()
}

// TestAdapterFlagsReachOptions: the adapter verbs parse their flags (and
// the environment defaults) into their options, captured through runF.
func TestAdapterFlagsReachOptions(t *testing.T) {
	var n *adapterNativeOptions
	native := func(f *factory) *cobra.Command {
		return newAdapterNativeCmd(f, func(o *adapterNativeOptions) error { n = o; return nil })
	}
	code, errOut := withAdapterVerb(t, nil, native, "native", "--task", "chat", "--bundle", "b", "--requests", "in", "--out", "out",
		"--worker-arg", "--kv", "--worker-arg", "4", "--startup-timeout", "2m", "--max-new-tokens", "64", "--score-threshold", "0.25")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "chat", n.Task)
	assert.Equal(t, "worker", n.Path, "the default path")
	assert.Equal(t, []string{"--kv", "4"}, n.WorkerArgs)
	assert.Equal(t, 2*time.Minute, n.Startup)
	assert.Equal(t, 64, n.MaxNewTokens)
	assert.True(t, n.ScoreThresholdGiven)
	assert.InDelta(t, 0.25, n.ScoreThreshold, 0)
	_, _ = withAdapterVerb(t, nil, native, "native", "--task", "detect", "--bundle", "b", "--requests", "in", "--out", "out")
	assert.False(t, n.ScoreThresholdGiven, "unset: the Task's own default")

	var c *adapterCorrectnessOptions
	corr := func(f *factory) *cobra.Command {
		return newAdapterCorrectnessCmd(f, func(o *adapterCorrectnessOptions) error { c = o; return nil })
	}
	code, errOut = withAdapterVerb(t, map[string]string{"TRTMC_REPO": "/src/trtmc"}, corr, "correctness", "--profile", "p", "--bundle", "b",
		"--engine-dir", "e", "--artifacts-dir", "a", "--out", "o", "--", "pytest", "t.py")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "/src/trtmc", c.Repo, "TRTMC_REPO when --repo is not given")
	assert.Equal(t, []string{"pytest", "t.py"}, c.Command)
	assert.Equal(t, 0, c.DashAt)

	var b *adapterBundleOptions
	bundle := func(f *factory) *cobra.Command {
		return newAdapterBundleCmd(f, func(o *adapterBundleOptions) error { b = o; return nil })
	}
	env := map[string]string{"TRTMC_BUNDLE_DIR": "/a::/b", "TRTMC_REPO": "/src/trtmc"}
	code, errOut = withAdapterVerb(t, env, bundle, "bundle", "--profile", "p", "--bundle", "x.bundle")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, []string{"/a", "/b"}, b.Search, "TRTMC_BUNDLE_DIR's directories")
	assert.Equal(t, "/src/trtmc", b.Repo)
	assert.Equal(t, "HEAD", b.Ref)
	code, errOut = withAdapterVerb(t, env, bundle, "bundle", "--profile", "p", "--bundle", "x.bundle", "--search", "/c", "--repo", "/r")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, []string{"/c"}, b.Search, "--search replaces the environment's")
	assert.Equal(t, "/r", b.Repo)
}

// TestAdapterValidate: the adapter verbs' checks, on the options alone.
func TestAdapterValidate(t *testing.T) {
	native := func() *adapterNativeOptions {
		return &adapterNativeOptions{Task: "detect", Bundle: "b", In: "in", Out: "out", Path: "worker", WorkerImage: "image_path"}
	}
	require.NoError(t, native().Validate())
	for want, edit := range map[string]func(*adapterNativeOptions){
		"--bundle is required":                   func(o *adapterNativeOptions) { o.Bundle = "" },
		`--task must be chat or detect, got "x"`: func(o *adapterNativeOptions) { o.Task = "x" },
		`--path must be worker or cli`:           func(o *adapterNativeOptions) { o.Path = "grpc" },
		`--worker-image must be image_path or`:   func(o *adapterNativeOptions) { o.WorkerImage = "url" },
	} {
		o := native()
		edit(o)
		err := o.Validate()
		assert.Equal(t, exitUsage, codeFor(err), want)
		assert.ErrorContains(t, err, want)
	}

	corr := func() *adapterCorrectnessOptions {
		return &adapterCorrectnessOptions{Profile: "p", Bundle: "b", EngineDir: "e", Artifacts: "a", Out: "o", Repo: "/r",
			Command: []string{"pytest"}, DashAt: 0}
	}
	require.NoError(t, corr().Validate())
	for _, tt := range []struct {
		name, want string
		edit       func(*adapterCorrectnessOptions)
	}{
		{"a required flag", "--engine-dir is required", func(o *adapterCorrectnessOptions) { o.EngineDir = "" }},
		{"no --", "give the e2e command after --", func(o *adapterCorrectnessOptions) { o.DashAt = -1 }},
		{"nothing after --", "give the e2e command after --", func(o *adapterCorrectnessOptions) { o.Command = nil }},
		{"no checkout", "pass --repo or set TRTMC_REPO", func(o *adapterCorrectnessOptions) { o.Repo = "" }},
	} {
		o := corr()
		tt.edit(o)
		err := o.Validate()
		assert.Equal(t, exitUsage, codeFor(err), tt.name)
		assert.ErrorContains(t, err, tt.want, tt.name)
	}

	err := (&adapterBundleOptions{Profile: "p"}).Validate()
	assert.Equal(t, exitUsage, codeFor(err))
	assert.ErrorContains(t, err, "--profile and --bundle are required")
}
