//go:build integration

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// TestCtrlCInEachStage sends SIGINT (what Ctrl-C delivers to trtmc-qual;
// its children are in process groups of their own, out of the terminal's
// reach) while each stage is running. Every stage is held open by a slow
// child so the signal lands inside it. The row is interrupted, its reason
// names the stage, the exit status is 130, the children are stopped and
// gone, and the evidence written so far is sound.
func TestCtrlCInEachStage(t *testing.T) {
	h := getHarness(t)
	sleeper := func(field string) func(d doc) {
		return func(d doc) { family(d, "ref-detect")[field] = []any{"sleep", "300"} }
	}
	cases := []struct {
		stage      string
		sc         func(t *testing.T) scenario
		waitFor    string
		after      time.Duration
		stageState string // the interrupted stage's recorded status
	}{
		{"preflight", func(t *testing.T) scenario {
			missing := filepath.Join(t.TempDir(), "corpus")
			return scenario{
				families:  func(d doc) { family(d, "ref-detect")["prepare"].(doc)["corpus"] = []any{"sleep", "300"} },
				inventory: func(d doc) { group(d, "detection")["workload"].(doc)["dataset"].(doc)["corpus"] = missing },
			}
		}, "prepare-corpus: sleep 300", 200 * time.Millisecond, "interrupted"},
		{"server", func(t *testing.T) scenario {
			return scenario{fault: "startup-delay=300"}
		}, "stage server", 300 * time.Millisecond, "interrupted"},
		{"correctness", func(t *testing.T) scenario {
			// Two checkpoints on one slot: the second never starts.
			return scenario{families: sleeper("correctness"), only: []string{"ref-detect-small", "ref-detect-small-fp16"}}
		}, "stage correctness", 200 * time.Millisecond, "interrupted"},
		{"aiperf", func(t *testing.T) scenario {
			// The server hangs on request 11, so AIPerf is surely mid-run.
			return scenario{fault: "hang-after=10", families: func(d doc) { setTimeout(d, "ref-detect", "stop", "2s") }}
		}, "aiperf: profiling", 5 * time.Second, "interrupted"},
		{"stop-server", func(t *testing.T) scenario {
			// The server ignores SIGTERM: the stop waits out its grace period.
			return scenario{fault: "ignore-sigterm", families: func(d doc) { setTimeout(d, "ref-detect", "stop", "3s") }}
		}, "stage stop-server", 200 * time.Millisecond, "ok"},
		{"native", func(t *testing.T) scenario {
			return scenario{families: sleeper("native")}
		}, "stage native", 200 * time.Millisecond, "interrupted"},
	}
	for _, c := range cases {
		t.Run(c.stage, func(t *testing.T) {
			t.Parallel()
			sc := c.sc(t)
			var sent time.Time
			sc.during = func(t *testing.T, p *running) {
				p.waitLine(t, c.waitFor, 2*time.Minute)
				time.Sleep(c.after)
				sent = time.Now()
				p.signal(t, syscall.SIGINT)
			}
			o := h.run(t, sc, 3*time.Minute)
			assert.Equal(t, 130, o.code, "exit status")
			assert.Less(t, time.Since(sent), 30*time.Second, "trtmc-qual stopped promptly")
			assert.Contains(t, o.stderr, "interrupted, stopping servers and AIPerf (Ctrl-C again to force)")
			assertNoOrphans(t, o)
			assertEvidenceSound(t, o.out, false)
			assertPublishable(t, o)
			r := o.result(t, "detection", "ref-detect-small")
			assert.Equal(t, verdict.VerdictInterrupted, r.Verdict)
			rs := reasonWith(t, r, "interrupted")
			assert.Equal(t, c.stage, rs.Stage, "the reason names the stage that was running")
			assert.Equal(t, c.stageState, stageStatus(r, c.stage), "stages: %+v", r.Stages)
			for _, other := range r.Reasons {
				assert.Equal(t, verdict.CodeInterrupted, other.Code, "an interruption is not reported as a broken stage: %+v", other)
			}
			assert.FileExists(t, filepath.Join(o.out, "detection", "results.md"), "the group tables show the interrupted row")
			if len(sc.only) == 2 {
				r2 := o.result(t, "detection", "ref-detect-small-fp16")
				assert.Equal(t, verdict.VerdictInterrupted, r2.Verdict, "an unstarted checkpoint gets an interrupted row too")
				assert.Equal(t, "schedule", reasonWith(t, r2, "interrupted").Stage)
				assert.Empty(t, r2.Stages, "nothing ran for it")
			}
		})
	}
}

