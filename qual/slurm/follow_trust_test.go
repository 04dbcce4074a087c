package slurm

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// No green row from a reused Slurm job id (issue 25, item 3): a second
// cluster on the same evidence root numbers its jobs from the same start,
// so its task 100_0 meets the first cluster's row of 100_0. That task fails
// before writing anything: the row it finds is not its own (another
// submission's nonce), so it is set aside and the task's row is an error.
func TestReusedJobIDNeverAdoptsAForeignRow(t *testing.T) {
	fx := newFixture(t)
	fx.opts.Only = []string{"small"}
	_, err := fx.run(context.Background())
	require.NoError(t, err, fx.log.String())
	first := fx.row("small")
	require.Equal(t, verdict.VerdictQualified, first.Verdict)
	require.Equal(t, "100_0", first.Provenance.Slurm.JobID)

	// A second cluster (or a reset slurmctld), numbering from 100 again.
	fx.newCluster()
	fx.slurm.scripts["small"] = []step{{State: "RUNNING", Node: "node1"},
		{State: "FAILED", Reason: "NonZeroExitCode", Exit: "1:0", Node: "node1"}}
	out, err := fx.run(context.Background())
	require.NoError(t, err, fx.log.String())
	r := fx.row("small")
	assert.Equal(t, verdict.VerdictError, r.Verdict, "Slurm says FAILED and the row there is someone else's")
	assert.Equal(t, out.Results[0].Verdict, r.Verdict)
	require.NotEmpty(t, r.Reasons)
	assert.Equal(t, CodeTaskEnded, r.Reasons[0].Code)
	assert.Contains(t, r.Reasons[0].Message, "of another submission")
	assert.NotContains(t, fx.log.String(), "-> qualified")
	aside, err := filepath.Glob(filepath.Join(fx.out, "mixed", "small.*"))
	require.NoError(t, err)
	assert.Len(t, aside, 1, "the first cluster's row is set aside, never reused")
}

// --resume adopts only the jobs of its own submissions (item 3): the
// earlier record names job 100, but on this cluster job 100 is somebody
// else's, running. It is not adopted; the profile is submitted afresh.
func TestResumeNeverAdoptsAForeignJob(t *testing.T) {
	fx := newFixture(t)
	fx.opts.Only = []string{"small"}
	fx.ex.Detach = true
	_, err := fx.run(context.Background())
	require.NoError(t, err)

	fx.newCluster()
	// Someone else's array 100 (another comment, or none) runs there now.
	foreign := filepath.Join(t.TempDir(), "foreign.sh")
	require.NoError(t, os.WriteFile(foreign, []byte("ids=(small)\n"), 0o755))
	fx.slurm.scripts["small"] = []step{{State: "RUNNING", Node: "node1"}}
	fx.slurm.submit([]string{"--comment=trtmc-qual:0123456789abcdef0123456789abcdef", foreign})
	delete(fx.slurm.scripts, "small")

	fx.ex.Detach = false
	fx.opts.Resume = true
	_, err = fx.run(context.Background())
	require.NoError(t, err, fx.log.String())
	assert.NotContains(t, fx.log.String(), "adopting")
	calls := fx.slurm.sbatchCalls()
	require.Len(t, calls, 1, "the profile is submitted afresh")
	r := fx.row("small")
	assert.Equal(t, verdict.VerdictQualified, r.Verdict)
	assert.Equal(t, "101_0", r.Provenance.Slurm.JobID)
}

// status and the driver read a finished task's row through the one loader
// (item 2): a row whose evidence was changed after its task sealed it is
// not the task's own, whatever Slurm says, and status agrees with report.
func TestStatusAndDriverNeverTrustARowWithoutItsSeal(t *testing.T) {
	for _, attached := range []bool{false, true} {
		name := "status"
		if attached {
			name = "driver"
		}
		t.Run(name, func(t *testing.T) {
			fx := newFixture(t)
			fx.opts.Only = []string{"small"}
			tamper := func() {
				// The task's evidence, sealed with its row, then changed.
				dir := filepath.Join(fx.out, "mixed", "small")
				require.NoError(t, os.MkdirAll(filepath.Join(dir, "aiperf"), 0o755))
				for _, f := range []string{"native_answers.jsonl", "joined.jsonl", "aiperf/profile_export.jsonl"} {
					require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(`{"request_id":"r1"}`+"\n"+`{"request_id":"r2"}`+"\n"), 0o644))
				}
				fx.slurm.writeRow("small", verdict.VerdictQualified, "100_0")
				require.NoError(t, os.Remove(filepath.Join(dir, "native_answers.jsonl")))
				require.NoError(t, os.Remove(filepath.Join(dir, "joined.jsonl")))
				require.NoError(t, os.Truncate(filepath.Join(dir, "aiperf", "profile_export.jsonl"), 7))
			}
			fx.slurm.scripts["small"] = []step{{State: "RUNNING", Node: "node1"}, {State: "COMPLETED", Exit: "0:0", Node: "node1"}}
			var rows []*verdict.Result
			if attached {
				fx.slurm.onShow = func(n int) {
					if n == 2 {
						tamper()
					}
				}
				out, err := fx.run(context.Background())
				require.NoError(t, err)
				rows = out.Results
			} else {
				fx.ex.Detach = true
				_, err := fx.run(context.Background())
				require.NoError(t, err)
				gs, err := Status(context.Background(), StatusOptions{Runner: fx.slurm, Out: fx.out, Group: "mixed", RowExits: runRowExits})
				require.NoError(t, err)
				require.False(t, gs.Done)
				tamper()
				gs, err = Status(context.Background(), StatusOptions{Runner: fx.slurm, Out: fx.out, Group: "mixed", RowExits: runRowExits})
				require.NoError(t, err)
				require.True(t, gs.Done)
				for _, ts := range gs.Tasks {
					rows = append(rows, ts.Row)
				}
			}
			require.Len(t, rows, 1)
			assert.Equal(t, verdict.VerdictError, rows[0].Verdict, "COMPLETED, but its evidence no longer holds its seal")
			assert.Equal(t, CodeTaskEnded, rows[0].Reasons[0].Code)
			assert.Contains(t, rows[0].Reasons[0].Message, "left no row that can be trusted (evidence_changed")
			rep, err := reports.Load([]string{fx.out}, "mixed")
			require.NoError(t, err)
			for _, row := range rep.Rows {
				if row.Profile == "small" {
					assert.Equal(t, verdict.VerdictError, row.Verdict, "report agrees")
				}
			}
			aside, err := filepath.Glob(filepath.Join(fx.out, "mixed", "small.*"))
			require.NoError(t, err)
			assert.Len(t, aside, 1, "the changed evidence is kept aside")
		})
	}
}

