// Package slurm is the Slurm executor of `trtmc-qual run --executor slurm`:
// it submits a group as Slurm array jobs, one array task per profile, each
// task running `trtmc-qual run --only ID` on its node into the shared
// evidence root (the same pipeline as a local run), follows the tasks with
// scontrol, turns every task that ended without a row of its own into an
// error or not-run row naming its Slurm job, and writes the group tables.
// Every Slurm command goes through the harness's exec interface
// (families/proc.Runner), so tests drive it with a fake cluster. The
// submission's record is OUT/.slurm/<group>/job.json (schema
// trtmc-qual/slurm-job/v1, record.go); `trtmc-qual status` reads it. See
// docs/slurm.md.
package slurm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// GPU request styles (Config.GPURequest).
const (
	GPURequestGres        = "gres"          // --gres=gpu:N
	GPURequestGPUsPerTask = "gpus-per-task" // --ntasks=1 --gpus-per-task=N
	GPURequestNone        = "none"          // no GPU request (CPU-only clusters)
)

// DefaultPollInterval is how often the driver asks slurmctld about its
// tasks; MinPollInterval is the fastest it ever asks.
const (
	DefaultPollInterval = 15 * time.Second
	MinPollInterval     = time.Second
)

// Config is the Slurm side of trtmc-qual.yaml (the `slurm:` block). Its
// mapstructure tags are the block's keys: cmd/trtmc-qual resolves the block
// (flag > environment > file > default) straight into this type, and the
// errors of Validate name the same keys.
type Config struct {
	Partition string `mapstructure:"partition"`
	Account   string `mapstructure:"account"`
	// TimeLimit, when set, is every task's time limit; otherwise each
	// profile gets qual.TimeLimit of its family's stage timeouts.
	TimeLimit time.Duration `mapstructure:"time_limit"`
	// SbatchArgs are added to every sbatch command line, as given.
	SbatchArgs []string `mapstructure:"sbatch_args"`
	// Constraints map a profile's hardware scope (inventory `hardware:`)
	// to a Slurm node feature; a profile whose scopes are mapped asks for
	// --constraint=<feature>[|<feature>...].
	Constraints map[string]string `mapstructure:"constraints"`
	// GPURequest is gres (default), gpus-per-task or none.
	GPURequest string `mapstructure:"gpu_request"`
	// CPUsPerTask is --cpus-per-task (0: Slurm's default).
	CPUsPerTask int `mapstructure:"cpus_per_task"`
	// MaxParallel throttles each array (--array=...%N; 0: no throttle).
	MaxParallel int `mapstructure:"max_parallel"`
	// PollInterval is how often tasks are polled (default 15 s, at least 1 s).
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// CommandsDir holds sbatch, scontrol and scancel ("" = PATH).
	CommandsDir string `mapstructure:"commands_dir"`
}

// Validate checks the configuration; errors name the config key.
func (c Config) Validate() error {
	switch c.GPURequest {
	case "", GPURequestGres, GPURequestGPUsPerTask, GPURequestNone:
	default:
		return fmt.Errorf("slurm.gpu_request %q: valid values are %s, %s, %s", c.GPURequest, GPURequestGres, GPURequestGPUsPerTask, GPURequestNone)
	}
	if c.TimeLimit < 0 {
		return fmt.Errorf("slurm.time_limit %s: must not be negative", c.TimeLimit)
	}
	if c.CPUsPerTask < 0 || c.MaxParallel < 0 {
		return errors.New("slurm.cpus_per_task and slurm.max_parallel must be >= 0")
	}
	if c.PollInterval != 0 && c.PollInterval < MinPollInterval {
		return fmt.Errorf("slurm.poll_interval %s: at least %s (slurmctld is shared; do not poll it faster)", c.PollInterval, MinPollInterval)
	}
	for scope, feature := range c.Constraints {
		if feature == "" || strings.ContainsAny(feature, " \t\n'\"") {
			return fmt.Errorf("slurm.constraints.%s: %q is not a Slurm feature name", scope, feature)
		}
	}
	return nil
}

func (c Config) poll() time.Duration {
	if c.PollInterval <= 0 {
		return DefaultPollInterval
	}
	return c.PollInterval
}

