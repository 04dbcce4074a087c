package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict/verdicttest"
)

// step is one state a fake task is in for one poll.
type step struct {
	State, Reason, Exit, Node string
	// Row, when set, is the verdict of the row the task writes on
	// entering this step (what `trtmc-qual run --only ID` leaves).
	Row string
	// RowJob is the Slurm job id the row records ("" = the task's own).
	RowJob string
	// RowSubmission is the submission nonce the row records ("" = the
	// task's own submission's; "-" = none).
	RowSubmission string
}

// Steps of a well-behaved task: queued, running, done with a row.
func okSteps(verdict string) []step {
	return []step{{State: "PENDING", Reason: "Priority"}, {State: "RUNNING", Node: "node1"},
		{State: "COMPLETED", Exit: "0:0", Node: "node1", Row: verdict}}
}

type fakeTask struct {
	profile string
	index   int
	steps   []step
	pos     int
	cur     step
	// cancelledPending: cancelled before it ever started. Slurm then keeps
	// no record of its own for it (see show).
	cancelledPending bool
}

type fakeArray struct {
	id    string
	args  []string
	tasks []*fakeTask
	// comment is the job's --comment (Comment(submission)).
	comment string
	// purged: scontrol no longer knows the array once every task ended.
	purged bool
}

// fakeSlurm plays slurmctld behind proc.Runner: sbatch, scontrol show job
// -o and scancel (and `aiperf --version` for the group's preparation).
// Every `scontrol show job` of an array moves each of its tasks one step
// along its script.
type fakeSlurm struct {
	t     *testing.T
	out   string
	group string

	mu      sync.Mutex
	next    int
	scripts map[string][]step
	// reject makes the n-th sbatch (1-based) fail with this stderr.
	reject map[int]string
	// purge makes scontrol forget arrays whose tasks all ended.
	purge bool
	// onShow runs before every scontrol call with the count so far;
	// onSubmit before every sbatch.
	onShow   func(n int)
	onSubmit func(n int)
	arrays   map[string]*fakeArray
	order    []string
	submits  int
	shows    int
	calls    [][]string
	cancels  [][]string
	badPolls int // scontrol calls that fail before answering
}

func newFakeSlurm(t *testing.T, out, group string) *fakeSlurm {
	return &fakeSlurm{t: t, out: out, group: group, next: 100, scripts: map[string][]step{}, reject: map[int]string{},
		arrays: map[string]*fakeArray{}}
}

func (f *fakeSlurm) Start(context.Context, proc.Spec) (proc.Process, error) {
	return nil, fmt.Errorf("fakeSlurm: Start is not used")
}

func (f *fakeSlurm) Run(ctx context.Context, s proc.Spec) (proc.Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, s.Argv)
	f.mu.Unlock()
	name := filepath.Base(s.Argv[0])
	fail := func(msg string) (proc.Result, error) {
		fmt.Fprintln(orDiscard(s.Stderr), msg)
		r := proc.Result{Argv: s.Argv, ExitCode: 1, StderrTail: msg}
		return r, &proc.ExitError{Name: name, Result: r}
	}
	switch {
	case name == "aiperf" && len(s.Argv) == 2 && s.Argv[1] == "--version":
		fmt.Fprintln(orDiscard(s.Stdout), "0.13.0")
	case name == "sbatch":
		f.mu.Lock()
		f.submits++
		msg, rejected := f.reject[f.submits]
		n, hook := f.submits, f.onSubmit
		f.mu.Unlock()
		if hook != nil {
			hook(n)
		}
		if rejected {
			return fail(msg)
		}
		id := f.submit(s.Argv[1:])
		fmt.Fprintln(orDiscard(s.Stdout), id)
	case name == "scontrol":
		f.mu.Lock()
		f.shows++
		n := f.shows
		hook := f.onShow
		bad := f.badPolls > 0
		if bad {
			f.badPolls--
		}
		f.mu.Unlock()
		if hook != nil {
			hook(n)
		}
		if bad {
			return fail("slurm_load_jobs error: Unable to contact slurm controller (connect failure)")
		}
		out, ok := f.show(s.Argv[len(s.Argv)-1])
		if !ok {
			return fail("slurm_load_jobs error: Invalid job id specified")
		}
		fmt.Fprint(orDiscard(s.Stdout), out)
	case name == "scancel":
		f.cancel(s.Argv[1:])
	default:
		return fail("fakeSlurm: unexpected command " + strings.Join(s.Argv, " "))
	}
	return proc.Result{Argv: s.Argv}, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// submit reads the profiles from the batch script's ids=(...) line.
