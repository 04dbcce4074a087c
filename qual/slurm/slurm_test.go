package slurm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

func TestRunSubmitsOneArrayPerRequestAndKeepsTheTasksRows(t *testing.T) {
	fx := newFixture(t)
	out, err := fx.run(context.Background())
	require.NoError(t, err, fx.log.String())

	// Profiles asking the same (1 GPU, h200) share an array; the tp=2 one
	// whose scopes are h200 or gb300 is a second array.
	calls := fx.slurm.sbatchCalls()
	require.Len(t, calls, 2)
	first := calls[0]
	for _, want := range []string{"--parsable", "--job-name=trtmc-qual-mixed", "--array=0-1", "--gres=gpu:1",
		"--partition=gpu", "--account=qual", "--cpus-per-task=8", "--constraint=h200", "--qos=high", "--open-mode=append"} {
		assert.Contains(t, first, want)
	}
	assert.Contains(t, first, "--output="+filepath.Join(fx.out, ".slurm", "mixed", "logs", "%A_%a.out"))
	// Time limit from the family's timeouts: 2x5m prepare + 60s + 120s + 600s + 10s + 120s + 5m slack.
	assert.Contains(t, first, "--time=31")
	assert.Contains(t, calls[1], "--gres=gpu:2")
	assert.Contains(t, calls[1], "--constraint=gb300|h200")
	assert.Contains(t, calls[1], "--array=0-0")
	assert.Equal(t, []string{"small", "small-fp16"}, scriptIDs(t, first[len(first)-1]))

	// Every task's own row stands; the excluded profile is written by the
	// driver, never submitted.
	require.Len(t, out.Results, 4)
	for _, r := range out.Results {
		want := verdict.VerdictQualified
		if r.Profile == "l0" {
			want = verdict.VerdictExcluded
		}
		assert.Equal(t, want, r.Verdict, r.Profile)
	}
	assert.Equal(t, "100_1", fx.row("small-fp16").Provenance.Slurm.JobID)

	// The record names every task; the group tables are written.
	rec, err := ReadRecord(fx.out, "mixed")
	require.NoError(t, err)
	require.NotNil(t, rec)
	require.Len(t, rec.Submission, 32, "a 128-bit nonce")
	n := rec.Submission
	assert.Equal(t, []TaskRef{{Profile: "small", ArrayJobID: "100", Index: 0, Submission: n}, {Profile: "small-fp16", ArrayJobID: "100", Index: 1, Submission: n},
		{Profile: "big-tp2", ArrayJobID: "101", Index: 0, Submission: n}}, rec.Tasks)
	assert.Contains(t, first, "--comment=trtmc-qual:"+n, "Slurm carries the nonce, so a reused job id is told apart")
	assert.Contains(t, readFile(t, first[len(first)-1]), "export TRTMC_QUAL_SLURM_SUBMISSION="+n+"\n", "and so does every task")
	assert.Equal(t, n, fx.row("small").Provenance.Slurm.Submission)
	assert.Equal(t, []string{"100", "101"}, fx.ex.JobIDs)
	assert.FileExists(t, filepath.Join(fx.out, "mixed", "results.json"))
	rep, err := reports.Load([]string{fx.out}, "mixed")
	require.NoError(t, err)
	assert.True(t, rep.Coverage.OK, rep.Coverage.Summary)

	// One progress line per state change: PENDING, RUNNING, then the end.
	log := fx.log.String()
	assert.Equal(t, 3, strings.Count(log, "slurm 100_0 small:"), log)
	assert.Contains(t, log, "slurm 100_0 small: RUNNING on node1")
	assert.Contains(t, log, "slurm 100_0 small: COMPLETED (exit code 0:0) on node1 -> qualified")
}