// TestSecondCtrlC: after the first SIGINT trtmc-qual stops its children
// gracefully; a second one ends it at once, the default way. Its children
// must not survive it (the server and AIPerf die with it: parent-death
// signal), nothing torn is left, and a resumed run finishes the checkpoint.
func TestSecondCtrlC(t *testing.T) {
	h := getHarness(t)
	cases := []struct {
		name    string
		fault   string
		waitFor string
		first   time.Duration // after waitFor
		second  time.Duration // after the first
	}{
		// The server ignores SIGTERM and gets a long grace period, so the
		// second signal lands while trtmc-qual waits for it to stop.
		{"while-stopping-the-server", "ignore-sigterm", "stage stop-server", 200 * time.Millisecond, 1500 * time.Millisecond},
		// The server hangs on request 11, so AIPerf is mid-run at the first
		// signal and still stopping at the second.
		{"while-aiperf-stops", "ignore-sigterm,hang-after=10", "aiperf: profiling", 4 * time.Second, 300 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out")
			var second time.Time
			o := h.run(t, scenario{out: out, fault: c.fault,
				families: func(d doc) { setTimeout(d, "ref-detect", "stop", "60s") },
				during: func(t *testing.T, p *running) {
					p.waitLine(t, c.waitFor, 2*time.Minute)
					time.Sleep(c.first)
					p.signal(t, syscall.SIGINT)
					p.waitLine(t, "Ctrl-C again to force", 10*time.Second)
					time.Sleep(c.second)
					second = time.Now()
					p.signal(t, syscall.SIGINT)
				}}, 3*time.Minute)
			assert.Equal(t, "interrupt", o.signal, "the second Ctrl-C ends trtmc-qual the default way (exit %d)", o.code)
			assert.Less(t, time.Since(second), 10*time.Second, "it did not wait for the server's grace period")
			assertNoOrphans(t, o)
			assertEvidenceSound(t, o.out, true)
			dir := filepath.Join(out, "detection", "ref-detect-small")
			if _, err := os.Stat(filepath.Join(dir, reports.ResultFile)); err == nil {
				r := o.result(t, "detection", "ref-detect-small")
				assert.NotEqual(t, verdict.VerdictQualified, r.Verdict)
			}

			// A resumed run sets the torn checkpoint aside and finishes it.
			before := treeContents(t, dir)
			o2 := h.run(t, scenario{out: out, args: []string{"--resume"}}, 3*time.Minute)
			assert.Equal(t, 0, o2.code)
			assertNoOrphans(t, o2)
			assertEvidenceSound(t, out, true)
			r := o2.result(t, "detection", "ref-detect-small")
			assert.Equal(t, verdict.VerdictQualified, r.Verdict, "reasons: %+v", r.Reasons)
			assert.Equal(t, 55, r.Requests.Matched)
			assertSetAside(t, out, dir, before)
		})
	}
}

// TestKill9ThenResume kills trtmc-qual with SIGKILL while the second of two
// checkpoints is being measured. No child survives it; the first
// checkpoint's finished evidence is intact; `--resume` skips it (same run
// key), sets the torn second one aside untouched, and finishes it.
func TestKill9ThenResume(t *testing.T) {
	h := getHarness(t)
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	both := []string{"ref-detect-small", "ref-detect-small-fp16"}
	o := h.run(t, scenario{out: out, only: both, fault: "slow-ms=50",
		during: func(t *testing.T, p *running) {
			p.waitLine(t, "ref-detect-small: QUALIFIED", 2*time.Minute)
			// Mid-run for sure: 10 of 55 requests served, each taking 50 ms.
			waitLines(t, filepath.Join(out, "detection", "ref-detect-small-fp16", "server_records.jsonl"), 10, 2*time.Minute)
			p.signal(t, syscall.SIGKILL)
		}}, 3*time.Minute)
	require.Equal(t, "killed", o.signal)
	assertNoOrphans(t, o)
	assertEvidenceSound(t, out, true)
	first := o.result(t, "detection", "ref-detect-small")
	assert.Equal(t, verdict.VerdictQualified, first.Verdict)
	firstDir := filepath.Join(out, "detection", "ref-detect-small")
	firstBefore := treeContents(t, firstDir)
	secondDir := filepath.Join(out, "detection", "ref-detect-small-fp16")
	assert.NoFileExists(t, filepath.Join(secondDir, reports.ResultFile), "a killed checkpoint has no result")
	secondBefore := treeContents(t, secondDir)

	o2 := h.run(t, scenario{out: out, only: both, fault: "slow-ms=50", args: []string{"--resume"}}, 3*time.Minute)
	assert.Equal(t, 0, o2.code)
	assertNoOrphans(t, o2)
	assertEvidenceSound(t, out, true)
	assert.Contains(t, o2.stderr, "ref-detect-small: resume: finished result with the same run key (qualified), skipping")
	assert.Equal(t, firstBefore, treeContents(t, firstDir), "the finished checkpoint is untouched by the resumed run")
	second := o2.result(t, "detection", "ref-detect-small-fp16")
	assert.Equal(t, verdict.VerdictQualified, second.Verdict, "reasons: %+v", second.Reasons)
	assert.Equal(t, 55, second.Requests.Matched)
	assertSetAside(t, out, secondDir, secondBefore)
	rep, err := reports.Load([]string{out}, "detection")
	require.NoError(t, err)
	var rows []string
	for _, r := range rep.Rows {
		rows = append(rows, r.Profile+"="+r.Verdict)
	}
	assert.ElementsMatch(t, []string{"ref-detect-small=qualified", "ref-detect-small-fp16=qualified"}, rows)
}

// assertSetAside checks that exactly one directory <dir>.<timestamp> holds
// the earlier contents of dir, byte for byte.
func assertSetAside(t *testing.T, out, dir string, before map[string]string) {
	t.Helper()
	matches, err := filepath.Glob(dir + ".*T*Z")
	require.NoError(t, err)
	require.Len(t, matches, 1, "one set-aside copy of %s", dir)
	moved := map[string]string{}
	for p, data := range treeContents(t, matches[0]) {
		moved[strings.Replace(p, matches[0], dir, 1)] = data
	}
	assert.Equal(t, before, moved, "the set-aside evidence is the earlier run's, untouched")
}

// waitLines waits until the file has at least n lines.
func waitLines(t *testing.T, path string, n int, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if data, err := os.ReadFile(path); err == nil && strings.Count(string(data), "\n") >= n {
			return
		}
	}
	t.Fatalf("%s never reached %d lines", path, n)
}