// Ctrl-C while every task of the array is still queued (item 16): the
// driver cancels each task by its id, and Slurm then keeps the array as one
// record with ArrayTaskId=4294967294 naming no task. The rows say not-run,
// never started, not slurm_task_lost.
func TestInterruptWhileEveryTaskIsPendingGivesNotRun(t *testing.T) {
	fx := newFixture(t)
	fx.opts.Only = []string{"small", "small-fp16"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, p := range fx.opts.Only {
		fx.slurm.scripts[p] = []step{{State: "PENDING", Reason: "Resources"}}
	}
	fx.slurm.onShow = func(n int) {
		if n == 3 {
			cancel()
		}
	}
	_, err := fx.run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, fx.slurm.cancels, 1)
	for _, p := range fx.opts.Only {
		r := fx.row(p)
		assert.Equal(t, verdict.VerdictNotRun, r.Verdict, p)
		require.NotEmpty(t, r.Reasons)
		assert.Equal(t, CodeNotStarted, r.Reasons[0].Code, p)
		assert.Contains(t, r.Reasons[0].Message, "never started: CANCELLED", p)
	}
	assert.NotContains(t, fx.log.String(), CodeLost)
}

func TestParseShowJobCancelledPendingArray(t *testing.T) {
	// Measured on slurm-wlm 22.05.8 (scripts/slurm-local.sh): scancel of
	// every task of a pending array by its id.
	out := "JobId=4 ArrayJobId=4 ArrayTaskId=4294967294 JobName=wrap UserId=root(0) JobState=CANCELLED Reason=None Dependency=(null) " +
		"ExitCode=0:0 RunTime=00:00:00 NodeList= Command=(null) WorkDir=/tmp Comment=trtmc-qual:x  StdErr=/tmp/y_4_4294967294.out\n"
	st, err := ParseShowJob(out, "4")
	require.NoError(t, err)
	require.Len(t, st, 1)
	assert.Equal(t, restIndex, st[0].Index, "a record for the tasks without one of their own, not task 4294967294")
	assert.Equal(t, "CANCELLED", st[0].State)
	assert.False(t, st[0].Started())
	assert.Equal(t, "trtmc-qual:x", st[0].Comment)
}

// newCluster replaces the fixture's fake cluster by a fresh one that
// numbers its jobs from the same start, on the same evidence root.
func (fx *fixture) newCluster() {
	fx.slurm = newFakeSlurm(fx.t, fx.out, "mixed")
	fx.opts.Runner, fx.ex.Runner = fx.slurm, fx.slurm
	fx.ex.Wait = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	fx.log.mu.Lock()
	fx.log.b.Reset()
	fx.log.mu.Unlock()
}

// Every read of the Slurm bookkeeping has a cap (issue 25): a job record
// that is a FIFO or a link to /dev/zero is refused at once (exit 2), and a
// task log of any size costs its last 64 KiB.
func TestSlurmBookkeepingReadsAreCapped(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(path string) error
	}{
		{"a FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"a link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(out, ".slurm", "mixed"), 0o755))
			require.NoError(t, c.make(filepath.Join(out, ".slurm", "mixed", "job.json")))
			done := make(chan error, 1)
			go func() { _, err := ReadRecord(out, "mixed"); done <- err }()
			select {
			case err := <-done:
				var re *RecordError
				require.ErrorAs(t, err, &re)
				assert.Contains(t, err.Error(), "job.json")
			case <-time.After(10 * time.Second):
				t.Fatal("ReadRecord hangs")
			}
		})
	}
	// A 4 GiB task log (sparse) with its last lines at the end.
	log := filepath.Join(t.TempDir(), "1_0.out")
	f, err := os.Create(log)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(4<<30))
	_, err = f.WriteAt([]byte("\nlast words\n"), 4<<30)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	tail, err := logTail(log, logTailBytes)
	require.NoError(t, err)
	assert.Len(t, tail, logTailBytes)
	assert.Equal(t, "    last words", lastLogLines(tail, 1))

	// A directory no valid group name names holds no submission.
	out := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(out, ".slurm", "evil\u202e"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, ".slurm", "evil\u202e", "job.json"), []byte("{}"), 0o644))
	groups, err := RecordedGroups(out)
	require.NoError(t, err)
	assert.Empty(t, groups)
}