// Every way a task can end other than as a run ends gives a row that is
// not qualified and names the Slurm job, its state and reason — even when
// the row the task left says qualified.
func TestTaskFaultsNeverLeaveAGreenRow(t *testing.T) {
	run := func(s ...step) []step { return append([]step{{State: "RUNNING", Node: "node2"}}, s...) }
	cases := []struct {
		name    string
		steps   []step
		verdict string
		code    verdict.Code
		mention []string
	}{
		{"timeout with a qualified row", run(step{State: "TIMEOUT", Reason: "TimeLimit", Exit: "0:15", Node: "node2", Row: verdict.VerdictQualified}),
			verdict.VerdictError, CodeTaskEnded, []string{"100_0", "TIMEOUT", "TimeLimit", "0:15", "node2", "its row (qualified) cannot stand"}},
		{"preempted", run(step{State: "PREEMPTED", Exit: "0:15", Node: "node2"}),
			verdict.VerdictError, CodeTaskEnded, []string{"PREEMPTED", "left no row of its own"}},
		{"node failure with a qualified row", run(step{State: "NODE_FAIL", Reason: "NodeDown", Exit: "0:0", Node: "node2", Row: verdict.VerdictQualified}),
			verdict.VerdictError, CodeTaskEnded, []string{"NODE_FAIL", "NodeDown"}},
		{"cancelled by someone else", run(step{State: "CANCELLED", Exit: "0:15", Node: "node2", Row: verdict.VerdictInterrupted}),
			verdict.VerdictError, CodeTaskEnded, []string{"CANCELLED", "its row (interrupted)"}},
		{"killed", run(step{State: "FAILED", Reason: "JobLaunchFailure", Exit: "0:9", Node: "node2"}),
			verdict.VerdictError, CodeTaskEnded, []string{"JobLaunchFailure", "0:9"}},
		{"out of memory", run(step{State: "OUT_OF_MEMORY", Exit: "0:125", Node: "node2"}),
			verdict.VerdictError, CodeTaskEnded, []string{"OUT_OF_MEMORY"}},
		{"exit 3 without a row (trtmc-qual missing on the node)", run(step{State: "FAILED", Reason: "NonZeroExitCode", Exit: "3:0", Node: "node2"}),
			verdict.VerdictError, CodeTaskEnded, []string{"NonZeroExitCode", "3:0", "left no row"}},
		{"harness error (exit 4) with a qualified row", run(step{State: "FAILED", Reason: "NonZeroExitCode", Exit: "4:0", Node: "node2", Row: verdict.VerdictQualified}),
			verdict.VerdictError, CodeTaskEnded, []string{"4:0"}},
		{"completed but the row is another job's", run(step{State: "COMPLETED", Exit: "0:0", Node: "node2", Row: verdict.VerdictQualified, RowJob: "7_0"}),
			verdict.VerdictError, CodeTaskEnded, []string{"COMPLETED", "left no row of its own"}},
		{"completed without a row", run(step{State: "COMPLETED", Exit: "0:0", Node: "node2"}),
			verdict.VerdictError, CodeTaskEnded, []string{"COMPLETED", "left no row"}},
		{"never started", []step{{State: "PENDING", Reason: "Resources"}, {State: "CANCELLED", Reason: "Resources", Exit: "0:0"}},
			verdict.VerdictNotRun, CodeNotStarted, []string{"100_0 never started", "CANCELLED"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.opts.Only = []string{"small"}
			fx.slurm.scripts["small"] = c.steps
			out, err := fx.run(context.Background())
			require.NoError(t, err)
			require.Len(t, out.Results, 1)
			r := fx.row("small")
			assert.Equal(t, c.verdict, r.Verdict)
			assert.Equal(t, out.Results[0].Verdict, r.Verdict, "the outcome and the stored row agree")
			require.NotEmpty(t, r.Reasons)
			assert.Equal(t, StageSlurm, r.Reasons[0].Stage)
			assert.Equal(t, c.code, r.Reasons[0].Code)
			for _, m := range c.mention {
				assert.Contains(t, r.Reasons[0].Message, m)
			}
			require.NotNil(t, r.Provenance.Slurm)
			assert.Equal(t, "100_0", r.Provenance.Slurm.JobID)
			assert.Equal(t, c.steps[len(c.steps)-1].State, r.Provenance.Slurm.State)
			rep, err := reports.Load([]string{fx.out}, "mixed")
			require.NoError(t, err)
			assert.False(t, rep.Coverage.OK)
			for _, row := range rep.Rows {
				if row.Profile == "small" {
					assert.NotEqual(t, reports.StatusQualified, row.Status)
				}
			}
		})
	}
}