func (f *fakeSlurm) submit(args []string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	script := args[len(args)-1]
	ids := scriptIDs(f.t, script)
	a := &fakeArray{id: strconv.Itoa(f.next), args: args}
	for _, arg := range args {
		if c, ok := strings.CutPrefix(arg, "--comment="); ok {
			a.comment = c
		}
	}
	f.next++
	for i, p := range ids {
		steps, ok := f.scripts[p]
		if !ok {
			steps = okSteps(verdict.VerdictQualified)
		}
		a.tasks = append(a.tasks, &fakeTask{profile: p, index: i, steps: steps, pos: -1})
	}
	f.arrays[a.id] = a
	f.order = append(f.order, a.id)
	return a.id
}

func (f *fakeSlurm) show(id string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.arrays[id]
	if !ok || a.purged {
		return "", false
	}
	var b strings.Builder
	var pending []int
	cancelledPending := 0
	ended := true
	for _, t := range a.tasks {
		if t.pos < len(t.steps)-1 && t.pos >= -1 && t.steps != nil {
			t.pos++
			t.cur = t.steps[t.pos]
			if t.cur.Row != "" {
				job := t.cur.RowJob
				if job == "" {
					job = TaskID(a.id, t.index)
				}
				sub := t.cur.RowSubmission
				switch sub {
				case "":
					sub = strings.TrimPrefix(a.comment, commentPrefix)
				case "-":
					sub = ""
				}
				f.writeRowAs(t.profile, t.cur.Row, job, sub)
			}
		}
		if !terminal[t.cur.State] {
			ended = false
		}
		if t.cur.State == "PENDING" && t.cur.Node == "" {
			pending = append(pending, t.index)
			continue
		}
		if t.cancelledPending {
			cancelledPending++
			continue
		}
		fmt.Fprintf(&b, "JobId=%d ArrayJobId=%s ArrayTaskId=%d JobName=trtmc-qual-%s JobState=%s Reason=%s Dependency=(null) ExitCode=%s "+
			"RunTime=00:00:01 NodeList=%s BatchHost=%s Command=/evidence root/submit.sh WorkDir=/tmp%s\n",
			1000+t.index, a.id, t.index, f.group, t.cur.State, or(t.cur.Reason, "None"), or(t.cur.Exit, "0:0"), t.cur.Node, t.cur.Node, commentField(a.comment))
	}
	// Pending tasks are one record, as slurmctld keeps them until they start.
	if len(pending) > 0 {
		var parts []string
		for _, i := range pending {
			parts = append(parts, strconv.Itoa(i))
		}
		fmt.Fprintf(&b, "JobId=%s ArrayJobId=%s ArrayTaskId=%s%%4 JobName=trtmc-qual-%s JobState=PENDING Reason=Priority ExitCode=0:0 NodeList= Command=/x%s\n",
			a.id, a.id, strings.Join(parts, ","), f.group, commentField(a.comment))
	} else if cancelledPending > 0 {
		// As slurm-wlm 22.05 does once every pending task was cancelled by
		// its id: one record for the array, naming no task (NO_VAL). While
		// other tasks still wait, a cancelled pending task has no record.
		fmt.Fprintf(&b, "JobId=%s ArrayJobId=%s ArrayTaskId=4294967294 JobName=trtmc-qual-%s JobState=CANCELLED Reason=None ExitCode=0:0 NodeList= Command=/x%s\n",
			a.id, a.id, f.group, commentField(a.comment))
	}
	if ended && f.purge {
		a.purged = true
	}
	return b.String(), true
}

func (f *fakeSlurm) cancel(ids []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancels = append(f.cancels, ids)
	for _, id := range ids {
		aid, idx, isTask := strings.Cut(id, "_")
		a := f.arrays[aid]
		if a == nil {
			continue
		}
		for _, t := range a.tasks {
			if isTask && strconv.Itoa(t.index) != idx || terminal[t.cur.State] {
				continue
			}
			if t.cur.Node == "" {
				t.cur = step{State: "CANCELLED", Exit: "0:0"}
				t.cancelledPending = true
			} else {
				// The task's run gets SIGTERM and leaves an interrupted row.
				f.writeRowAs(t.profile, verdict.VerdictInterrupted, TaskID(a.id, t.index), strings.TrimPrefix(a.comment, commentPrefix))
				t.cur = step{State: "CANCELLED", Exit: "0:15", Node: t.cur.Node}
			}
			t.steps, t.pos = nil, 0
		}
	}
}

func commentField(c string) string {
	if c == "" {
		return ""
	}
	return " Comment=" + c + " "
}

