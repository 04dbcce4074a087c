package qual

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Default stage deadlines when the family configuration sets none.
const (
	defaultPrepareTimeout     = 5 * time.Minute
	defaultStartupTimeout     = 2 * time.Minute
	defaultCorrectnessTimeout = 10 * time.Minute
	defaultNativeTimeout      = 10 * time.Minute
	defaultAIPerfTimeout      = 30 * time.Minute
	defaultStopGrace          = 10 * time.Second
)

// Evidence file names inside a checkpoint's directory.
const (
	fileResult      = "result.json"
	fileServerLog   = "server.log"
	fileRecords     = streamjoin.FileServerRecords
	fileCorrectness = "correctness.json"
	fileCorrectLog  = "correctness.log"
	fileNativeIn    = "native_requests.jsonl"
	fileNativeOut   = streamjoin.FileNative
	fileNativeLog   = "native.log"
	// fileNativeMeta is where a native runner may say which path answered
	// and what its task_ms measures (families/trtmc's adapter writes it).
	fileNativeMeta = "native_meta.json"
	fileDataset    = streamjoin.FileDataset
	filePipFreeze  = "pip_freeze.txt"
	dirAIPerf      = "aiperf"
)

// checkpointRun is one checkpoint's state as it moves through the stages
// (stages.go). The first block is set when the run is made
// (newCheckpointRun); every other field says which stage sets it, and is
// read only by the stages after that one.
type checkpointRun struct {
	gr      *groupRun // the group run this checkpoint belongs to: options, group, pip freeze, log
	profile *inventory.Profile
	family  *families.Family
	slot    Slot      // the GPUs (or CPU slot) the scheduler gave it
	pl      placement // why the slot fits the profile
	dir     string    // its evidence directory, OUT/<group>/<profile>
	// tmp is its children's temporary directory, inside the run's private
	// one (TempEnv); removed when the checkpoint ends.
	tmp string
	// marker is this checkpoint's value of TRTMC_QUAL_CHECKPOINT.
	marker string
	res    verdict.Result     // the row, filled in by every stage
	red    *evidence.Redactor // the secrets its evidence must not hold

	// preflight: the served bundle and the corpus (prepared when missing,
	// their pins checked), the server program, the tokenizer AIPerf chat
	// loads, and (on GPUs) the compute processes the idle check found on
	// the slot before anything started, foreign by definition.
	bundle      string
	corpus      string
	binary      string
	tokenizer   string
	preexisting map[int]bool
	// server: the port it listens on, the running server and its pid
	// (= its process group); stop-server clears server.
	port      int
	server    proc.Process
	serverPID int
	// aiperf: the dataset sent and AIPerf's runs, one a trial (their
	// artifacts); run is the last.
	dataset *aiperf.Dataset
	run     *aiperf.Run
	runs    []*aiperf.Run
	// runStages: the first stage that broke.
	stageErr error
	// server, aiperf, stop-server and every child run: the time spent
	// inside child processes so far, for the harness-overhead figure
	// (result.json stages[].child_ms).
	childMS float64
}