// A task that ends as a run ends keeps its row, whatever its verdict.
func TestRowsOfRunsThatEndedStand(t *testing.T) {
	for _, c := range []struct {
		exit, verdict string
	}{{"1:0", verdict.VerdictFailed}, {"3:0", verdict.VerdictError}} {
		fx := newFixture(t)
		fx.opts.Only = []string{"small"}
		fx.slurm.scripts["small"] = []step{{State: "RUNNING", Node: "node1"},
			{State: "FAILED", Reason: "NonZeroExitCode", Exit: c.exit, Node: "node1", Row: c.verdict}}
		_, err := fx.run(context.Background())
		require.NoError(t, err)
		r := fx.row("small")
		assert.Equal(t, c.verdict, r.Verdict, "exit %s", c.exit)
		for _, reason := range r.Reasons {
			assert.NotEqual(t, StageSlurm, reason.Stage)
		}
	}
	// Told no status (a caller that wires none), a FAILED task's row never
	// stands: it fails closed.
	fx := newFixture(t)
	fx.ex.RowExits = nil
	fx.opts.Only = []string{"small"}
	fx.slurm.scripts["small"] = []step{{State: "FAILED", Reason: "NonZeroExitCode", Exit: "1:0", Node: "node1", Row: verdict.VerdictFailed}}
	_, err := fx.run(context.Background())
	require.NoError(t, err)
	r := fx.row("small")
	assert.Equal(t, verdict.VerdictError, r.Verdict)
	require.NotEmpty(t, r.Reasons)
	assert.Equal(t, CodeTaskEnded, r.Reasons[0].Code)
}

// An earlier run's row in the directory of a task that left none is set
// aside, never overwritten, and never passes for this run's.
func TestEarlierRowIsSetAsideNotReused(t *testing.T) {
	fx := newFixture(t)
	fx.opts.Only = []string{"small"}
	fx.slurm.writeRow("small", verdict.VerdictQualified, "7_0")
	fx.slurm.scripts["small"] = []step{{State: "RUNNING", Node: "node1"}, {State: "COMPLETED", Exit: "0:0", Node: "node1"}}
	_, err := fx.run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, verdict.VerdictError, fx.row("small").Verdict)
	aside, err := filepath.Glob(filepath.Join(fx.out, "mixed", "small.*"))
	require.NoError(t, err)
	require.Len(t, aside, 1, "the earlier row is set aside")
	assert.Contains(t, readFile(t, filepath.Join(aside[0], "result.json")), `"job_id": "7_0"`)
}

func TestTasksSlurmForgetsAreSettledFromTheirRows(t *testing.T) {
	fx := newFixture(t)
	fx.opts.Only = []string{"small", "small-fp16"}
	fx.slurm.purge = true
	// small writes its row and completes; small-fp16 dies without one. The
	// array is purged before the driver saw either end.
	fx.slurm.scripts["small"] = []step{{State: "COMPLETED", Exit: "0:0", Node: "node1", Row: verdict.VerdictQualified}}
	fx.slurm.scripts["small-fp16"] = []step{{State: "FAILED", Exit: "0:9", Node: "node1"}}
	fx.slurm.onShow = func(n int) {
		if n == 1 {
			// The first poll (the driver's) finds the array gone already.
			fx.slurm.mu.Lock()
			for _, a := range fx.slurm.arrays {
				for _, tk := range a.tasks {
					tk.pos = len(tk.steps) - 1
					tk.cur = tk.steps[tk.pos]
					if tk.cur.Row != "" {
						fx.slurm.mu.Unlock()
						fx.slurm.writeRow(tk.profile, tk.cur.Row, TaskID(a.id, tk.index))
						fx.slurm.mu.Lock()
					}
				}
				a.purged = true
			}
			fx.slurm.mu.Unlock()
		}
	}
	_, err := fx.run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, verdict.VerdictQualified, fx.row("small").Verdict)
	lost := fx.row("small-fp16")
	assert.Equal(t, verdict.VerdictError, lost.Verdict)
	assert.Equal(t, CodeLost, lost.Reasons[0].Code)
	assert.Contains(t, lost.Reasons[0].Message, "100_1")
}