// Executor runs a group through Slurm. It implements qual.Executor.
type Executor struct {
	Config Config
	// Runner runs sbatch, scontrol and scancel.
	Runner proc.Runner
	// Task is a task's trtmc-qual command line without --only: the binary
	// (on the nodes' shared filesystem), its global flags, `run` and the
	// run flags. The batch script appends `--only <profile>`.
	Task []string
	// Detach submits, records and returns without following the tasks.
	Detach bool
	// Wait pauses between polls (nil: a timer); tests replace it.
	Wait func(ctx context.Context, d time.Duration) error
	// RowExits are the exit statuses of a task that wrote its row
	// (Follower.RowExits).
	RowExits []int

	// JobIDs are the array job ids submitted by the last Run.
	JobIDs []string
}

var _ qual.Executor = (*Executor)(nil)

// OnThisHost implements qual.Executor: the checkpoints run on the nodes
// Slurm gives the tasks, each task on the GPUs Slurm allocates it.
func (*Executor) OnThisHost() bool { return false }

// EvidenceRoot is the evidence root of a Slurm submission, shared by the
// driver and its tasks: the configured slurm.out (slurmOut) unless --out
// was given on the command line, else the configured out. `run
// --executor slurm` and `status` resolve it here.
func EvidenceRoot(out, slurmOut string, outGiven bool) string {
	if slurmOut != "" && !outGiven {
		return slurmOut
	}
	return out
}

// ActiveError is a new submission refused because an earlier one of the
// same group into the same evidence root still has tasks queued or
// running: two runs would write the same evidence directories. A usage
// error (cmd/trtmc-qual's exit-code table says which status).
type ActiveError struct {
	Group string
	Out   string
	Tasks []string
}

func (e *ActiveError) Error() string {
	return fmt.Sprintf("an earlier Slurm submission of group %s into %s still has %d task(s) queued or running (%s): "+
		"follow it with `trtmc-qual status --out %s --group %s --wait`, adopt it with `run --resume`, or cancel it with `scancel %s`",
		e.Group, e.Out, len(e.Tasks), strings.Join(e.Tasks, " "), e.Out, e.Group, strings.Join(e.Tasks, " "))
}

// Run implements qual.Executor: prepare the group as a local run does,
// adopt (with --resume) what an earlier submission still runs, submit the
// rest as array jobs, follow every task to its end and write the tables.
func (e *Executor) Run(ctx context.Context, opts qual.Options) (*qual.Outcome, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if err := e.Config.Validate(); err != nil {
		return nil, &qual.UsageError{Err: err}
	}
	if len(e.Task) == 0 {
		return nil, errors.New("slurm executor: no task command")
	}
	out, err := filepath.Abs(opts.Out)
	if err != nil {
		return nil, err
	}
	opts.Out = out
	prep, err := qual.Prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer prep.Release() // the group's evidence lock, held while this driver submits and follows
	cl := client{runner: e.Runner, dir: e.Config.CommandsDir}
	group := prep.Group.Name
	live, err := liveTasks(ctx, cl, out, group, opts.Resume)
	if err != nil {
		return nil, err
	}
	nonce, err := newSubmission()
	if err != nil {
		return nil, err
	}
	rec := &Record{Schema: RecordSchema, Group: group, Out: out, SubmittedAt: opts.Now().UTC(), Submission: nonce,
		Workload: prep.Group.Workload, Arrays: []Array{}, Tasks: []TaskRef{}}
	adopted := map[string]bool{}
	for _, t := range live {
		t.Adopted = true
		logf(opts.Log, "resume: %s: adopting Slurm task %s of the earlier submission (still queued or running)", t.Profile, t.ID())
		rec.Tasks = append(rec.Tasks, t)
		adopted[t.Profile] = true
	}
	results, toRun := selectToRun(prep, adopted, opts)
	arrays, err := e.plan(toRun, opts.Families)
	if err != nil {
		return nil, &qual.UsageError{Err: err}
	}
	if err := e.submit(ctx, cl, rec, arrays, opts.Log); err != nil {
		return nil, err
	}
	if e.Detach {
		logf(opts.Log, "detached: follow with `trtmc-qual status --out %s --group %s --wait`", out, group)
		return &qual.Outcome{Group: group, Submitted: e.JobIDs}, nil
	}
	return e.follow(ctx, prep, rec, results, opts)
}

// liveTasks are the tasks of an earlier submission of the group into out
// that Slurm still has queued or running. They refuse a new submission;
// --resume adopts them all (selected or not: the new record replaces the
// old one, and nothing of the group may run unrecorded).
func liveTasks(ctx context.Context, cl client, out, group string, resume bool) ([]TaskRef, error) {
	prev, err := ReadRecord(out, group)
	if err != nil || prev == nil {
		return nil, err
	}
	active, err := activeTasks(ctx, cl, prev.Tasks)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &qual.SetupError{Err: fmt.Errorf("query the earlier submission's tasks: %w", err)}
	}
	if len(active) > 0 && !resume {
		ids := make([]string, len(active))
		for i, t := range active {
			ids[i] = t.ID()
		}
		return nil, &ActiveError{Group: group, Out: out, Tasks: ids}
	}
	return active, nil
}