func (gr *groupRun) newCheckpointRun(p *inventory.Profile, slot Slot, pl placement) *checkpointRun {
	o := gr.opts
	cr := &checkpointRun{gr: gr, profile: p, family: o.Families.Families[p.Family], slot: slot, pl: pl,
		dir: filepath.Join(o.Out, gr.group.Name, p.ID)}
	var famEnv map[string]string
	if cr.family != nil {
		famEnv = cr.family.Env
	}
	cr.red = evidence.NewRedactor(secretValues(o, famEnv)...)
	cr.res = BaseResult(gr.group.Name, &gr.group.Workload, p)
	cr.res.Command = cr.red.String(o.Provenance.Command + " --only " + text.ShellQuote(p.ID))
	cr.res.StartedAt = o.Now().UTC()
	if cr.family != nil {
		cr.res.Route = cr.family.Route
		cr.res.Answers = cr.family.Semantics.Stated()
		cr.res.Answers.ServedModel = cr.profile.Served()
		cr.res.Provenance.FamilyCriteriaSHA256 = verdict.CriteriaDigest(cr.family.Route, cr.family.Semantics)
	}
	prov := &cr.res.Provenance
	prov.HarnessVersion, prov.HarnessCommit, prov.AIPerfVersion = o.Provenance.HarnessVersion, o.Provenance.HarnessCommit, gr.aiperf.Got
	prov.Host, prov.PipFreezeSHA256, prov.GoVersion, prov.Slurm = hostname(), gr.pipFreezeSHA, runtime.Version(), o.Provenance.Slurm
	prov.AIPerfVersionRequired, prov.InventorySnapshotSHA256 = o.AIPerf.Version, gr.snapshotSHA
	prov.AIPerfDist, prov.Checkouts = gr.aiperfDist, slices.Clone(gr.checkouts)
	prov.Roots, prov.HostTopDirs = o.Provenance.Roots, o.Publish.Identity.TopDirs
	prov.HostUsers = slices.Compact(slices.Sorted(slices.Values(o.Publish.Identity.Users)))
	cr.marker = fmt.Sprintf("%s/%s/%d/%d", gr.group.Name, p.ID, os.Getpid(), cr.res.StartedAt.UnixNano())
	prov.HardwareScope = pl.scope
	if pl.mismatch != "" {
		prov.HardwareMismatch = pl.mismatch
		cr.res.Problems = append(cr.res.Problems, verdict.Problem{Stage: "schedule", Code: verdict.CodeHardwareMismatchAllowed,
			Message: pl.mismatch + "; run anyway (--allow-hardware-mismatch), so the row cannot qualify"})
	}
	if gr.aiperf.MismatchAllowed {
		cr.res.Provenance.AIPerfVersionMismatch = fmt.Sprintf("aiperf %s used where %s is required (allowed explicitly)", gr.aiperf.Got, gr.aiperf.Want)
	}
	return cr
}

func (cr *checkpointRun) now() time.Time { return cr.gr.opts.Now().UTC() }

// checkpoint runs every stage for one profile and always returns a result.
func (gr *groupRun) checkpoint(ctx context.Context, p *inventory.Profile, slot Slot, pl placement) *verdict.Result {
	cr := gr.newCheckpointRun(p, slot, pl)
	if p.Exclusion != nil {
		cr.res.Exclusion = p.Exclusion.Reason
		verdict.Judge(&cr.res)
		cr.res.EndedAt = cr.now()
		gr.logf("%s: excluded: %s", p.ID, p.Exclusion.Reason)
		// An earlier excluded result is replaced; real evidence is set aside.
		if prev, err := readResult(filepath.Join(cr.dir, fileResult)); err != nil || prev.Verdict != verdict.VerdictExcluded {
			if err := cr.prepareDir(); err != nil {
				return &cr.res
			}
		}
		_ = cr.writeResult()
		return &cr.res
	}
	key, keyErr := cr.runKey(ctx)
	cr.res.RunKey = key
	if gr.opts.Resume && keyErr == nil {
		if prev, ok := cr.finishedWithKey(key); ok {
			gr.logf("%s: resume: finished result with the same run key (%s), skipping", p.ID, prev.Verdict)
			return prev
		}
	}
	if err := cr.prepareDir(); err != nil {
		cr.fail("preflight", verdict.CodeEvidenceDir, err)
		verdict.Judge(&cr.res)
		cr.res.EndedAt = cr.now()
		return &cr.res
	}
	if err := cr.makeTemp(); err != nil {
		cr.fail("preflight", verdict.CodeEvidenceDir, err)
		verdict.Judge(&cr.res)
		cr.res.EndedAt = cr.now()
		return &cr.res
	}
	defer os.RemoveAll(cr.tmp)
	gr.logf("%s: start on slot %s -> %s", p.ID, slot.Name, cr.dir)
	gr.opts.Progress.begin(p.ID)
	defer gr.opts.Progress.end(p.ID)
	defer cr.stopServer() // whatever happens, the server does not outlive its checkpoint
	stages := gr.stages
	if stages == nil {
		stages = pipeline
	}
	cr.runStages(ctx, stages)
	cr.stopServer()
	if ctx.Err() != nil && len(cr.slot.GPUs) > 0 && !cr.ranStage("gpu-release") {
		// Interrupted: the release check still runs (on its own deadline),
		// so a Ctrl-C that left memory on the GPU is in the evidence.
		cr.stage("gpu-release", func() error { return cr.gpuRelease(ctx) })
	}
	cr.finish(ctx)
	if err := cr.writeResult(); err != nil {
		gr.logf("%s: cannot write result: %v", p.ID, err)
		cr.fail("report", verdict.CodeWriteFailed, err)
		verdict.Judge(&cr.res)
	}
	gr.opts.Progress.finished(p.ID)
	gr.logf("%s: %s%s", p.ID, strings.ToUpper(cr.res.Verdict), reasonSummary(cr.res.Reasons))
	return &cr.res
}

