package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Problem codes of the rows the driver writes for tasks that left none of
// their own (stage "slurm"); their classes are in verdict.Codes.
const (
	StageSlurm = "slurm"
	// CodeNotStarted: the task never started (cancelled while queued).
	CodeNotStarted = verdict.CodeSlurmNotStarted
	// CodeTaskEnded: the task ended without a row of its own, or in a
	// state that voids the row it left (timeout, preemption, node failure,
	// cancellation, a failure of the harness itself); the message names the
	// job, state, reason and exit code.
	CodeTaskEnded = verdict.CodeSlurmTaskEnded
	// CodeLost: Slurm no longer knows the task and it left no row.
	CodeLost = verdict.CodeSlurmTaskLost
	// CodeInterrupted: the driver was interrupted and cancelled the task.
	CodeInterrupted = verdict.CodeInterrupted
)

// How long the driver waits, after cancelling its tasks, for Slurm to
// report every one of them ended (SIGTERM, the harness's own grace for
// AIPerf and the server, then Slurm's KillWait).
const cancelWait = 3 * time.Minute

// maxPollFailures is how many polls in a row may fail (slurmctld
// restarting, a network blip) before the driver gives up following.
const maxPollFailures = 10

// Follower follows a recorded submission's tasks until each has ended and
// has a row: the task's own when it ended as a run ends, otherwise one the
// follower writes (error, interrupted or not-run, naming the Slurm job).
// The driver of `run --executor slurm` and `trtmc-qual status` both use it.
type Follower struct {
	Runner      proc.Runner
	CommandsDir string
	Record      *Record
	// Profiles are the group's inventory profiles, for the rows written
	// for tasks that left none.
	Profiles map[string]*inventory.Profile
	Log      io.Writer
	Now      func() time.Time
	Poll     time.Duration
	Wait     func(ctx context.Context, d time.Duration) error
	// CancelOnInterrupt cancels the unfinished tasks when ctx ends (the
	// driver); otherwise an interrupted follower just stops watching.
	CancelOnInterrupt bool
	// Watch follows until every task has ended; otherwise Follow makes
	// one pass.
	Watch bool
	// RowExits are the exit statuses with which a task's `trtmc-qual run`
	// ends having written its row (a failed row, a setup error recorded
	// in it): the wiring's exit-code table says which. A task that ended
	// FAILED with another status leaves no row that stands; none given,
	// only a task that COMPLETED keeps its row.
	RowExits []int

	// States are the last states seen, by task id (after Follow).
	States map[string]TaskState
	// Pending counts the tasks not yet ended after Follow.
	Pending int
}

type followed struct {
	ref     TaskRef
	last    string
	settled *verdict.Result
}

// Follow polls the tasks, prints one line per task state change, settles
// each ended task and returns the rows settled, by profile. With Watch it
// returns when every task has ended; when ctx ends first it cancels the
// unfinished tasks (CancelOnInterrupt), waits for Slurm to end them, writes
// their rows and returns ctx's error.
func (f *Follower) Follow(ctx context.Context) (map[string]*verdict.Result, error) {
	if f.Now == nil {
		f.Now = time.Now
	}
	if f.Log == nil {
		f.Log = io.Discard
	}
	if f.Wait == nil {
		f.Wait = sleep
	}
	if f.Poll <= 0 {
		f.Poll = DefaultPollInterval
	}
	cl := client{runner: f.Runner, dir: f.CommandsDir}
	tasks := make([]*followed, len(f.Record.Tasks))
	for i, t := range f.Record.Tasks {
		tasks[i] = &followed{ref: t}
	}
	f.States = map[string]TaskState{}
	failures := 0
	for {
		states, err := queryStates(ctx, cl, f.Record.Tasks)
		switch {
		case err != nil && ctx.Err() != nil:
			return f.interrupted(ctx, cl, tasks)
		case err != nil:
			failures++
			logf(f.Log, "slurm: polling the tasks failed (%d in a row): %v", failures, err)
			if failures >= maxPollFailures || !f.Watch {
				f.Pending = countPending(tasks)
				return collect(tasks), &qual.SetupError{Err: fmt.Errorf("cannot follow the Slurm tasks of group %s: %w; they may still run: "+
					"`trtmc-qual status --out %s --group %s --wait` picks them up", f.Record.Group, err, f.Record.Out, f.Record.Group)}
			}
		default:
			failures = 0
			f.step(tasks, states, false)
		}
		f.Pending = countPending(tasks)
		if f.Pending == 0 || !f.Watch {
			return collect(tasks), nil
		}
		if err := f.Wait(ctx, f.Poll); err != nil {
			return f.interrupted(ctx, cl, tasks)
		}
	}
}

