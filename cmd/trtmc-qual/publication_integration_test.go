//go:build integration

package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// shortTemp is a fresh directory for TMPDIR with a short path (a run's
// temporary directory must leave room for AIPerf's socket paths).
func shortTemp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "tq")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// exitedPID is the id of a process that ran and is gone.
func exitedPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	return p.Pid
}

// TestChildrenTempFilesStayInTheRun (issue 32): AIPerf's memory-mapped
// copy of the corpus (aiperf_mmap_*/dataset.dat) and every other
// temporary file of the run's children go to the run's own private
// directory (mode 0700) inside TMPDIR, never to TMPDIR itself, and
// nothing is left when the run ends; a directory a killed run left is
// removed, anything else in TMPDIR is left alone.
func TestChildrenTempFilesStayInTheRun(t *testing.T) {
	h := getHarness(t)
	t.Parallel()
	tmp := shortTemp(t)
	stale := filepath.Join(tmp, "tq-run-"+strconv.Itoa(exitedPID(t))+"-1")
	require.NoError(t, os.MkdirAll(filepath.Join(stale, "1", "aiperf_mmap_x"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(stale, "1", "aiperf_mmap_x", "dataset.dat"), []byte("corpus"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(tmp, "someone-else"), 0o755))

	var sawMmap bool
	var outside []string
	sc := scenario{env: []string{"TMPDIR=" + tmp}}
	sc.during = func(t *testing.T, p *running) {
		deadline := time.Now().Add(2 * time.Minute)
		ended := func() bool {
			e := p.stderrString()
			return strings.Contains(e, "ref-detect-small: QUALIFIED") || strings.Contains(e, "ref-detect-small: ERROR") ||
				strings.Contains(e, "ref-detect-small: FAILED")
		}
		for time.Now().Before(deadline) && !ended() {
			_ = filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
				if err != nil || path == tmp {
					return nil
				}
				rel, _ := filepath.Rel(tmp, path)
				top, _, _ := strings.Cut(rel, string(filepath.Separator))
				switch {
				case top == "someone-else" || top == filepath.Base(stale):
				case strings.HasPrefix(top, "tq-run-"+strconv.Itoa(p.cmd.Process.Pid)+"-"):
					if rel == top {
						if info, err := d.Info(); err == nil && info.Mode().Perm() != 0o700 {
							outside = append(outside, rel+" is "+info.Mode().String())
						}
					}
					sawMmap = sawMmap || strings.HasPrefix(d.Name(), "aiperf_mmap_")
				default:
					outside = append(outside, rel)
				}
				return nil
			})
			time.Sleep(20 * time.Millisecond)
		}
	}
	o := h.run(t, sc, 3*time.Minute)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, verdict.VerdictQualified, o.result(t, "detection", "ref-detect-small").Verdict)
	assert.True(t, sawMmap, "AIPerf's memory-mapped dataset was seen in the run's directory")
	assert.Empty(t, outside, "a child wrote into TMPDIR itself, or the run's directory is not private")
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	assert.Equal(t, []string{"someone-else"}, left, "the run's directory and the stale one are gone; nothing else touched")
	assertNoOrphans(t, o)
}

// TestHangupAndQuitStopARunLikeCtrlC (issue 32 item 15): SIGHUP (the
// terminal closed, the ssh session lost) and SIGQUIT during AIPerf stop
// the run as SIGINT and SIGTERM do: exit 130, an interrupted row, the
// redaction pass (the serve token the correctness case printed is
// redacted), no child left, nothing left in TMPDIR.
func TestHangupAndQuitStopARunLikeCtrlC(t *testing.T) {
	h := getHarness(t)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			tmp := shortTemp(t)
			token := randomSecret(t, "serve-token-")
			sc := scenario{
				fault: "hang-after=10",
				env:   []string{"TMPDIR=" + tmp, "TRTMC_SERVE_TOKEN=" + token, "TRTMC_QUAL_SECRETS=TRTMC_SERVE_TOKEN"},
				families: func(d doc) {
					setTimeout(d, "ref-detect", "stop", "2s")
					f := family(d, "ref-detect")
					f["correctness"] = append([]any{filepath.Join(h.fakes, "fake-check"), "env-then", "--"}, f["correctness"].([]any)...)
				},
			}
			sc.during = func(t *testing.T, p *running) {
				p.waitLine(t, "aiperf: profiling", 2*time.Minute)
				time.Sleep(5 * time.Second)
				p.signal(t, sig)
			}
			o := h.run(t, sc, 3*time.Minute)
			assert.Equal(t, 130, o.code, "exit status")
			assert.Empty(t, o.signal, "trtmc-qual handled the signal")
			assert.Contains(t, o.stderr, "interrupted, stopping servers and AIPerf")
			assertNoOrphans(t, o)
			assertEvidenceSound(t, o.out, false)
			r := o.result(t, "detection", "ref-detect-small")
			assert.Equal(t, verdict.VerdictInterrupted, r.Verdict)
			assert.Equal(t, "aiperf", reasonWith(t, r, verdict.CodeInterrupted).Stage)
			log, err := os.ReadFile(filepath.Join(o.out, "detection", "ref-detect-small", "correctness.log"))
			require.NoError(t, err)
			assert.Contains(t, string(log), "TRTMC_SERVE_TOKEN=[REDACTED]", "the redaction pass ran")
			require.NoError(t, filepath.WalkDir(o.out, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					data, rerr := os.ReadFile(p)
					require.NoError(t, rerr)
					assert.False(t, bytes.Contains(data, []byte(token)), "%s holds the token", p)
				}
				return err
			}))
			entries, err := os.ReadDir(tmp)
			require.NoError(t, err)
			assert.Empty(t, entries, "the run's temporary directory is gone")
		})
	}
}