// runStages runs the stages in order until ctx ends. After a stage broke,
// the rest are skipped except the always stages, and the accounts stages
// when AIPerf reported requests.
func (cr *checkpointRun) runStages(ctx context.Context, stages []stageDef) {
	for _, st := range stages {
		if ctx.Err() != nil {
			break
		}
		if cr.stageErr != nil && !st.always && !(st.accounts && cr.run != nil && len(cr.run.Requests) > 0) {
			cr.stage(st.name, func() error { return errSkipped })
			continue
		}
		if cr.gr.opts.Progress != nil {
			cr.gr.opts.Progress.stage(cr.profile.ID, st.name)
		} else {
			cr.gr.logf("%s: stage %s", cr.profile.ID, st.name)
		}
		cr.stage(st.name, func() error { return st.run(cr, ctx) })
	}
}

var errSkipped = errors.New("skipped: an earlier stage failed")

// stage runs one named stage, timing it by the run's clock and recording
// its outcome; the stage line that follows says how long it took.
func (cr *checkpointRun) stage(name string, fn func() error) {
	start := cr.gr.opts.Now()
	before := cr.childMS
	err := fn()
	st := verdict.Stage{Name: name, Status: verdict.StageOK, DurationMS: ms(cr.gr.opts.Now().Sub(start)), ChildMS: cr.childMS - before}
	defer func() { cr.gr.opts.Progress.stageDone(cr.profile.ID, st) }()
	switch {
	case err == nil:
	case errors.Is(err, errSkipped):
		st.Status = verdict.StageSkipped
	case errors.Is(err, context.Canceled):
		st.Status = verdict.StageInterrupted
		st.Error = err.Error()
	case errors.As(err, new(*stopError)):
		// A fact of the row stops the checkpoint; Judge makes its reason.
		st.Status = verdict.StageError
		st.Error = cr.red.String(err.Error())
		if cr.stageErr == nil {
			cr.stageErr = err
		}
	default:
		st.Status = verdict.StageError
		st.Error = cr.red.String(err.Error())
		if cr.stageErr == nil {
			cr.stageErr = err
		}
		var se *stageError
		st.Code = verdict.CodeStageFailed
		if errors.As(err, &se) {
			st.Code = se.code
		}
		cr.res.Problems = append(cr.res.Problems, verdict.Problem{Stage: name, Code: st.Code, Message: st.Error})
	}
	cr.res.Stages = append(cr.res.Stages, st)
}

// stageError is a stage that broke, with a machine-readable code.
type stageError struct {
	code verdict.Code
	err  error
}

func (e *stageError) Error() string { return e.err.Error() }
func (e *stageError) Unwrap() error { return e.err }

// stageFailure is a stage that broke, with its reason code.
func stageFailure(code verdict.Code, err error) error { return &stageError{code: code, err: err} }