// step records the states seen and settles the tasks that ended.
func (f *Follower) step(tasks []*followed, states map[string]TaskState, cancelled bool) {
	for _, t := range tasks {
		if t.settled != nil {
			continue
		}
		st, known := states[t.ref.ID()]
		if !known {
			var last *TaskState
			if l, seen := f.States[t.ref.ID()]; seen {
				last = &l
			}
			t.settled = f.settle(t.ref, nil, last, cancelled)
			continue
		}
		f.States[t.ref.ID()] = st
		if d := st.Describe(); d != t.last {
			t.last = d
			if !st.Terminal() {
				logf(f.Log, "slurm %s %s: %s", t.ref.ID(), t.ref.Profile, d)
			}
		}
		if st.Terminal() {
			t.settled = f.settle(t.ref, &st, nil, cancelled)
		}
	}
}

// interrupted cancels the unfinished tasks (when the follower owns them),
// waits for Slurm to end them and settles them.
func (f *Follower) interrupted(ctx context.Context, cl client, tasks []*followed) (map[string]*verdict.Result, error) {
	f.Pending = countPending(tasks)
	if !f.CancelOnInterrupt || f.Pending == 0 {
		return collect(tasks), ctx.Err()
	}
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	defer cancel()
	var ids []string
	for _, t := range tasks {
		if t.settled == nil {
			ids = append(ids, t.ref.ID())
		}
	}
	logf(f.Log, "slurm: interrupted: cancelling %d task(s): scancel %s", len(ids), strings.Join(ids, " "))
	if err := cl.cancel(bg, ids); err != nil {
		logf(f.Log, "slurm: scancel failed: %v", err)
	}
	poll := min(f.Poll, 2*time.Second)
	for {
		states, err := queryStates(bg, cl, f.Record.Tasks)
		if err == nil {
			f.step(tasks, states, true)
		}
		f.Pending = countPending(tasks)
		if f.Pending == 0 {
			break
		}
		if bg.Err() != nil || f.Wait(bg, poll) != nil {
			logf(f.Log, "slurm: %d task(s) still not ended %s after scancel: check `squeue --me`", f.Pending, cancelWait)
			break
		}
	}
	return collect(tasks), ctx.Err()
}

func countPending(tasks []*followed) int {
	n := 0
	for _, t := range tasks {
		if t.settled == nil {
			n++
		}
	}
	return n
}

func collect(tasks []*followed) map[string]*verdict.Result {
	out := map[string]*verdict.Result{}
	for _, t := range tasks {
		if t.settled != nil {
			out[t.ref.Profile] = t.settled
		}
	}
	return out
}

// rowStands reports whether a task ended the way a `trtmc-qual run` ends
// after writing its row: COMPLETED (every row qualified), or FAILED with
// one of rowExits (a row failed or broke, a setup error recorded in the
// row). Then the row the task wrote is the row. Anything else — cancelled,
// timed out, preempted, a node failure, killed, a usage or harness error,
// interrupted — leaves no row that can be trusted as it is.
func rowStands(st TaskState, rowExits []int) bool {
	switch st.State {
	case "COMPLETED":
		return true
	case "FAILED":
		code, sig := exitCode(st.ExitCode)
		return st.Reason == "NonZeroExitCode" && sig == 0 && slices.Contains(rowExits, code)
	}
	return false
}

// exitCode splits Slurm's "code:signal".
func exitCode(s string) (code, sig int) {
	a, b, _ := strings.Cut(s, ":")
	code, _ = strconv.Atoi(a)
	sig, _ = strconv.Atoi(b)
	return code, sig
}

// belongs reports whether a row is the task's own: written in the task's
// Slurm job (its id) by the task's submission (its nonce). A job id alone
// repeats across clusters and slurmctld resets; the nonce does not.
func belongs(r *verdict.Result, t TaskRef) bool {
	s := r.Provenance.Slurm
	return s != nil && s.JobID == t.ID() && t.Submission != "" && s.Submission == t.Submission
}