func TestInterruptCancelsEveryUnfinishedTask(t *testing.T) {
	fx := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// small runs, small-fp16 waits, big-tp2 finishes; then Ctrl-C.
	fx.slurm.scripts["small"] = []step{{State: "RUNNING", Node: "node1"}}
	fx.slurm.scripts["small-fp16"] = []step{{State: "PENDING", Reason: "Resources"}}
	fx.slurm.scripts["big-tp2"] = okSteps(verdict.VerdictQualified)[1:]
	fx.slurm.onShow = func(n int) {
		if n == 5 { // after two polls of both arrays
			cancel()
		}
	}
	out, err := fx.run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, fx.slurm.cancels, 1)
	assert.ElementsMatch(t, []string{"100_0", "100_1"}, fx.slurm.cancels[0], "only the unfinished tasks are cancelled")
	assert.Equal(t, verdict.VerdictInterrupted, fx.row("small").Verdict)
	assert.Contains(t, fx.row("small").Reasons[0].Message, "cancelled Slurm job 100_0")
	assert.Equal(t, verdict.VerdictNotRun, fx.row("small-fp16").Verdict)
	assert.Equal(t, verdict.VerdictQualified, fx.row("big-tp2").Verdict)
	assert.Len(t, out.Results, 4)
	assert.FileExists(t, filepath.Join(fx.out, "mixed", "results.md"), "the tables are written on interruption too")
}

func TestRejectedSubmissionIsASetupErrorWithSlurmsMessage(t *testing.T) {
	fx := newFixture(t)
	// The first array is accepted, the second rejected: the first is cancelled.
	fx.slurm.reject[2] = "sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification"
	_, err := fx.run(context.Background())
	var se *qual.SetupError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "Invalid generic resource (gres) specification")
	assert.Contains(t, err.Error(), "big-tp2")
	require.Len(t, fx.slurm.cancels, 1)
	assert.Equal(t, []string{"100"}, fx.slurm.cancels[0])
	_, statErr := os.Stat(recordPath(fx.out, "mixed"))
	assert.True(t, errors.Is(statErr, os.ErrNotExist), "nothing to follow is recorded")
}

// Ctrl-C while submitting: the job Slurm accepted is cancelled, not lost,
// and nothing is left recorded to follow.
func TestInterruptDuringSubmission(t *testing.T) {
	fx := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fx.slurm.onSubmit = func(n int) {
		if n == 1 {
			cancel() // the signal arrives while sbatch runs; Slurm accepts the job
		}
	}
	_, err := fx.run(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, fx.slurm.sbatchCalls(), 1, "no second array after the interruption")
	require.Len(t, fx.slurm.cancels, 1)
	assert.Equal(t, []string{"100"}, fx.slurm.cancels[0])
	_, statErr := os.Stat(recordPath(fx.out, "mixed"))
	assert.True(t, errors.Is(statErr, os.ErrNotExist))
}

func TestASecondSubmissionOverALiveOneIsRefused(t *testing.T) {
	fx := newFixture(t)
	fx.ex.Detach = true
	fx.slurm.scripts["small"] = []step{{State: "RUNNING", Node: "node1"}}
	_, err := fx.run(context.Background())
	require.NoError(t, err)
	fx.ex.Detach = false
	_, err = fx.run(context.Background())
	var ae *ActiveError
	require.ErrorAs(t, err, &ae)
	assert.Contains(t, ae.Tasks, "100_0")
	assert.Len(t, fx.slurm.sbatchCalls(), 2, "nothing more was submitted")
}

// --resume adopts the earlier submission's live tasks, skips profiles with
// a finished row of the same run key and submits only the rest.
func TestResumeAdoptsLiveTasksAndSubmitsOnlyUnfinishedProfiles(t *testing.T) {
	fx := newFixture(t)
	// First run, detached (its driver is gone): small is still running,
	// small-fp16 was killed without a row, big-tp2 completed with a
	// qualified row of this run's key.
	fx.ex.Detach = true
	fx.slurm.scripts["small"] = []step{{State: "RUNNING", Node: "node1"}, {State: "RUNNING", Node: "node1"},
		{State: "COMPLETED", Exit: "0:0", Node: "node1", Row: verdict.VerdictQualified}}
	fx.slurm.scripts["small-fp16"] = []step{{State: "FAILED", Reason: "JobLaunchFailure", Exit: "0:9", Node: "node1"}}
	fx.slurm.scripts["big-tp2"] = []step{{State: "COMPLETED", Exit: "0:0", Node: "node2"}}
	_, err := fx.run(context.Background())
	require.NoError(t, err)
	fx.slurm.writeRow("big-tp2", verdict.VerdictQualified, "101_0")
	setRunKey(t, fx, "big-tp2")

	fx.ex.Detach = false
	fx.opts.Resume = true
	_, err = fx.run(context.Background())
	require.NoError(t, err, fx.log.String())
	calls := fx.slurm.sbatchCalls()
	require.Len(t, calls, 3, "one new array")
	assert.Equal(t, []string{"small-fp16"}, scriptIDs(t, calls[2][len(calls[2])-1]))
	rec, err := ReadRecord(fx.out, "mixed")
	require.NoError(t, err)
	require.Len(t, rec.Tasks, 2)
	first, second := rec.Tasks[0].Submission, rec.Submission
	assert.NotEqual(t, first, second, "each submission has its own nonce")
	assert.Equal(t, []TaskRef{{Profile: "small", ArrayJobID: "100", Index: 0, Submission: first, Adopted: true},
		{Profile: "small-fp16", ArrayJobID: "102", Index: 0, Submission: second}}, rec.Tasks)
	assert.Equal(t, first, fx.row("small").Provenance.Slurm.Submission, "the adopted task keeps its submission's nonce")
	assert.Equal(t, verdict.VerdictQualified, fx.row("small").Verdict)
	assert.Equal(t, "100_0", fx.row("small").Provenance.Slurm.JobID, "the adopted task's own row")
	assert.Equal(t, "102_0", fx.row("small-fp16").Provenance.Slurm.JobID)
	assert.Equal(t, "101_0", fx.row("big-tp2").Provenance.Slurm.JobID, "the finished row is kept")
	assert.Contains(t, fx.log.String(), "resume: small: adopting Slurm task 100_0")
	assert.Contains(t, fx.log.String(), "resume: big-tp2: finished result with the same run key")
}

