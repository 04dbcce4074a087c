package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/server"
)

func testDeps(env map[string]string) (deps, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	return deps{
		In: strings.NewReader(""), Out: &out, ErrOut: &errOut,
		Getenv:        func(k string) string { return env[k] },
		Exit:          func(int) {},
		IgnoreSignals: func(...os.Signal) {},
	}, &out, &errOut
}

func writeBundle(t *testing.T) string {
	t.Helper()
	b, err := bundle.New(bundle.FamilyDetect, bundle.PrecisionFP32, 1)
	require.NoError(t, err)
	data, err := b.Encode()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "b.bundle")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

func TestServeConfigResolution(t *testing.T) {
	t.Parallel()
	path := writeBundle(t)
	opts := serveOptions{
		Bundle: path, ModelName: "m", Host: "::1", Port: 0, Records: "r.jsonl",
		QueueSize: 2, ShutdownGraceMs: 1500, MaxBodyBytes: 10, Fault: "slow-ms=5",
	}
	d, _, _ := testDeps(map[string]string{envAPIKey: "from-env", envFault: "drop-record-every=2"})
	cfg, err := opts.config(d)
	require.NoError(t, err)
	assert.Equal(t, "from-env", cfg.APIKey)
	assert.Equal(t, server.Faults{SlowMs: 5, DropRecordEvery: 2}, cfg.Faults, "faults from the flag and the environment combine")
	assert.Equal(t, 1500*time.Millisecond, cfg.ShutdownGrace)
	assert.Equal(t, bundle.FamilyDetect, cfg.Bundle.Family)
	assert.Len(t, cfg.Bundle.SHA256, 64)

	opts.APIKey = "from-flag"
	cfg, err = opts.config(d)
	require.NoError(t, err)
	assert.Equal(t, "from-flag", cfg.APIKey, "the flag wins over the environment")

	d, _, _ = testDeps(map[string]string{envFault: "nonsense"})
	_, err = opts.config(d)
	assert.ErrorContains(t, err, `unknown fault "nonsense"`)
}

func TestServeUsageErrorsAreJSONLogLines(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"serve"},
		{"serve", writeBundle(t), "--bogus"},
		{"serve", writeBundle(t), "--model-name", "m"},
	} {
		d, _, errOut := testDeps(nil)
		code := run(context.Background(), args, d)
		assert.Equal(t, exitUsage, code, args)
		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		require.Len(t, lines, 1, errOut.String())
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &ev), lines[0])
		assert.Equal(t, "startup_failed", ev["event"])
		assert.Equal(t, "error", ev["level"])
	}
}

func TestVerbsInProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, out, _ := testDeps(nil)
	require.Equal(t, exitOK, run(context.Background(), []string{"make-bundle", "--family", "ref-vlm", "--out", filepath.Join(dir, "v.bundle")}, d))
	assert.Len(t, strings.TrimSpace(out.String()), 64)

	d, _, errOut := testDeps(nil)
	require.Equal(t, exitOK, run(context.Background(), []string{"corpus", "--family", "ref-vlm", "--out", filepath.Join(dir, "c"), "--count", "7"}, d), errOut.String())
	d, _, errOut = testDeps(nil)
	require.Equal(t, exitOK, run(context.Background(), []string{"check", "--bundle", filepath.Join(dir, "v.bundle"), "--corpus", filepath.Join(dir, "c"), "--out", filepath.Join(dir, "r.json")}, d), errOut.String())
	assert.Contains(t, errOut.String(), "check passed")

	d, _, errOut = testDeps(nil)
	assert.Equal(t, exitUsage, run(context.Background(), []string{"corpus", "--family", "ref-vlm", "--out", dir, "--count", "0"}, d))
	assert.Contains(t, errOut.String(), "--count must be at least 1")
	d, _, _ = testDeps(nil)
	assert.Equal(t, exitUsage, run(context.Background(), []string{"native", "--bundle", "x"}, d))
}