// selectToRun sorts the selected profiles: adopted ones are left to their
// task, an excluded one gets its row at once, a finished one with the
// same run key is kept with --resume; the rest are submitted.
func selectToRun(prep *qual.Prepared, adopted map[string]bool, opts qual.Options) (map[string]*verdict.Result, []*inventory.Profile) {
	results := map[string]*verdict.Result{}
	var toRun []*inventory.Profile
	for _, p := range prep.Profiles {
		switch {
		case adopted[p.ID]:
		case p.Exclusion != nil:
			results[p.ID] = prep.Excluded(p)
		case opts.Resume:
			if r, ok := prep.Finished(p); ok {
				logf(opts.Log, "resume: %s: finished result with the same run key (%s), not submitted", p.ID, r.Verdict)
				results[p.ID] = r
				continue
			}
			toRun = append(toRun, p)
		default:
			toRun = append(toRun, p)
		}
	}
	return results, toRun
}

// follow follows every task of the submission to its end, then writes the
// group's tables; the outcome holds the selected profiles' rows.
func (e *Executor) follow(ctx context.Context, prep *qual.Prepared, rec *Record, results map[string]*verdict.Result, opts qual.Options) (*qual.Outcome, error) {
	f := &Follower{Runner: e.Runner, CommandsDir: e.Config.CommandsDir, Record: rec, Profiles: profileMap(prep.Group.Profiles),
		Log: opts.Log, Now: opts.Now, Poll: e.Config.poll(), Wait: e.Wait, CancelOnInterrupt: true, Watch: true, RowExits: e.RowExits}
	settled, ferr := f.Follow(ctx)
	for k, v := range settled {
		results[k] = v
	}
	outcome := &qual.Outcome{Group: prep.Group.Name}
	for _, p := range prep.Profiles {
		if r := results[p.ID]; r != nil {
			outcome.Results = append(outcome.Results, r)
		}
	}
	if err := prep.WriteTables(); err != nil {
		return outcome, err
	}
	if ferr != nil {
		return outcome, ferr
	}
	return outcome, nil
}

func profileMap(ps []*inventory.Profile) map[string]*inventory.Profile {
	m := make(map[string]*inventory.Profile, len(ps))
	for _, p := range ps {
		m[p.ID] = p
	}
	return m
}

// activeTasks returns the tasks Slurm still has queued or running.
func activeTasks(ctx context.Context, cl client, tasks []TaskRef) ([]TaskRef, error) {
	states, err := queryStates(ctx, cl, tasks)
	if err != nil {
		return nil, err
	}
	var out []TaskRef
	for _, t := range tasks {
		if st, ok := states[t.ID()]; ok && !st.Terminal() {
			out = append(out, t)
		}
	}
	return out, nil
}

// queryStates asks scontrol about every array job of the tasks and returns
// the state of each task that Slurm knows as one of its submission's:
// Slurm's record must carry the task's submission comment, so a job id
// that another cluster or a reset slurmctld gave to someone else's job is
// never taken for the task (it is absent from the map, like a task Slurm
// no longer knows). A task without a record of its own takes the array's
// record for such tasks (restIndex), when there is one.
func queryStates(ctx context.Context, cl client, tasks []TaskRef) (map[string]TaskState, error) {
	byArray := map[string]map[int]TaskState{}
	for _, id := range arrayJobIDs(tasks) {
		ts, err := cl.show(ctx, id)
		if errors.Is(err, errUnknownJob) {
			continue
		}
		if err != nil {
			return nil, err
		}
		m := map[int]TaskState{}
		for _, t := range ts {
			m[t.Index] = t
		}
		byArray[id] = m
	}
	states := map[string]TaskState{}
	for _, t := range tasks {
		m := byArray[t.ArrayJobID]
		st, ok := m[t.Index]
		if !ok {
			if st, ok = m[restIndex]; ok {
				st.Index = t.Index
			}
		}
		if ok && t.Submission != "" && st.Comment == Comment(t.Submission) {
			states[t.ID()] = st
		}
	}
	return states, nil
}

// shape is one resource request: profiles with the same one share an array.
type shape struct {
	gpus       int
	minutes    int
	constraint string
}