// setRunKey gives a stored row the run key this run computes, as the
// task's own pipeline would have.
func setRunKey(t *testing.T, fx *fixture, profile string) {
	t.Helper()
	prep, err := qual.Prepare(context.Background(), fx.opts)
	require.NoError(t, err)
	defer prep.Release() // the group's evidence lock
	r := fx.row(profile)
	for _, p := range prep.Profiles {
		if p.ID == profile {
			r.RunKey, err = prep.RunKey(p)
			require.NoError(t, err)
			require.NoError(t, qual.WriteRow(fx.out, r, false, fx.opts.Now))
			_, ok := prep.Finished(p)
			require.True(t, ok)
		}
	}
}

func TestPollFailuresAreRetriedThenASetupError(t *testing.T) {
	fx := newFixture(t)
	fx.opts.Only = []string{"small"}
	fx.slurm.badPolls = 3
	_, err := fx.run(context.Background())
	require.NoError(t, err, "three failed polls in a row are retried")
	assert.Equal(t, verdict.VerdictQualified, fx.row("small").Verdict)

	fx = newFixture(t)
	fx.opts.Only = []string{"small"}
	fx.slurm.badPolls = maxPollFailures
	_, err = fx.run(context.Background())
	var se *qual.SetupError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "Unable to contact slurm controller")
	assert.Contains(t, err.Error(), "trtmc-qual status")
}

func TestConstraintNeedsEveryScopeMapped(t *testing.T) {
	fx := newFixture(t)
	fx.ex.Config.Constraints = map[string]string{"h200": "h200"} // big-tp2 also lists gb300
	_, err := fx.run(context.Background())
	var ue *qual.UsageError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "big-tp2")
	assert.Contains(t, err.Error(), "gb300")
	assert.Contains(t, err.Error(), "inventory.yaml:")
	assert.Empty(t, fx.slurm.sbatchCalls())
}

func TestGPURequestStyles(t *testing.T) {
	for _, c := range []struct {
		style string
		want  []string
		none  []string
	}{
		{GPURequestGPUsPerTask, []string{"--ntasks=1", "--gpus-per-task=1"}, []string{"--gres=gpu:1"}},
		{GPURequestNone, nil, []string{"--gres=gpu:1", "--gpus-per-task=1"}},
	} {
		fx := newFixture(t)
		fx.opts.Only = []string{"small"}
		fx.ex.Config.GPURequest = c.style
		fx.ex.Config.TimeLimit = 90 * time.Minute
		fx.ex.Config.MaxParallel = 2
		_, err := fx.run(context.Background())
		require.NoError(t, err)
		args := fx.slurm.sbatchCalls()[0]
		for _, w := range c.want {
			assert.Contains(t, args, w, c.style)
		}
		for _, n := range c.none {
			assert.NotContains(t, args, n, c.style)
		}
		assert.Contains(t, args, "--time=90")
		assert.Contains(t, args, "--array=0-0%2")
	}
}