// writeRow plays the task's own `trtmc-qual run --only ID` in Slurm job
// job, with the submission nonce of job's array when the fake made it.
func (f *fakeSlurm) writeRow(profile, v, job string) {
	f.mu.Lock()
	aid, _, _ := strings.Cut(job, "_")
	sub := ""
	if a := f.arrays[aid]; a != nil {
		sub = strings.TrimPrefix(a.comment, commentPrefix)
	}
	f.mu.Unlock()
	f.writeRowAs(profile, v, job, sub)
}

// writeRowAs writes the row of a task of submission sub ("" = none). As
// the task's own run does, it is the row of the profile's entry in the
// group's inventory snapshot (which the driver wrote, and the task's run
// writes again, the same), and records the snapshot.
func (f *fakeSlurm) writeRowAs(profile, v, job, sub string) {
	entry := &inventory.Profile{ID: profile}
	snapshot := ""
	if data, err := os.ReadFile(filepath.Join(f.out, f.group, reports.InventoryFile)); err == nil {
		var list []*inventory.Profile
		require.NoError(f.t, json.Unmarshal(data, &list))
		for _, p := range list {
			if p.ID == profile {
				entry = p
			}
		}
		snapshot = fileio.SHA256(data)
	}
	r := qual.BaseResult(f.group, nil, entry)
	r.Provenance.InventorySnapshotSHA256 = snapshot
	verdicttest.WithVerdict(&r, v)
	r.Command = "trtmc-qual run --only " + profile
	aj, ti, _ := strings.Cut(job, "_")
	r.Provenance.Slurm = &verdict.SlurmTask{JobID: job, Submission: sub, ArrayJobID: aj, ArrayTaskID: ti, Node: "node1", GPUs: "0"}
	r.StartedAt, r.EndedAt = time.Now().UTC(), time.Now().UTC()
	require.NoError(f.t, qual.WriteRow(f.out, &r, false, time.Now))
}

func (f *fakeSlurm) sbatchCalls() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]string
	for _, c := range f.calls {
		if filepath.Base(c[0]) == "sbatch" {
			out = append(out, c)
		}
	}
	return out
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// scriptIDs reads the profile ids of a batch script written by the executor.
func scriptIDs(t *testing.T, script string) []string {
	t.Helper()
	data := readFile(t, script)
	for _, line := range strings.Split(data, "\n") {
		if rest, ok := strings.CutPrefix(line, "ids=("); ok {
			return strings.Fields(strings.TrimSuffix(rest, ")"))
		}
	}
	t.Fatalf("no ids=(...) line in %s:\n%s", script, data)
	return nil
}

// fixture is one executor run against the fake cluster.
type fixture struct {
	t     *testing.T
	out   string
	slurm *fakeSlurm
	log   *syncBuffer
	opts  qual.Options
	ex    *Executor
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	inv, err := inventory.Load([]string{filepath.Join("testdata", "inventory.yaml")}, func(string) bool { return true })
	require.NoError(t, err)
	fams, err := families.Load(filepath.Join("..", "..", "families", "families.yaml"))
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "out")
	fs := newFakeSlurm(t, out, "mixed")
	log := &syncBuffer{}
	fx := &fixture{t: t, out: out, slurm: fs, log: log}
	fx.opts = qual.Options{Inventory: inv, Families: fams, Group: "mixed", Out: out, AIPerf: qual.AIPerfOptions{Bin: "/nonexistent/aiperf",
		Version: "0.13.0"}, Runner: fs, Log: log, Now: time.Now}
	fx.ex = &Executor{Runner: fs, Task: []string{"/shared/bin/trtmc-qual", "--config", "/shared/trtmc qual.yaml", "run", "--group", "mixed"},
		Config: Config{Partition: "gpu", Account: "qual", SbatchArgs: []string{"--qos=high"}, CPUsPerTask: 8,
			Constraints: map[string]string{"h200": "h200", "gb300": "gb300"}},
		Wait:     func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		RowExits: runRowExits}
	return fx
}

// runRowExits are the statuses with which `trtmc-qual run` ends having
// written its rows: 0 qualified, 1 failed, 3 setup (cmd/trtmc-qual's
// rowExitStatuses, which the wiring passes; TestRowExitStatuses there).
var runRowExits = []int{0, 1, 3}

func (fx *fixture) run(ctx context.Context) (*qual.Outcome, error) {
	return fx.ex.Run(ctx, fx.opts)
}

func (fx *fixture) row(profile string) *verdict.Result {
	fx.t.Helper()
	r, err := qual.ReadRow(fx.out, "mixed", profile)
	require.NoError(fx.t, err)
	require.NotNil(fx.t, r, "no row for %s; log:\n%s", profile, fx.log.String())
	return r
}