// settle returns the task's row: its own when it stands, else one written
// here. st is nil when Slurm no longer knows the task (as one of its
// submission's); last is then the state it was last seen in, if any.
// The row is read through the one loader (qual.ReadRow): a row counts as
// the task's own only when it belongs to the task and its evidence holds
// its seal.
func (f *Follower) settle(t TaskRef, st, last *TaskState, cancelled bool) *verdict.Result {
	rec := f.Record
	own, readErr := qual.ReadRow(rec.Out, rec.Group, t.Profile)
	isOwn := own != nil && own.EvidenceIntact() && belongs(own, t)
	switch {
	case st != nil && rowStands(*st, f.RowExits) && isOwn:
		logf(f.Log, "slurm %s %s: %s -> %s", t.ID(), t.Profile, st.Describe(), own.Verdict)
		return own
	case st == nil && isOwn:
		logf(f.Log, "slurm %s %s: no longer known to Slurm; its row stands -> %s", t.ID(), t.Profile, own.Verdict)
		return own
	}

	r := f.startRow(t, st, own, isOwn)
	reason := settleReason(t, st, last, cancelled, foundRow{own: own, isOwn: isOwn, readErr: readErr}, f.logRef(t))
	if reason.Code == CodeTaskEnded {
		// The task's own account of an interruption (SIGTERM from a
		// cancel nobody here asked for) is what Slurm's state explains;
		// the row is an error, not interrupted.
		r.Problems = slices.DeleteFunc(r.Problems, func(p verdict.Problem) bool {
			return verdict.ClassOf(p.Code) == verdict.ClassInterrupted
		})
	}
	// The verdict follows from the problem's class (verdict.Codes):
	// not-run, interrupted or error, never qualified.
	r.Problems = append([]verdict.Problem{reason}, r.Problems...)
	verdict.Judge(&r)
	// An earlier run's row in the directory is set aside, never
	// overwritten; the task's partial evidence (no row) is kept.
	setAside := own != nil && !isOwn || readErr != nil
	if err := qual.WriteRow(rec.Out, &r, setAside, f.Now); err != nil {
		r.Problems = append(r.Problems, verdict.Problem{Stage: "report", Code: verdict.CodeWriteFailed, Message: err.Error()})
		verdict.Judge(&r)
		logf(f.Log, "slurm %s %s: cannot write its row: %v", t.ID(), t.Profile, err)
	}
	state := "gone from Slurm"
	if st != nil {
		state = st.Describe()
	}
	logf(f.Log, "slurm %s %s: %s -> %s (%s)", t.ID(), t.Profile, state, r.Verdict, reason.Code)
	return &r
}

// startRow is the row settle writes for a task whose own row cannot
// stand: that row (its problems copied) when it is the task's, else the
// profile's row before anything ran; either way with Slurm's view of the
// task.
func (f *Follower) startRow(t TaskRef, st *TaskState, own *verdict.Result, isOwn bool) verdict.Result {
	var r verdict.Result
	if isOwn {
		r = *own
		r.Problems = append([]verdict.Problem(nil), own.Problems...)
	} else {
		p := f.Profiles[t.Profile]
		if p == nil {
			p = &inventory.Profile{ID: t.Profile}
		}
		w := f.Record.Workload
		r = qual.BaseResult(f.Record.Group, &w, p)
		r.StartedAt = f.Now().UTC()
		r.Provenance.Slurm = &verdict.SlurmTask{JobID: t.ID(), Submission: t.Submission, ArrayJobID: t.ArrayJobID, ArrayTaskID: strconv.Itoa(t.Index)}
	}
	sl := *r.Provenance.Slurm
	r.Provenance.Slurm = &sl
	if st != nil {
		sl.State, sl.Reason, sl.ExitCode = st.State, st.Reason, st.ExitCode
		if sl.Node == "" {
			sl.Node = st.Node
		}
	}
	r.EndedAt = f.Now().UTC()
	return r
}

// foundRow is what a task left in its evidence directory: the row read
// there (nil when none or unreadable), whether it is the task's own, and
// why it could not be read.
type foundRow struct {
	own     *verdict.Result
	isOwn   bool
	readErr error
}