// stopError stops a checkpoint on a fact its row records, whose reason
// Judge makes (the bundle digested is not the one the inventory pins):
// the stage ends in error and the rest are skipped, but no problem is
// recorded, so one fact gives one reason.
type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }
func (e *stopError) Unwrap() error { return e.err }

// stopCheckpoint is a stage that stops the checkpoint on a recorded fact.
func stopCheckpoint(err error) error { return &stopError{err: err} }

func (cr *checkpointRun) fail(stage string, code verdict.Code, err error) {
	cr.res.Problems = append(cr.res.Problems, verdict.Problem{Stage: stage, Code: code, Message: cr.red.String(err.Error())})
	if cr.stageErr == nil {
		cr.stageErr = err
	}
}

// runChild runs a short-lived family command with a deadline, recording
// its argv and exit in the provenance.
func (cr *checkpointRun) runChild(ctx context.Context, stage string, argv []string, logFile string, timeout time.Duration) (proc.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	logf, err := os.Create(filepath.Join(cr.dir, logFile))
	if err != nil {
		return proc.Result{}, err
	}
	defer logf.Close()
	res, err := cr.gr.opts.Runner.Run(ctx, proc.Spec{Name: stage, Argv: argv, Stdout: logf, Stderr: logf,
		Env: cr.childEnv(), Grace: 5 * time.Second})
	cr.childMS += ms(res.Duration)
	cr.record(stage, argv, res)
	switch ctx.Err() {
	case nil:
	case context.DeadlineExceeded:
		return res, fmt.Errorf("%s did not finish within %s (stopped); see %s", argv[0], timeout, logFile)
	default:
		// Interrupted: the child was stopped, so it exited "successfully"
		// as far as the runner is concerned; its output is not there.
		return res, ctx.Err()
	}
	return res, err
}

func (cr *checkpointRun) record(stage string, argv []string, res proc.Result) {
	cr.res.Provenance.Commands = append(cr.res.Provenance.Commands, verdict.Command{
		Stage: stage, Argv: cr.red.Argv(argv), ExitCode: res.ExitCode, Signal: res.Signal})
	if res.OutputErr != "" {
		// Evidence was lost: the row cannot be trusted, whatever else happened.
		cr.fail(stage, verdict.CodeOutputLost, fmt.Errorf("the %s's output could not be kept in the evidence: %s", stage, res.OutputErr))
	}
	cr.survivors(stage, "the "+stage+" command", res.Survivors)
}

// survivors breaks the row when processes of a child's tree outlived it
// outside its process group: proc's sweep found and killed them; the row
// names each by pid and argv (redacted).
func (cr *checkpointRun) survivors(stage, what string, ss []proc.Survivor) {
	if len(ss) == 0 {
		return
	}
	parts := make([]string, 0, len(ss))
	for i, s := range ss {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ss)-5))
			break
		}
		parts = append(parts, s.String())
	}
	cr.fail(stage, verdict.CodeSurvivor, fmt.Errorf("%s", cr.red.String(fmt.Sprintf(
		"%d process(es) of %s's tree outlived it outside its process group (setsid or setpgid) and were killed: %s",
		len(ss), what, strings.Join(parts, "; ")))))
}

func (cr *checkpointRun) childEnv() []string {
	env := append(append(cr.slot.Env(), markerEnv+"="+cr.marker), TempEnv(cr.tmp)...)
	if cr.family != nil {
		for _, k := range sortedKeys(cr.family.Env) {
			env = append(env, k+"="+cr.family.Env[k])
		}
	}
	return env
}

// vars are the values of argv placeholders for this checkpoint.
func (cr *checkpointRun) vars() map[string]string {
	o := cr.gr.opts
	return Vars{BinDir: o.BinDir, Self: o.Self, Families: o.Families, Profile: cr.profile, Family: cr.family,
		Bundle: cr.bundle, Host: o.Security.Host, Port: cr.port, Dir: cr.dir, Corpus: cr.corpus, Tokenizer: cr.tokenizer,
		Seed: cr.gr.group.Workload.Seed}.Map()
}

