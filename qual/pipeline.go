// Package qual is the qualification pipeline: for each checkpoint of a
// group it starts the native server, runs the family's correctness case,
// drives AIPerf, runs the native Task over the exact payloads sent, joins
// native and HTTP answers by request identity, and writes the result row
// and its evidence. Checkpoints run in parallel, each on its own GPUs
// (tp x cp of them) or CPU slot (slots.go).
package qual

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Options configure one `trtmc-qual run --group G`.
type Options struct {
	Inventory *inventory.Inventory
	Families  *families.Config
	Registry  families.Registry
	Group     string
	// Only limits the run to these profile ids (empty: all).
	Only []string
	// Out is the evidence root; a checkpoint's evidence is Out/<group>/<id>/.
	Out string
	// Publish is what the group's published tables (results.md, .html)
	// map: the host's roots and identity (see reports/publish.Scrubber).
	Publish publish.Publisher
	// BinDir is {bin} in family argv templates.
	BinDir string
	// Self is {self}: the trtmc-qual executable, whose hidden `adapter`
	// verbs the TRTMC families call.
	Self string

	// AIPerf is how AIPerf is run.
	AIPerf AIPerfOptions
	// Hardware is where checkpoints run and how GPUs are checked.
	Hardware HardwareOptions
	// Security is what servers may bind to and what must never be written.
	Security SecurityOptions
	// Provenance is recorded in every row.
	Provenance ProvenanceOptions

	// Resume skips checkpoints whose finished result has the same run key.
	Resume bool
	// Trials overrides the group workload's trials (`run --trials`; 0:
	// the workload's, 1 unless it says otherwise): each profile's warmup +
	// measured requests run that many times against its server, each
	// trial complete and joined.
	Trials int

	Runner proc.Runner
	// Log receives stage lines (stderr). Progress (nil: none) is told
	// each checkpoint's stage and request counts (progress.go); when both
	// are set, Log should be the Progress itself, so log lines and the
	// progress block never share a line.
	Log      io.Writer
	Progress *Progress
	Now      func() time.Time
}

// AIPerfOptions are how AIPerf is run.
type AIPerfOptions struct {
	// Bin is the aiperf executable.
	Bin string
	// Version is the AIPerf version the harness expects; AllowMismatch
	// runs another one (recorded, never qualifies).
	Version       string
	AllowMismatch bool
	// Tokenizer is the tokenizer for AIPerf chat when a profile names none.
	Tokenizer string
}

// HardwareOptions are where checkpoints run and how GPUs are checked.
type HardwareOptions struct {
	// Pool is what checkpoints are scheduled on (NewPool); nil means one
	// CPU slot.
	Pool *Pool
	// AllowMismatch runs a profile whose inventory hardware scope does not
	// match the run's GPUs; the row records it and never qualifies.
	AllowMismatch bool
	// Probe probes the GPUs for the hygiene checks and provenance.
	Probe GPUProbe
	// MaxIdleUtilization is the highest GPU utilisation (%) counted as
	// idle before timing (default 10).
	MaxIdleUtilization int
	// ReleaseWait bounds the wait for a stopped run's GPU memory to be
	// released (default 15 s).
	ReleaseWait time.Duration
}

// SecurityOptions are what servers may bind to and what must never be
// written.
type SecurityOptions struct {
	// Host is the address servers bind to (default 127.0.0.1).
	Host             string
	AllowNonLoopback bool
	// Secrets are values that must never reach evidence or logs.
	Secrets []string
	// SecretEnv names the environment variables whose values are secrets;
	// their values in a family's env are redacted too.
	SecretEnv []string
	// ServeToken is the bearer token servers require (TRTMC_SERVE_TOKEN);
	// AIPerf sends it as --api-key. A family's env may override it.
	ServeToken string
}