func TestConfigValidate(t *testing.T) {
	assert.NoError(t, Config{}.Validate())
	assert.ErrorContains(t, Config{GPURequest: "gpus"}.Validate(), "valid values are gres, gpus-per-task, none")
	assert.ErrorContains(t, Config{PollInterval: 100 * time.Millisecond}.Validate(), "at least 1s")
	assert.ErrorContains(t, Config{Constraints: map[string]string{"gb300": "gb 300"}}.Validate(), "slurm.constraints.gb300")
	assert.ErrorContains(t, Config{TimeLimit: -1}.Validate(), "slurm.time_limit")
}

func TestStatusSettlesADetachedSubmission(t *testing.T) {
	fx := newFixture(t)
	fx.ex.Detach = true
	fx.opts.Only = []string{"small", "small-fp16"}
	fx.slurm.scripts["small-fp16"] = []step{{State: "RUNNING", Node: "node2"}, {State: "TIMEOUT", Reason: "TimeLimit", Exit: "0:15", Node: "node2"}}
	_, err := fx.run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"100"}, fx.ex.JobIDs)
	assert.NoFileExists(t, filepath.Join(fx.out, "mixed", "results.md"), "detached: nothing followed yet")

	opts := StatusOptions{Runner: fx.slurm, Out: fx.out, Group: "mixed", Log: fx.log, RowExits: runRowExits,
		WaitFn: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
	gs, err := Status(context.Background(), opts)
	require.NoError(t, err)
	assert.False(t, gs.Done)
	require.Len(t, gs.Tasks, 2)
	assert.Equal(t, "PENDING", gs.Tasks[0].State.State)
	assert.Nil(t, gs.Tasks[0].Row)
	assert.NoFileExists(t, filepath.Join(fx.out, "mixed", "results.md"))

	opts.Wait = true
	gs, err = Status(context.Background(), opts)
	require.NoError(t, err)
	assert.True(t, gs.Done)
	assert.Equal(t, verdict.VerdictQualified, gs.Tasks[0].Row.Verdict)
	assert.Equal(t, verdict.VerdictError, gs.Tasks[1].Row.Verdict)
	assert.Contains(t, gs.Tasks[1].Row.Reasons[0].Message, "100_1 ended TIMEOUT")
	assert.FileExists(t, filepath.Join(fx.out, "mixed", "results.md"))

	// Slurm that cannot be asked is an error, not a quiet table of unknowns.
	fx.slurm.badPolls = 1
	_, err = Status(context.Background(), StatusOptions{Runner: fx.slurm, Out: fx.out, Group: "mixed", Log: fx.log, RowExits: runRowExits})
	var se *qual.SetupError
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "Unable to contact slurm controller")

	groups, err := RecordedGroups(fx.out)
	require.NoError(t, err)
	assert.Equal(t, []string{"mixed"}, groups)
	_, err = Status(context.Background(), StatusOptions{Runner: fx.slurm, Out: fx.out, Group: "other"})
	assert.ErrorIs(t, err, ErrNoRecord)
}

// An interrupted status stops watching; it never cancels anything.
func TestInterruptedStatusCancelsNothing(t *testing.T) {
	fx := newFixture(t)
	fx.ex.Detach = true
	fx.opts.Only = []string{"small"}
	fx.slurm.scripts["small"] = []step{{State: "RUNNING", Node: "node1"}}
	_, err := fx.run(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	fx.slurm.onShow = func(n int) {
		if n == 3 {
			cancel()
		}
	}
	_, err = Status(ctx, StatusOptions{Runner: fx.slurm, Out: fx.out, Group: "mixed", Wait: true, RowExits: runRowExits,
		WaitFn: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }})
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, fx.slurm.cancels)
	_, statErr := os.Stat(filepath.Join(fx.out, "mixed", "small", "result.json"))
	assert.True(t, errors.Is(statErr, os.ErrNotExist))
}

func TestBatchScriptQuotesEveryWord(t *testing.T) {
	s := batchScript("g", "n0nce", []string{"a", "b"}, []string{"/opt/my dir/trtmc-qual", "--config", "it's.yaml", "run"})
	assert.Contains(t, s, "ids=(a b)\n")
	assert.Contains(t, s, `exec '/opt/my dir/trtmc-qual' --config 'it'\''s.yaml' run --only "$id"`)
	assert.True(t, slices.Contains(strings.Split(s, "\n"), "set -u"))
}