// Vars are the values of a family's argv placeholders for one profile
// (families.Placeholders). `run` and `doctor --probe` both expand a
// family's templates with them.
type Vars struct {
	BinDir, Self string
	Families     *families.Config
	Profile      *inventory.Profile
	Family       *families.Family
	Bundle, Host string
	Port         int
	// Dir is the checkpoint's evidence directory: {out}, and where the
	// records, the correctness result and the native files go.
	Dir, Corpus, Tokenizer string
	Seed                   int
}

// Map is the placeholder map.
func (v Vars) Map() map[string]string {
	p := v.Profile
	return map[string]string{
		"bin": v.BinDir, "bundle": v.Bundle, "model": p.Served(), "host": v.Host,
		"port": strconv.Itoa(v.Port), "records": filepath.Join(v.Dir, fileRecords), "corpus": v.Corpus,
		"out": v.Dir, "correctness_out": filepath.Join(v.Dir, fileCorrectness),
		"native_in": filepath.Join(v.Dir, fileNativeIn), "native_out": filepath.Join(v.Dir, fileNativeOut),
		"precision": p.Precision, "seed": strconv.Itoa(v.Seed),
		"self": v.Self, "profile": p.ID, "checkpoint": p.Checkpoint, "revision": p.Revision,
		"tokenizer":    v.Tokenizer,
		"families_dir": familiesDir(v.Families), "tp": strconv.Itoa(max(p.Parallelism.TP, 1)),
		"max_body_bytes":   strconv.FormatInt(v.Family.MaxBodyBytes, 10),
		"max_prompt_bytes": strconv.FormatInt(v.Family.MaxPromptBytes, 10),
	}
}

// RecordsFile is the server records' file name in an evidence directory.
const RecordsFile = fileRecords

// prepareDir sets any earlier evidence aside and creates a fresh directory.
func (cr *checkpointRun) prepareDir() error {
	if _, err := os.Stat(cr.dir); err == nil {
		// <profile>.<UTC timestamp>; never overwrite an earlier set-aside run.
		t := cr.now()
		aside := cr.dir + "." + t.Format("20060102T150405Z")
		for i := 1; exists(aside); i++ {
			aside = cr.dir + "." + t.Add(time.Duration(i)*time.Second).Format("20060102T150405Z")
		}
		if err := os.Rename(cr.dir, aside); err != nil {
			return fmt.Errorf("set earlier evidence aside: %w", err)
		}
		cr.gr.logf("%s: earlier evidence set aside as %s", cr.profile.ID, filepath.Base(aside))
	}
	return os.MkdirAll(cr.dir, 0o755)
}

// finishedWithKey returns a finished (qualified or failed) result with the
// same run key and intact sealed evidence, for --resume. Errors,
// interruptions and changed evidence are re-run.
func (cr *checkpointRun) finishedWithKey(key string) (*verdict.Result, bool) {
	// Through the one loader (reports.ReadRow): only evidence exactly as
	// its run sealed it is reused, judged by today's rules; anything else
	// runs again.
	prev, err := reports.ReadRow(cr.dir, cr.gr.group.Name, cr.profile.ID)
	if err != nil || prev == nil || prev.RunKey != key {
		return nil, false
	}
	if !prev.EvidenceIntact() {
		cr.gr.logf("%s: resume: the earlier evidence differs from its seal (%s); running again", cr.profile.ID, firstReason(prev))
		return nil, false
	}
	if prev.Verdict != verdict.VerdictQualified && prev.Verdict != verdict.VerdictFailed {
		return nil, false
	}
	return prev, true
}

// firstReason is a row's first reason as "code: message".
func firstReason(r *verdict.Result) string {
	if len(r.Reasons) == 0 {
		return r.Verdict
	}
	return string(r.Reasons[0].Code) + ": " + text.FirstLine(r.Reasons[0].Message)
}