type plannedArray struct {
	shape    shape
	profiles []*inventory.Profile
}

// plan groups the profiles by resource request, in inventory order: one
// array job per distinct request (a group whose profiles all ask the same
// is one array job).
func (e *Executor) plan(profiles []*inventory.Profile, fams *families.Config) ([]plannedArray, error) {
	var out []plannedArray
	index := map[shape]int{}
	for _, p := range profiles {
		s, err := e.shapeOf(p, fams)
		if err != nil {
			return nil, err
		}
		i, ok := index[s]
		if !ok {
			i = len(out)
			index[s] = i
			out = append(out, plannedArray{shape: s})
		}
		out[i].profiles = append(out[i].profiles, p)
	}
	return out, nil
}

func (e *Executor) shapeOf(p *inventory.Profile, fams *families.Config) (shape, error) {
	s := shape{gpus: GPUsNeeded(p)}
	limit := e.Config.TimeLimit
	if limit <= 0 {
		var fam *families.Family
		if fams != nil {
			fam = fams.Families[p.Family]
		}
		limit = qual.TimeLimit(fam)
	}
	s.minutes = int((limit + time.Minute - 1) / time.Minute)
	c, err := constraintFor(p, e.Config.Constraints)
	if err != nil {
		return s, err
	}
	s.constraint = c
	return s, nil
}

// constraintFor is the --constraint of a profile: its hardware scopes
// mapped to node features, OR-ed. A profile none of whose scopes is mapped
// gets none; one with some scopes mapped and others not is a configuration
// error (it would silently never run where the unmapped scopes are).
func constraintFor(p *inventory.Profile, m map[string]string) (string, error) {
	var feats, mapped, unmapped []string
	for _, h := range p.Hardware {
		if f, ok := m[strings.ToLower(h)]; ok {
			feats = append(feats, f)
			mapped = append(mapped, h)
		} else {
			unmapped = append(unmapped, h)
		}
	}
	if len(feats) == 0 {
		return "", nil
	}
	if len(unmapped) > 0 {
		return "", fmt.Errorf("profile %s (%s): hardware %s has no slurm.constraints entry while %s has one; map every scope the profile lists",
			p.ID, p.Where("hardware"), strings.Join(unmapped, ", "), strings.Join(mapped, ", "))
	}
	sort.Strings(feats)
	return strings.Join(feats, "|"), nil
}

// sbatchArgs is the sbatch command line of one array (without --parsable).
func (e *Executor) sbatchArgs(group, out, submission string, a plannedArray, script string) []string {
	c := e.Config
	array := fmt.Sprintf("0-%d", len(a.profiles)-1)
	if c.MaxParallel > 0 {
		array += "%" + strconv.Itoa(c.MaxParallel)
	}
	args := []string{"--job-name=trtmc-qual-" + group, "--array=" + array, "--output=" + logPattern(out, group),
		"--open-mode=append", "--time=" + strconv.Itoa(a.shape.minutes), "--comment=" + Comment(submission)}
	if c.Partition != "" {
		args = append(args, "--partition="+c.Partition)
	}
	if c.Account != "" {
		args = append(args, "--account="+c.Account)
	}
	switch c.GPURequest {
	case "", GPURequestGres:
		args = append(args, fmt.Sprintf("--gres=gpu:%d", a.shape.gpus))
	case GPURequestGPUsPerTask:
		args = append(args, "--ntasks=1", fmt.Sprintf("--gpus-per-task=%d", a.shape.gpus))
	}
	if c.CPUsPerTask > 0 {
		args = append(args, "--cpus-per-task="+strconv.Itoa(c.CPUsPerTask))
	}
	if a.shape.constraint != "" {
		args = append(args, "--constraint="+a.shape.constraint)
	}
	args = append(args, c.SbatchArgs...)
	return append(args, script)
}