// settleReason is why a task's row is what settle writes: it never
// started, Slurm forgot it, the driver's interrupt cancelled it, or it
// ended without a row that stands (CodeTaskEnded). logRef names the
// task's log and its last lines.
func settleReason(t TaskRef, st, last *TaskState, cancelled bool, found foundRow, logRef string) verdict.Problem {
	switch {
	case st != nil && !st.Started():
		return verdict.Problem{Stage: StageSlurm, Code: CodeNotStarted,
			Message: fmt.Sprintf("Slurm job %s never started: %s", t.ID(), st.Describe())}
	case st == nil && last != nil && !last.Started():
		// Slurm drops a pending task's record when it is cancelled while
		// other tasks of its array still wait: it never started.
		return verdict.Problem{Stage: StageSlurm, Code: CodeNotStarted,
			Message: fmt.Sprintf("Slurm job %s never started: it was %s when last seen, then Slurm dropped it (cancelled while queued)", t.ID(), last.Describe())}
	case st == nil:
		return verdict.Problem{Stage: StageSlurm, Code: CodeLost,
			Message: fmt.Sprintf("Slurm no longer knows job %s (purged after it ended?) and it left no row of its own%s", t.ID(), logRef)}
	case cancelled:
		return verdict.Problem{Stage: StageSlurm, Code: CodeInterrupted,
			Message: fmt.Sprintf("the driver was interrupted and cancelled Slurm job %s while it ran: %s%s", t.ID(), st.Describe(), logRef)}
	}
	what := "left no row of its own"
	switch own := found.own; {
	case found.isOwn:
		what = "so its row (" + own.Verdict + ") cannot stand"
	case found.readErr != nil:
		what = "left no readable row (" + found.readErr.Error() + ")"
	case own != nil && !own.EvidenceIntact():
		what = "left no row that can be trusted (" + firstBroken(own) + "; set aside)"
	case own != nil:
		what = "left no row of its own (the row there " + whoseRow(own) + "; set aside)"
	}
	return verdict.Problem{Stage: StageSlurm, Code: CodeTaskEnded,
		Message: fmt.Sprintf("Slurm job %s ended %s and %s%s", t.ID(), st.Describe(), what, logRef)}
}

// firstBroken is a row's first broken reason, "code: message".
func firstBroken(r *verdict.Result) string {
	for _, rs := range r.Reasons {
		if rs.Class == verdict.ClassBroken {
			return string(rs.Code) + ": " + strings.SplitN(rs.Message, "\n", 2)[0]
		}
	}
	return r.Verdict
}

// whoseRow says which job and submission wrote a row that is not the task's.
func whoseRow(r *verdict.Result) string {
	s := r.Provenance.Slurm
	switch {
	case s == nil:
		return "was not written in a Slurm job"
	case s.Submission == "":
		return "was written by Slurm job " + s.JobID + " of a submission without a nonce"
	}
	return "was written by Slurm job " + s.JobID + " of another submission (" + s.Submission + ")"
}

// logRef points at the task's log and quotes its last lines.
func (f *Follower) logRef(t TaskRef) string {
	path := TaskLog(f.Record.Out, f.Record.Group, t)
	rel, err := filepath.Rel(f.Record.Out, path)
	if err != nil {
		rel = path
	}
	s := "; task log " + rel
	data, err := logTail(path, logTailBytes)
	if err != nil {
		return s + " (none)"
	}
	if tail := lastLogLines(data, 5); tail != "" {
		s += "; last lines:\n" + tail
	}
	return s
}

// logTailBytes is how much of a task's log is read for its last lines: a
// log of any size costs no more.
const logTailBytes = 64 << 10

// logTail reads the last max bytes of a regular file.
func logTail(path string, max int64) ([]byte, error) {
	f, st, err := fileio.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	off := max64(st.Size()-max, 0)
	buf := make([]byte, st.Size()-off)
	n, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// lastLogLines is the last n lines of a task's log for a message: blank lines
// dropped, each line trimmed, clipped to 300 bytes and indented.
func lastLogLines(data []byte, n int) string {
	var out []string
	for _, l := range strings.Split(text.LastLines(string(data), n), "\n") {
		if s := strings.TrimSpace(l); s != "" {
			out = append(out, "    "+text.Clip(s, 300))
		}
	}
	return strings.Join(out, "\n")
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