func readResult(path string) (*verdict.Result, error) {
	data, err := fileio.ReadFile(context.Background(), path, fileio.MaxDocumentBytes)
	if err != nil {
		return nil, err
	}
	var r verdict.Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (cr *checkpointRun) writeResult() error {
	cr.res.EndedAt = cr.now()
	if len(cr.gr.pipFreeze) > 0 {
		// The whole package set beside its digest, so a row's environment can
		// be rebuilt, not only compared.
		if err := fileio.WriteFileMode(filepath.Join(cr.dir, filePipFreeze), cr.gr.pipFreeze, 0o644); err != nil {
			return err
		}
		cr.res.Provenance.PipFreezeFile = filePipFreeze
	}
	if err := cr.red.RedactTree(cr.dir); err != nil {
		return err
	}
	if err := fileio.WriteJSON(filepath.Join(cr.dir, fileResult), &cr.res); err != nil {
		return err
	}
	// The seal comes last: manifest.json digests every file written above,
	// result.json included, and itself.
	return evidence.Seal(cr.dir, map[string]any{
		"harness_version":   cr.res.Provenance.HarnessVersion,
		"harness_commit":    cr.res.Provenance.HarnessCommit,
		"aiperf_version":    cr.res.Provenance.AIPerfVersion,
		"pip_freeze_sha256": cr.res.Provenance.PipFreezeSHA256,
		"pip_freeze_file":   cr.res.Provenance.PipFreezeFile,
		"go_version":        cr.res.Provenance.GoVersion,
		"server_binary":     cr.res.Provenance.ServerBinary,
		"server_sha256":     cr.res.Provenance.ServerBinarySHA256,
		"bundle_sha256":     cr.res.Provenance.BundleSHA256,
		"inventory_entry":   cr.res.Provenance.InventoryEntrySHA256,
		"gpus":              cr.res.Provenance.GPUs,
		"hardware_scope":    cr.res.Provenance.HardwareScope,
		"hardware_mismatch": cr.res.Provenance.HardwareMismatch,
		"host":              cr.res.Provenance.Host,
		"commands":          cr.res.Provenance.Commands,
		"started_at":        cr.res.StartedAt,
		"ended_at":          cr.res.EndedAt,
		"run_key":           cr.res.RunKey,
	})
}

// stopServer stops the server's process group (SIGTERM, grace, SIGKILL)
// and confirms it is gone.
func (cr *checkpointRun) stopServer() {
	if cr.server == nil {
		return
	}
	p := cr.server
	cr.server = nil
	stopping := time.Now()
	res, _ := p.Stop()
	cr.childMS += ms(time.Since(stopping))
	cr.record("server", res.Argv, res)
	if proc.GroupAlive(p.Pid()) {
		cr.fail("stop", verdict.CodeOrphan, fmt.Errorf("server process group %d is still alive after SIGKILL", p.Pid()))
	}
	if res.Killed {
		cr.gr.logf("%s: server ignored SIGTERM; killed after the grace period", cr.profile.ID)
	}
}

func freePort(pool *portPool, host string) (int, error) {
	pool.mu.Lock()
	defer pool.mu.Unlock()
	for i := 0; i < 20; i++ {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("find a free port on %s: %w", host, err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !pool.used[port] {
			pool.used[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no free port found")
}

func lookBinary(argv0 string) string {
	if p, err := exec.LookPath(argv0); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
		return p
	}
	return argv0
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func hostname() string {
	h, _ := os.Hostname()
	return h
}

func reasonSummary(rs []verdict.Reason) string {
	if len(rs) == 0 {
		return ""
	}
	return " (" + rs[0].Stage + ": " + text.FirstLine(rs[0].Message) + ")"
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// familiesDir is the absolute directory of the family configuration.
func familiesDir(c *families.Config) string {
	if c == nil || c.File == "" {
		return ""
	}
	if abs, err := filepath.Abs(filepath.Dir(c.File)); err == nil {
		return abs
	}
	return filepath.Dir(c.File)
}

// ranStage reports whether a stage of that name was recorded.
func (cr *checkpointRun) ranStage(name string) bool {
	for _, st := range cr.res.Stages {
		if st.Name == name {
			return true
		}
	}
	return false
}