// ProvenanceOptions are recorded in every row.
type ProvenanceOptions struct {
	HarnessVersion string
	HarnessCommit  string
	// Slurm is the Slurm task this run is, when it runs inside one (a task
	// of `run --executor slurm`).
	Slurm *verdict.SlurmTask
	// Command is the reproducible trtmc-qual invocation, without --only,
	// every word quoted by text.ShellQuote.
	Command string
	// Roots are the run's named roots (its evidence root, the checkouts...):
	// published text writes paths under them as $NAME/...
	Roots []verdict.Root
}

// Outcome is what a group run produced.
type Outcome struct {
	Group   string
	Results []*verdict.Result
	// Submitted are the jobs an executor submitted and did not follow
	// (run --executor slurm --detach): their ids, for the caller to print.
	Submitted []string
}

// SetupError is a problem that stops the whole run before any checkpoint
// (AIPerf missing or the wrong version, a GPU the host lacks): a setup
// error. Which exit status each kind of error gives is decided in one
// table, cmd/trtmc-qual/exitcodes.go.
type SetupError struct{ Err error }

func (e *SetupError) Error() string { return e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// UsageError is a selection that names nothing (an unknown group or
// profile, a malformed --gpus): a usage error (cmd/trtmc-qual's table).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Run qualifies every selected checkpoint of opts.Group. A qualification
// outcome (failed rows) is not an error; the returned error is for setup
// problems, I/O failures and interruption.
func Run(ctx context.Context, opts Options) (*Outcome, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Security.Host == "" {
		opts.Security.Host = "127.0.0.1"
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if !opts.Security.AllowNonLoopback && !IsLoopback(opts.Security.Host) {
		return nil, &SetupError{fmt.Errorf("refusing to bind servers to %s: not a loopback address (allow it explicitly)", opts.Security.Host)}
	}
	prep, err := prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer prep.Release()
	opts, gr, profiles := prep.gr.opts, prep.gr, prep.Profiles
	logf(opts.Log, "group %s: %d checkpoint(s) on %s, aiperf %s", opts.Group, len(profiles), opts.Hardware.Pool.Describe(), gr.aiperf.Got)

	results := make([]*verdict.Result, len(profiles))
	jobs := make([]schedJob, len(profiles))
	var queue []int
	width := GPUsNeeded
	if opts.Hardware.Pool.CPU() {
		width = func(*inventory.Profile) int { return 1 } // one CPU slot each
	}
	for _, i := range longestFirst(opts.Out, opts.Group, profiles, width) {
		p := profiles[i]
		if p.Exclusion != nil {
			results[i] = gr.checkpoint(ctx, p, Slot{Name: "none"}, placement{})
			continue
		}
		jobs[i].pl = opts.Hardware.Pool.place(p, opts.Families.Families[p.Family], opts.Hardware.AllowMismatch)
		if r := jobs[i].pl.notRun; r != nil {
			results[i] = gr.notRun(p, *r)
			continue
		}
		queue = append(queue, i)
	}
	opts.Progress.plan(len(queue), previousStages(opts.Out, opts.Group, profiles))
	stopProgress := opts.Progress.run(ctx, time.Second)
	newScheduler(opts.Hardware.Pool).run(ctx, jobs, queue,
		func(i int, slot Slot) { results[i] = gr.checkpoint(ctx, profiles[i], slot, jobs[i].pl) },
		func(i int) {
			cause := ctx.Err()
			if cause == nil {
				cause = fmt.Errorf("no slot of %s can hold it", opts.Hardware.Pool.Describe())
			}
			results[i] = gr.notStarted(profiles[i], cause)
		})
	stopProgress()

	if err := writeGroupTables(opts.Out, opts.Group, opts.Publish); err != nil {
		return &Outcome{Group: opts.Group, Results: results}, err
	}
	out := &Outcome{Group: opts.Group, Results: results}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	return out, nil
}

// checkOut refuses an evidence root (or its group directory) that exists
// but is not a directory: a usage mistake (exit 2), named, not an I/O
// failure found halfway.
func checkOut(out, group string) error {
	for _, dir := range []string{out, filepath.Join(out, group)} {
		err := fileio.CheckDir(dir)
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if errors.Is(err, fileio.ErrNotRegular) {
			return &UsageError{fmt.Errorf("--out: %w", err)}
		}
		return fmt.Errorf("evidence directory: %w", err)
	}
	return nil
}

// prepare does what every executor does before any checkpoint runs: it
// selects the profiles, checks AIPerf once for the group (without it nothing
// can qualify) and writes the group's inventory snapshot.
func prepare(ctx context.Context, opts Options) (*Prepared, error) {
	if err := checkOut(opts.Out, opts.Group); err != nil {
		return nil, err
	}
	for _, name := range append([]string{opts.Group}, opts.Only...) {
		if err := text.CheckName(name); err != nil {
			return nil, &UsageError{err}
		}
	}
	g, ok := opts.Inventory.Groups[opts.Group]
	if !ok {
		return nil, &UsageError{errors.New(inventory.WithHint(fmt.Sprintf("no group %q in the inventory (groups: %s)", opts.Group,
			strings.Join(opts.Inventory.GroupNames(), ", ")), opts.Group, opts.Inventory.GroupNames()))}
	}
	profiles, err := selectProfiles(g, opts.Only)
	if err != nil {
		return nil, err
	}
	if opts.Trials != 0 {
		if opts.Trials < 1 || opts.Trials > inventory.MaxTrials {
			return nil, &UsageError{fmt.Errorf("--trials must be between 1 and %d, got %d", inventory.MaxTrials, opts.Trials)}
		}
		cp := *g // the run's workload: the inventory's, with the flag's trials
		cp.Workload.Trials = &opts.Trials
		g = &cp
	}
	if opts.Hardware.Pool == nil {
		opts.Hardware.Pool = &Pool{CPUSlots: 1}
	}
	tmp, err := runTemp()
	if err != nil {
		return nil, err
	}
	prep, err := prepareIn(ctx, opts, g, profiles, tmp)
	if err != nil {
		os.RemoveAll(tmp)
	}
	return prep, err
}

// prepareIn is prepare with the run's private temporary directory made.
func prepareIn(ctx context.Context, opts Options, g *inventory.Group, profiles []*inventory.Profile, tmp string) (*Prepared, error) {
	driver := &aiperf.Driver{Runner: opts.Runner, Stderr: opts.Log, Env: TempEnv(tmp)}
	vc, err := driver.CheckVersion(ctx, opts.AIPerf.Bin, opts.AIPerf.Version, opts.AIPerf.AllowMismatch)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &SetupError{err}
	}
	// Only now is anything written: a run that cannot start leaves the
	// evidence of earlier runs (their inventory.json included) untouched.
	groupDir := filepath.Join(opts.Out, opts.Group)
	if err := os.MkdirAll(groupDir, 0o755); err != nil {
		return nil, fmt.Errorf("evidence directory: %w", err)
	}
	// One run at a time per evidence root and group, held until Release
	// (or the process ends): a second run would set aside the first one's
	// live directories. The flock dies with this process, however it ends.
	// A Slurm task is part of its driver's run, which holds the lock while
	// it submits and follows; the tasks of one array run side by side.
	var lock *evidence.Lock
	if opts.Provenance.Slurm == nil {
		if lock, err = evidence.LockDir(groupDir, evidence.ThisProcess(opts.Now())); err != nil {
			return nil, err
		}
	}
	snapshot, err := writeSnapshot(groupDir, g.Profiles)
	if err != nil {
		lock.Unlock()
		return nil, err
	}
	gr := &groupRun{opts: opts, group: g, aiperf: vc, driver: driver, ports: &portPool{used: map[int]bool{}}, tmp: tmp, snapshotSHA: snapshot}
	if freeze, err := pipFreeze(ctx, opts.Runner, opts.AIPerf.Bin, tmp); err != nil {
		logf(opts.Log, "group %s: pip freeze of AIPerf's environment not recorded: %v", opts.Group, err)
	} else {
		gr.pipFreeze, gr.pipFreezeSHA = freeze, fileio.SHA256(freeze)
	}
	gr.aiperfDist = aiperfDistribution(ctx, opts.AIPerf.Bin, vc.Got)
	gr.checkouts = readCheckouts(ctx, opts.Runner, opts.Provenance.Roots)
	for _, n := range reports.CheckoutNotes(gr.checkouts) {
		logf(opts.Log, "group %s: %s", opts.Group, n)
	}
	return &Prepared{Group: g, Profiles: profiles, gr: gr, lock: lock, tmp: tmp}, nil
}

// writeGroupTables renders OUT/<group>/results.* from the stored evidence,
// through the same code `trtmc-qual report` uses.
func writeGroupTables(out, group string, pub ...publish.Publisher) error {
	rep, err := reports.Load([]string{out}, group)
	if err != nil {
		return fmt.Errorf("group tables: %w", err)
	}
	rep.Publisher = publish.Publisher{}
	if len(pub) > 0 {
		rep.Publisher = pub[0]
	}
	return reports.WriteGroupFiles(filepath.Join(out, group), rep)
}

func selectProfiles(g *inventory.Group, only []string) ([]*inventory.Profile, error) {
	if len(only) == 0 {
		return g.Profiles, nil
	}
	want := map[string]bool{}
	for _, id := range only {
		want[id] = true
	}
	var out []*inventory.Profile
	for _, p := range g.Profiles {
		if want[p.ID] {
			out = append(out, p)
			delete(want, p.ID)
		}
	}
	if len(want) > 0 {
		var missing []string
		for id := range want {
			missing = append(missing, id)
		}
		sort.Strings(missing)
		for i, id := range missing {
			if h := inventory.DidYouMean(id, g.IDs()); h != "" {
				missing[i] += " (" + h + ")"
			}
		}
		return nil, &UsageError{fmt.Errorf("--only: no profile %s in group %s", strings.Join(missing, ", "), g.Name)}
	}
	return out, nil
}

// groupRun is what every checkpoint of one group run shares.
type groupRun struct {
	opts Options
	// stages are the stages each checkpoint goes through: pipeline, unless
	// a test gives its own.
	stages []stageDef
	group  *inventory.Group
	aiperf aiperf.VersionCheck
	driver *aiperf.Driver
	ports  *portPool
	// tmp is the run's private temporary directory (runTemp): each
	// checkpoint's children write their temporary files under it, in a
	// directory numbered by tmpSeq.
	tmp    string
	tmpSeq atomic.Int64
	// pipFreeze is `pip freeze --all` of AIPerf's environment (kept whole in
	// every checkpoint's evidence as pip_freeze.txt), pipFreezeSHA its sha256.
	pipFreeze    []byte
	pipFreezeSHA string
	// aiperfDist is AIPerf's installed distribution, checkouts the state of
	// the run's git checkouts: read once, recorded in every row.
	aiperfDist *verdict.Distribution
	checkouts  []verdict.Checkout
	// digests caches the digests of the servers' mapped files.
	digests digestCache
	// snapshotSHA is the sha256 of the inventory snapshot the run wrote
	// (OUT/<group>/inventory.json); every row records it.
	snapshotSHA string
	logMu       sync.Mutex
}

// aiperfDistribution is the installed distribution of the aiperf that
// runs, its METADATA and RECORD digested; its version must be the one
// `aiperf --version` printed (got), or the row records why not.
func aiperfDistribution(ctx context.Context, bin, got string) *verdict.Distribution {
	d, err := aiperf.FindDistInfo(ctx, bin)
	if err != nil {
		return &verdict.Distribution{Name: "aiperf", Version: got, Error: err.Error()}
	}
	out := &verdict.Distribution{Name: d.Name, Version: d.Version, DistInfo: d.Dir, MetadataSHA256: d.MetadataSHA256, RecordSHA256: d.RecordSHA256}
	if got != "" && d.Version != got {
		out.Error = fmt.Sprintf("the installed distribution is %s %s but `aiperf --version` printed %s", d.Name, d.Version, got)
	}
	return out
}

// writeSnapshot writes the group's inventory snapshot,
// OUT/<group>/inventory.json (reports.InventoryFile), atomically, and
// returns the sha256 of its bytes: each row of the run records it
// (provenance.inventory_snapshot_sha256), so that the latest row of an
// evidence root seals the snapshot beside it.
func writeSnapshot(groupDir string, profiles []*inventory.Profile) (string, error) {
	data, err := json.MarshalIndent(profiles, "", "  ")
	if err != nil {
		return "", fmt.Errorf("inventory snapshot: %w", err)
	}
	data = append(data, '\n')
	if err := fileio.WriteFile(filepath.Join(groupDir, reports.InventoryFile), data); err != nil {
		return "", err
	}
	return fileio.SHA256(data), nil
}

// pipFreeze is `pip freeze --all` of the virtual environment AIPerf runs
// in (the python beside the aiperf executable); an error says why there is
// none (no venv beside it, pip failed).
func pipFreeze(ctx context.Context, runner proc.Runner, aiperfBin, tmp string) ([]byte, error) {
	bin, err := exec.LookPath(aiperfBin)
	if err != nil {
		return nil, err
	}
	python := filepath.Join(filepath.Dir(bin), "python")
	if _, err := os.Stat(python); err != nil {
		return nil, fmt.Errorf("no python beside %s: %w", bin, err)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := runner.Run(ctx, proc.Spec{Name: "pip-freeze", Argv: []string{python, "-m", "pip", "freeze", "--all"}, Env: TempEnv(tmp), Stdout: &out}); err != nil {
		return nil, err
	}
	if out.Len() == 0 {
		return nil, fmt.Errorf("%s -m pip freeze printed nothing", python)
	}
	return out.Bytes(), nil
}

func (gr *groupRun) logf(format string, args ...any) {
	gr.logMu.Lock()
	defer gr.logMu.Unlock()
	logf(gr.opts.Log, format, args...)
}

// logf writes one stage line to stderr. Children's output quoted in it
// (a stderr tail in a reason) has its control, bidirectional and invisible
// characters escaped: nothing a child prints acts on the terminal.
func logf(w io.Writer, format string, args ...any) {
	fmt.Fprint(w, text.Printable(fmt.Sprintf("trtmc-qual: "+format, args...))+"\n")
}

// notRun is the result of a checkpoint the scheduler does not start on
// this pool (too few GPUs, another hardware scope, a GPU family without a
// GPU): the scheduler's problem, whose reason Judge makes (not-run, or a
// setup error).
func (gr *groupRun) notRun(p *inventory.Profile, why verdict.Problem) *verdict.Result {
	cr := gr.newCheckpointRun(p, Slot{Name: "none"}, placement{})
	cr.res.Problems = append(cr.res.Problems, why)
	verdict.Judge(&cr.res)
	cr.res.EndedAt = cr.now()
	gr.logf("%s: NOT-RUN (%s: %s)", p.ID, why.Stage, why.Message)
	if err := cr.prepareDir(); err == nil {
		_ = cr.writeResult()
	}
	return &cr.res
}

// notStarted is the result of a checkpoint that never got a slot because
// the run was interrupted first.
func (gr *groupRun) notStarted(p *inventory.Profile, cause error) *verdict.Result {
	cr := gr.newCheckpointRun(p, Slot{Name: "none"}, placement{})
	cr.res.Problems = append(cr.res.Problems, verdict.Problem{Stage: "schedule", Code: verdict.CodeInterrupted, Message: "interrupted before the checkpoint started: " + cause.Error()})
	verdict.Judge(&cr.res)
	cr.res.EndedAt = cr.now()
	if err := cr.prepareDir(); err == nil {
		_ = cr.writeResult()
	}
	return &cr.res
}

// portPool hands out free loopback ports, never the same one twice in a run.
type portPool struct {
	mu   sync.Mutex
	used map[int]bool
}

// IsLoopback accepts "localhost" and loopback IP literals only: a name such
// as "127.example.com" may resolve anywhere.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}