// submit writes each array's batch script and submits it. A rejected
// submission cancels the arrays already submitted and is a setup error
// carrying Slurm's own message.
func (e *Executor) submit(ctx context.Context, cl client, rec *Record, arrays []plannedArray, log io.Writer) error {
	e.JobIDs = nil
	if err := os.MkdirAll(filepath.Join(groupDir(rec.Out, rec.Group), "logs"), 0o755); err != nil {
		return err
	}
	prev, err := fileio.ReadFile(context.Background(), recordPath(rec.Out, rec.Group), fileio.MaxDocumentBytes)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(arrays) == 0 {
		// Nothing new (everything adopted, finished or excluded).
		return writeRecord(rec)
	}
	stamp := rec.SubmittedAt.Format("20060102T150405Z")
	for k, a := range arrays {
		ids := make([]string, len(a.profiles))
		for i, p := range a.profiles {
			ids[i] = p.ID
		}
		script := filepath.Join(groupDir(rec.Out, rec.Group), fmt.Sprintf("submit-%s-%d.sh", stamp, k+1))
		if err := fileio.WriteFileMode(script, []byte(batchScript(rec.Group, rec.Submission, ids, e.Task)), 0o755); err != nil {
			return err
		}
		args := e.sbatchArgs(rec.Group, rec.Out, rec.Submission, a, script)
		// sbatch is not interrupted: a job Slurm accepted must not go
		// unrecorded because its id was never read.
		id, err := cl.submit(context.WithoutCancel(ctx), args)
		if err != nil {
			e.cancelSubmitted(ctx, cl, rec, prev)
			//lint:ignore ST1005 Slurm is a name; users grep for this message (docs/slurm.md)
			return &qual.SetupError{Err: fmt.Errorf("Slurm rejected the submission of group %s (%s): %w", rec.Group, strings.Join(ids, ", "), err)}
		}
		e.JobIDs = append(e.JobIDs, id)
		rec.Arrays = append(rec.Arrays, Array{JobID: id, Script: script, Sbatch: append([]string{cl.bin("sbatch"), "--parsable"}, args...),
			GPUs: a.shape.gpus, TimeLimit: strconv.Itoa(a.shape.minutes), Constraint: a.shape.constraint, Profiles: ids})
		for i, p := range ids {
			rec.Tasks = append(rec.Tasks, TaskRef{Profile: p, ArrayJobID: id, Index: i, Submission: rec.Submission})
		}
		// Recorded at once: nothing of the group may run unrecorded.
		if err := writeRecord(rec); err != nil {
			e.cancelSubmitted(ctx, cl, rec, prev)
			return fmt.Errorf("record the Slurm submission (its jobs were cancelled): %w", err)
		}
		if ctx.Err() != nil {
			e.cancelSubmitted(ctx, cl, rec, prev)
			return ctx.Err()
		}
		req := "no GPU request"
		if e.Config.GPURequest != GPURequestNone {
			req = fmt.Sprintf("%d GPU(s) each", a.shape.gpus)
		}
		logf(log, "group %s: submitted Slurm array job %s: %d task(s) (%s), %s, time limit %d min%s",
			rec.Group, id, len(ids), strings.Join(ids, ", "), req, a.shape.minutes, constraintNote(a.shape.constraint))
	}
	return nil
}

// cancelSubmitted cancels the arrays this run submitted so far and puts
// the earlier record back (or removes this one): a submission that did
// not go through leaves nothing to follow.
func (e *Executor) cancelSubmitted(ctx context.Context, cl client, rec *Record, prev []byte) {
	if len(e.JobIDs) > 0 {
		_ = cl.cancel(context.WithoutCancel(ctx), e.JobIDs)
	}
	path := recordPath(rec.Out, rec.Group)
	if prev != nil {
		_ = fileio.WriteFileMode(path, prev, 0o644)
	} else {
		_ = os.Remove(path)
	}
}

func constraintNote(c string) string {
	if c == "" {
		return ""
	}
	return ", constraint " + c
}

// batchScript is the script of one array job: task i runs the trtmc-qual
// command line with --only ids[i], with the submission's nonce in its
// environment (it goes into the row's provenance). Every word is
// shell-quoted; profile ids are also checked by the inventory's id rules.
func batchScript(group, submission string, ids []string, task []string) string {
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "# trtmc-qual: Slurm array job of group %s. Task i qualifies profile ids[i] with\n", group)
	b.WriteString("# `trtmc-qual run --only ID`, the same pipeline as a local run, into the shared evidence root.\n")
	b.WriteString("set -u\n")
	b.WriteString("ids=(" + reports.ShellQuote(ids) + ")\n")
	b.WriteString("id=${ids[${SLURM_ARRAY_TASK_ID:?not a Slurm array task}]}\n")
	b.WriteString("export " + SubmissionEnv + "=" + text.ShellQuote(submission) + "\n")
	b.WriteString(`echo "trtmc-qual: Slurm task ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}: profile $id on ${SLURMD_NODENAME:-$(hostname)}, GPUs ${SLURM_JOB_GPUS:-none}" >&2` + "\n")
	b.WriteString("exec " + reports.ShellQuote(task) + ` --only "$id"` + "\n")
	return b.String()
}

func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "trtmc-qual: "+format+"\n", args...)
}
