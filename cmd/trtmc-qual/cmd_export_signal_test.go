package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
)

// bigLogRoot is a publishable evidence root (publishableRoot: export
// re-derives every row before it stages anything) whose ref-detect-small
// row holds a server.log large enough for an export with --logs full to
// take a while, sealed again.
func bigLogRoot(t *testing.T) string {
	t.Helper()
	root := publishableRoot(t, "ref-detect-small")
	dir := filepath.Join(root, "detection", "ref-detect-small")
	f, err := os.Create(filepath.Join(dir, "server.log"))
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	for i := 0; i < 600_000; i++ {
		_, err := w.WriteString("request " + strconv.Itoa(i) + " answered TOKEN=abc123def456ghi in 12.5 ms by worker 3 on queue 0\n")
		require.NoError(t, err)
	}
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	m, mf := evidence.ReadManifest(dir)
	require.Nil(t, mf)
	require.NoError(t, evidence.Seal(dir, m.Info))
	return root
}

// stagingOf waits until the export process pid has staged something in
// tmp and returns its staging directory.
func stagingOf(t *testing.T, tmp string, pid int) string {
	t.Helper()
	prefix := "trtmc-qual-export-" + strconv.Itoa(pid) + "-"
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		entries, _ := os.ReadDir(tmp)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) {
				dir := filepath.Join(tmp, e.Name())
				if sub, _ := os.ReadDir(dir); len(sub) > 0 {
					return dir
				}
			}
		}
	}
	t.Fatalf("export %d staged nothing in %s", pid, tmp)
	return ""
}

// Issue 32 item 11: an export stopped by SIGHUP (a closed terminal) leaves
// nothing — no staging, no archive, no pack — and exits 130; one killed
// with SIGKILL leaves its private staging directory, which the next export
// removes. Staging never happens beside the pack.
func TestExportStoppedBySignalLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes over a large log")
	}
	root := bigLogRoot(t)
	tmp, pub := t.TempDir(), t.TempDir()
	start := func(pack string, extra ...string) *exec.Cmd {
		cmd := cliProcess(append([]string{"export", "--from", root, "--group", "detection", "--output-file", filepath.Join(pub, pack)}, extra...)...)
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
		require.NoError(t, cmd.Start())
		return cmd
	}

	cmd := start("hup.tar.gz", "--logs", "full")
	stagingOf(t, tmp, cmd.Process.Pid)
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 130, ee.ExitCode(), "handled as an interrupt")
	entries, _ := os.ReadDir(tmp)
	assert.Empty(t, entries, "no staging left")
	entries, _ = os.ReadDir(pub)
	assert.Empty(t, entries, "no pack, no archive beside it")

	cmd = start("kill.tar.gz", "--logs", "full")
	staging := stagingOf(t, tmp, cmd.Process.Pid)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	assert.DirExists(t, staging, "SIGKILL cannot be handled")

	cmd = start("next.tar.gz")
	require.NoError(t, cmd.Wait(), "the next export (logs left out) succeeds")
	assert.NoDirExists(t, staging, "and removes what the killed one left")
	entries, _ = os.ReadDir(tmp)
	assert.Empty(t, entries)
	entries, _ = os.ReadDir(pub)
	require.Len(t, entries, 1)
	assert.Equal(t, "next.tar.gz", entries[0].Name())
}
