//go:build integration

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// usernsEnv marks a test binary re-executed in a user and mount namespace.
const usernsEnv = "TRTMC_RELIABILITY_USERNS"

// canMount makes sure the test can mount a tmpfs: as root it can; otherwise
// it re-runs this one test in a new user and mount namespace (where it is
// root) and reports that run's outcome, returning false so the caller stops.
// Without namespaces the test is skipped, or fails under CI=true.
func canMount(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() == 0 {
		return true
	}
	if os.Getenv(usernsEnv) != "" {
		t.Fatalf("in a user namespace but not root (euid %d)", os.Geteuid())
	}
	unshare, err := exec.LookPath("unshare")
	if err == nil {
		err = exec.Command(unshare, "--user", "--map-root-user", "--mount", "true").Run()
	}
	if err != nil {
		msg := "mounting a tmpfs needs root or unprivileged user namespaces (unshare): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cmd := exec.Command(unshare, "--user", "--map-root-user", "--mount", os.Args[0],
		"-test.run", "^"+t.Name()+"$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), usernsEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in a user namespace:\n%s", out)
	require.NoError(t, err)
	require.Contains(t, string(out), "--- PASS: "+t.Name())
	return false
}

// mountTmpfs mounts a tmpfs on dir with the given options (size=..., ro).
func mountTmpfs(t *testing.T, dir, opts string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput()
	require.NoError(t, err, "mount: %s", out)
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
}

func remount(t *testing.T, dir, opts string) {
	t.Helper()
	out, err := exec.Command("mount", "-o", "remount,"+opts, dir).CombinedOutput()
	require.NoError(t, err, "remount: %s", out)
}

// TestReadOnlyOutput: the evidence root is on a read-only file system (with
// an earlier run's evidence on it). The run stops before any checkpoint as
// a harness I/O error (exit 4), names the cause, starts no server, and the
// earlier evidence is untouched.
func TestReadOnlyOutput(t *testing.T) {
	h := getHarness(t)
	if !canMount(t) {
		return
	}
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	mountTmpfs(t, out, "size=8m")
	earlier := seedEarlierRun(t, out)
	remount(t, out, "ro")
	o := h.run(t, scenario{out: out}, 2*time.Minute)
	assert.Equal(t, 4, o.code)
	assert.Contains(t, o.stderr, "read-only file system")
	assert.Contains(t, o.stderr, "trtmc-qual: I/O error, evidence could not be written", "not reported as a bug")
	assert.NotContains(t, o.stderr, "stage server", "no checkpoint started")
	assertNoOrphans(t, o)
	assert.Equal(t, earlier, treeContents(t, out), "earlier evidence untouched")
}

// TestDiskFullThenResume: the evidence file system fills up while AIPerf
// runs. Whatever could not be written is missing, never torn: no partial
// result, manifest or table, no temporary file left; the run says why
// (no space left on device) and exits as a harness I/O error (4); no child
// survives. Once space is freed, `--resume` sets the broken checkpoint
// aside and finishes it.
func TestDiskFullThenResume(t *testing.T) {
	h := getHarness(t)
	if !canMount(t) {
		return
	}
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	mountTmpfs(t, out, "size=4m")
	filler := filepath.Join(out, "filler")
	o := h.run(t, scenario{out: out, fault: "slow-ms=100",
		during: func(t *testing.T, p *running) {
			// Mid-run: 5 of 55 requests served, each taking 100 ms.
			waitLines(t, filepath.Join(out, "detection", "ref-detect-small", "server_records.jsonl"), 5, 2*time.Minute)
			fill(t, filler)
		}}, 3*time.Minute)
	assert.Equal(t, 4, o.code, "a file system that cannot take the evidence is a harness I/O error")
	assert.Contains(t, o.stderr, "no space left on device")
	assert.Contains(t, o.stderr, "trtmc-qual: I/O error, evidence could not be written", "not reported as a bug")
	assert.NotContains(t, o.stderr, "killed by broken pipe", "a child never dies because its log could not be written")
	assertNoOrphans(t, o)
	assertEvidenceSound(t, out, false)
	dir := filepath.Join(out, "detection", "ref-detect-small")
	if _, err := os.Stat(filepath.Join(dir, reports.ResultFile)); err == nil {
		r := o.result(t, "detection", "ref-detect-small")
		assert.Equal(t, verdict.VerdictError, r.Verdict, "a row that lost evidence is never green")
	}

	require.NoError(t, os.Remove(filler))
	before := treeContents(t, dir)
	o2 := h.run(t, scenario{out: out, args: []string{"--resume"}}, 3*time.Minute)
	assert.Equal(t, 0, o2.code)
	assertNoOrphans(t, o2)
	assertEvidenceSound(t, out, false)
	r := o2.result(t, "detection", "ref-detect-small")
	assert.Equal(t, verdict.VerdictQualified, r.Verdict, "reasons: %+v", r.Reasons)
	assert.Equal(t, 55, r.Requests.Matched)
	assertSetAside(t, out, dir, before)
}

// fill writes path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			require.True(t, errors.Is(err, syscall.ENOSPC), "filling: %v", err)
			return
		}
	}
}
