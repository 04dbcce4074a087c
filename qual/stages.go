package qual

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

type stageDef struct {
	name string
	run  func(*checkpointRun, context.Context) error
	// always stages run even after an earlier stage broke.
	always bool
	// accounts stages also run after an earlier stage broke when AIPerf
	// reported requests, so a broken row still accounts for every request
	// the client sent (its verdict stays error).
	accounts bool
}

// pipeline is the ordered list of stages every checkpoint goes through.
var pipeline = []stageDef{
	// preflight: family config, prepare a missing bundle/corpus, bundle
	// identity, GPU idle check. Nothing is timed yet.
	{name: "preflight", run: (*checkpointRun).preflight},
	// server: start the family's server in its own process group on a free
	// port and wait for readiness (or report how it died).
	{name: "server", run: (*checkpointRun).startServer},
	// correctness: the family's correctness case on the exact served bundle.
	// A failed case makes the row failed; the run still measures.
	{name: "correctness", run: (*checkpointRun).correctness},
	// aiperf: warmup + measured requests through pip-installed AIPerf,
	// fail-closed on incomplete exports.
	{name: "aiperf", run: (*checkpointRun).aiperf},
	// stop-server: SIGTERM, grace, SIGKILL the group, confirm it is gone;
	// then read the server's request records.
	{name: "stop-server", run: (*checkpointRun).stopAndCollect, always: true},
	// native: the family's native runner over exactly the payloads sent.
	{name: "native", run: (*checkpointRun).nativeAnswers, accounts: true},
	// bundle-check: the served bundle digested again after every use of it
	// (serving, the native replay); Judge fails a row whose bundle changed.
	{name: verdict.StageBundleCheck, run: (*checkpointRun).bundleCheck, always: true},
	// join: native and HTTP answers by request identity, counted per phase.
	{name: "join", run: (*checkpointRun).join, accounts: true},
	// gpu-release: every child has ended; no process of the run may hold
	// memory on the slot's GPUs (hygiene.go).
	{name: "gpu-release", run: (*checkpointRun).gpuRelease, always: true},
}

// gpuRelease is the release check on a GPU slot (nothing to check on a
// CPU slot or without a probe).
func (cr *checkpointRun) gpuRelease(ctx context.Context) error {
	if cr.gr.opts.Hardware.Probe == nil || len(cr.slot.GPUs) == 0 {
		return errSkipped
	}
	return cr.checkReleased(ctx)
}

func (cr *checkpointRun) preflight(ctx context.Context) error {
	o := cr.gr.opts
	if cr.family == nil {
		return stageFailure(verdict.CodeFamilyConfig, fmt.Errorf("family %q is not configured", cr.profile.Family))
	}
	if cr.family.EndpointType != cr.gr.group.Workload.EndpointType {
		return stageFailure(verdict.CodeFamilyConfig, fmt.Errorf("family %s speaks %s but group %s measures %s", cr.family.Name,
			cr.family.EndpointType, cr.gr.group.Name, cr.gr.group.Workload.EndpointType))
	}
	cr.bundle = cr.profile.BundlePath()
	cr.corpus = cr.gr.group.CorpusPath()
	timeout := cr.family.Timeouts.Prepare.Or(defaultPrepareTimeout)
	if err := fileio.CheckDir(cr.corpus); errors.Is(err, fileio.ErrNotRegular) {
		return stageFailure(verdict.CodeDataset, fmt.Errorf("corpus: %w", err))
	}
	if _, err := os.Stat(filepath.Join(cr.corpus, "corpus.json")); err != nil {
		if err := cr.prepare(ctx, "prepare-corpus", cr.family.Prepare.Corpus, cr.corpus, timeout); err != nil {
			return err
		}
	}
	if _, err := os.Stat(cr.bundle); err != nil {
		if err := cr.prepare(ctx, "prepare-bundle", cr.family.Prepare.Bundle, cr.bundle, timeout); err != nil {
			return err
		}
	}
	sum, err := inventory.BundleSHA256(ctx, cr.bundle)
	if err != nil {
		return stageFailure(verdict.CodeBundleUnreadable, fmt.Errorf("bundle %s: %w", cr.bundle, err))
	}
	cr.res.Provenance.BundlePath = cr.bundle
	cr.res.Provenance.BundleSHA256 = sum
	if want := cr.profile.Bundle.SHA256; want != "" && sum != want {
		// The row holds the fact (the digest beside the pin); Judge names
		// it. Nothing but the pinned bundle is served: the checkpoint
		// stops here.
		return stopCheckpoint(fmt.Errorf("profile %s: bundle %s has sha256 %s but the inventory (%s) pins %s: not the bundle that was qualified",
			cr.profile.ID, cr.bundle, sum, cr.profile.Where("bundle.sha256"), want))
	}
	if want := cr.gr.group.Workload.Dataset.SHA256; want != "" {
		got, err := inventory.CorpusSHA256(ctx, cr.corpus)
		if err != nil || got != want {
			return stageFailure(verdict.CodeDatasetIdentity, fmt.Errorf("corpus %s/corpus.json sha256 %s differs from the pinned %s", cr.corpus, got, want))
		}
	}
	cr.res.Provenance.Preprocessing = cr.family.Preprocessing
	if endpoint.NeedsTokenizer(cr.gr.group.Workload.EndpointType) {
		if err := cr.resolveTokenizer(); err != nil {
			return stageFailure(verdict.CodeTokenizer, err)
		}
	}
	if err := cr.checkRequestSizes(); err != nil {
		return err
	}
	argv, err := families.Expand(cr.family.Server, cr.vars())
	if err != nil {
		return stageFailure(verdict.CodeFamilyConfig, err)
	}
	cr.binary = lookBinary(argv[0])
	cr.res.Provenance.ServerBinary = cr.binary
	if sum, err := fileio.FileSHA256(ctx, cr.binary); err == nil {
		cr.res.Provenance.ServerBinarySHA256 = sum
	}
	switch {
	case len(cr.slot.GPUs) == 0:
		cr.gr.logf("%s: no GPU in this slot; running on CPU (the family needs none)", cr.profile.ID)
	case o.Hardware.Probe == nil:
		return stageFailure(verdict.CodeGPUProbe, fmt.Errorf("slot %s has GPUs but the run has no GPU probe to check them", cr.slot.Name))
	default:
		return cr.checkIdle(ctx)
	}
	return nil
}

// checkRequestSizes refuses, before the server starts, a corpus entry
// whose request (the body AIPerf will post) is over one of the family's
// server limits, naming which: trtmc-server answers 413 above
// --max-body-bytes and above --max-prompt-bytes (app.py idx@a9ed5f69;
// limits.go). The log names both limits.
func (cr *checkpointRun) checkRequestSizes() error {
	if cr.family.MaxBodyBytes <= 0 && cr.family.MaxPromptBytes <= 0 {
		return nil
	}
	w := cr.gr.group.Workload
	entries, err := aiperf.LoadCorpus(cr.corpus)
	if err != nil {
		return stageFailure(verdict.CodeDataset, err)
	}
	sizes, err := CheckRequestLimits(cr.family, w.EndpointType, entries, cr.profile.Served(), w.Generation)
	switch {
	case IsOverLimit(err):
		return stageFailure(verdict.CodeRequestTooLarge, fmt.Errorf("profile %s: %w; family %s passes --max-body-bytes %d and --max-prompt-bytes %d "+
			"(max_body_bytes, max_prompt_bytes in %s): use a smaller image or question for that entry, or raise the family's limit "+
			"(the native worker's line limit is 16 MiB)", cr.profile.ID, err, cr.family.Name, cr.family.MaxBodyBytes, cr.family.MaxPromptBytes,
			cr.gr.opts.Families.File))
	case err != nil:
		return stageFailure(verdict.CodeDataset, err)
	}
	cr.gr.logf("%s: %s", cr.profile.ID, sizes)
	return nil
}

// resolveTokenizer finds and checks the tokenizer AIPerf chat loads.
func (cr *checkpointRun) resolveTokenizer() error {
	id, err := CheckTokenizer(cr.profile, cr.gr.opts.AIPerf.Tokenizer)
	if err != nil {
		return err
	}
	cr.tokenizer = id.Path
	cr.res.Provenance.Tokenizer = id
	return nil
}

// CheckTokenizer finds the tokenizer AIPerf chat loads for a profile: its
// own (inventory tokenizer.path) or fallback (the run's --tokenizer), and
// checks it is a tokenizer directory of this checkpoint: present, loadable
// offline, equal to its pin, and not named for another checkpoint. Errors
// name the profile and the cause. `run` and `doctor` both use it.
func CheckTokenizer(p *inventory.Profile, fallback string) (*verdict.FileIdentity, error) {
	dir, where := fallback, "the run's --tokenizer"
	if p.Tokenizer.Path != "" {
		dir, where = p.TokenizerPath(), "tokenizer.path at "+p.Where("tokenizer.path")
	}
	if dir == "" {
		return nil, fmt.Errorf("profile %s: no tokenizer for AIPerf chat: give the checkpoint's tokenizer directory as tokenizer.path in the inventory (%s) or pass --tokenizer",
			p.ID, p.Where("id"))
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("profile %s: tokenizer directory %s (%s) does not exist", p.ID, dir, where)
	}
	found := ""
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json", "tokenizer.model"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			found = name
			break
		}
	}
	if found == "" {
		return nil, fmt.Errorf("profile %s: %s (%s) holds no tokenizer.json, tokenizer_config.json or tokenizer.model: AIPerf cannot load it offline",
			p.ID, dir, where)
	}
	id := &verdict.FileIdentity{Path: dir}
	if sum, err := inventory.TokenizerSHA256(context.Background(), dir); err == nil {
		id.SHA256 = sum
	}
	if pin := p.Tokenizer.SHA256; pin != "" && id.SHA256 != pin {
		got := id.SHA256
		if got == "" {
			got = "absent"
		}
		return nil, fmt.Errorf("profile %s: tokenizer %s does not match its pin (%s): tokenizer.json sha256 %s, pinned %s; it is not the tokenizer of %s that was qualified",
			p.ID, dir, p.Where("tokenizer.sha256"), got, pin, p.Checkpoint)
	}
	if name := tokenizerName(dir); name != "" && p.Checkpoint != "" && !strings.EqualFold(name, p.Checkpoint) {
		return nil, fmt.Errorf("profile %s: tokenizer %s is %s's (tokenizer_config.json name_or_path), not %s's: token counts would be another model's",
			p.ID, dir, name, p.Checkpoint)
	}
	return id, nil
}

// tokenizerName is tokenizer_config.json's name_or_path when it names a
// hub checkpoint (org/name), else "".
func tokenizerName(dir string) string {
	data, err := fileio.ReadFile(context.Background(), filepath.Join(dir, "tokenizer_config.json"), fileio.MaxConfigBytes)
	if err != nil {
		return ""
	}
	var cfg struct {
		NameOrPath string `json:"name_or_path"`
	}
	if json.Unmarshal(data, &cfg) != nil {
		return ""
	}
	n := cfg.NameOrPath
	if strings.Count(n, "/") != 1 || strings.HasPrefix(n, "/") || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "~") {
		return ""
	}
	return n
}

// prepare builds a missing bundle or corpus with the family's command.
func (cr *checkpointRun) prepare(ctx context.Context, stage string, tmpl []string, target string, timeout time.Duration) error {
	if len(tmpl) == 0 {
		return stageFailure(verdict.CodeMissingInput, fmt.Errorf("%s does not exist and family %s has no prepare command for it", target, cr.family.Name))
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return stageFailure(verdict.CodeMissingInput, err)
	}
	argv, err := families.Expand(tmpl, cr.vars())
	if err != nil {
		return stageFailure(verdict.CodeFamilyConfig, err)
	}
	cr.gr.logf("%s: %s: %s", cr.profile.ID, stage, text.ShellJoin(cr.red.Argv(argv)))
	if _, err := cr.runChild(ctx, stage, argv, stage+".log", timeout); err != nil {
		return stageFailure(verdict.CodePrepareFailed, err)
	}
	return nil
}

func (cr *checkpointRun) startServer(ctx context.Context) error {
	o := cr.gr.opts
	port, err := freePort(cr.gr.ports, o.Security.Host)
	if err != nil {
		return stageFailure(verdict.CodePort, err)
	}
	cr.port = port
	argv, err := families.Expand(cr.family.Server, cr.vars())
	if err != nil {
		return stageFailure(verdict.CodeFamilyConfig, err)
	}
	url, err := families.Expand([]string{cr.family.Readiness}, cr.vars())
	if err != nil {
		return stageFailure(verdict.CodeFamilyConfig, err)
	}
	if err := portInUse(url[0]); err != nil {
		return stageFailure(verdict.CodePortInUse, err)
	}
	logFile, err := os.Create(filepath.Join(cr.dir, fileServerLog))
	if err != nil {
		return err
	}
	grace := cr.family.Timeouts.Stop.Or(defaultStopGrace)
	// The server gets the root context only for hard cancellation; the
	// checkpoint stops it explicitly and confirms it is gone.
	started := time.Now()
	p, err := o.Runner.Start(context.WithoutCancel(ctx), proc.Spec{Name: "server", Argv: argv, Stdout: logFile, Stderr: logFile,
		Env: cr.childEnv(), Grace: grace})
	if err != nil {
		logFile.Close()
		return stageFailure(verdict.CodeServerStart, err)
	}
	cr.server = p
	cr.serverPID = p.Pid()
	go func() { <-p.Done(); logFile.Close() }()
	waited, err := proc.WaitReady(ctx, p, url[0], cr.family.Timeouts.Startup.Or(defaultStartupTimeout))
	// Startup is the server's time: from exec to the readiness answer.
	cr.childMS += ms(time.Since(started))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var nr *proc.NotReadyError
		if errors.As(err, &nr) {
			return stageFailure(verdict.CodeServerNotReady, fmt.Errorf("server never became ready: %w; last log lines:\n%s", err, text.Indent(text.LastLines(p.StderrTail(), 10))))
		}
		return stageFailure(verdict.CodeServerExit, err)
	}
	select {
	case <-p.Done(): // ready was answered, but not by our server
		_, werr := p.Wait()
		return stageFailure(verdict.CodeServerExit, fmt.Errorf("%s answered ready, but the server had already exited: %v", url[0], werr))
	default:
	}
	cr.gr.logf("%s: server ready on port %d after %s", cr.profile.ID, port, waited.Round(time.Millisecond))
	return cr.checkListen("after readiness")
}

// checkListen finds every address the server's process group listens on
// and breaks the row when one is off loopback, naming it, unless
// non-loopback servers are allowed: --host covers only what the harness
// asks for, and a family's argv can bind anything. Where the check cannot
// be made (not Linux) the row cannot qualify either.
func (cr *checkpointRun) checkListen(when string) error {
	o := cr.gr.opts
	addrs, err := proc.ListenAddrs(cr.server.Pid())
	if err != nil {
		if o.Security.AllowNonLoopback {
			cr.gr.logf("%s: listen check %s: %v (non-loopback servers are allowed)", cr.profile.ID, when, err)
			return nil
		}
		return stageFailure(verdict.CodeListenUnchecked, fmt.Errorf("cannot check which addresses the server listens on (%v); "+
			"a row is never qualified on an unchecked host", err))
	}
	for _, a := range addrs {
		if s := a.String(); !slices.Contains(cr.res.Provenance.ServerListen, s) {
			cr.res.Provenance.ServerListen = append(cr.res.Provenance.ServerListen, s)
		}
	}
	off := proc.OffLoopback(addrs)
	if len(off) == 0 || o.Security.AllowNonLoopback {
		return nil
	}
	names := make([]string, len(off))
	for i, a := range off {
		names[i] = a.String()
		if a.Addr().IsUnspecified() {
			names[i] += " (every interface)"
		}
	}
	return stageFailure(verdict.CodeListenOffLoopback, fmt.Errorf("%s, the server's process group listens on %s, off loopback: "+
		"it is reachable from the network (the family's argv binds it; allow it explicitly with --allow-non-loopback)",
		when, strings.Join(names, ", ")))
}

// correctness runs the family's correctness case on the served bundle and
// reads its result (verdict.ReadCorrectness, strict). Whether it passes is
// Judge's to say, from the recorded gates.
func (cr *checkpointRun) correctness(ctx context.Context) error {
	c := &verdict.Correctness{Output: fileCorrectness}
	cr.res.Correctness = c
	if len(cr.family.Correctness) == 0 {
		c.Error = "family has no correctness case"
		return stageFailure(verdict.CodeCorrectnessNone, fmt.Errorf("family %s declares no correctness case; a row cannot qualify without one", cr.family.Name))
	}
	argv, err := families.Expand(cr.family.Correctness, cr.vars())
	if err != nil {
		return stageFailure(verdict.CodeFamilyConfig, err)
	}
	res, runErr := cr.runChild(ctx, "correctness", argv, fileCorrectLog, cr.family.Timeouts.Correctness.Or(defaultCorrectnessTimeout))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// Whatever the case says, it must have left the served bundle as it was.
	cr.rehashBundle(ctx, verdict.BundleAfterCorrectness)
	out, readErr := verdict.ReadCorrectness(filepath.Join(cr.dir, fileCorrectness))
	switch {
	case runErr != nil && res.ExitCode == 1 && readErr == nil && !out.Passed:
		// Exit 1 with a well-formed result: the case ran and failed.
	case runErr != nil:
		c.Error = runErr.Error()
		return stageFailure(verdict.CodeCorrectnessCrash, fmt.Errorf("correctness case broke: %w", runErr))
	case readErr != nil:
		c.Error = "no valid result file"
		return stageFailure(verdict.CodeCorrectnessOutput, fmt.Errorf("correctness case exited 0 but its result is missing or invalid: %w", readErr))
	}
	cr.res.Correctness = out
	return nil
}

func (cr *checkpointRun) aiperf(ctx context.Context) error {
	o := cr.gr.opts
	w := cr.gr.group.Workload
	if len(cr.slot.GPUs) > 0 && o.Hardware.Probe != nil {
		if err := cr.checkServing(ctx); err != nil {
			return err
		}
	}
	ds, err := cr.writeDataset()
	if err != nil {
		return err
	}
	n := w.TrialCount()
	records := filepath.Join(cr.dir, fileRecords)
	o.Progress.requests(cr.profile.ID, n*(w.Warmup+w.Measured), func() int { return countLines(records) })
	for k := 1; k <= n; k++ {
		if err := cr.aiperfTrial(ctx, ds, k, n); err != nil {
			return err
		}
	}
	return nil
}

// aiperfTrial runs AIPerf once over the dataset — warmup and measured
// requests, trial k of n — against the running server. One trial writes
// its artifacts to aiperf/, trial k of several to aiperf/trial-K/; a
// broken trial breaks the stage (naming it), and the trials after it do
// not run.
func (cr *checkpointRun) aiperfTrial(ctx context.Context, ds *aiperf.Dataset, k, n int) error {
	cfg := cr.aiperfConfig(ds)
	if n > 1 {
		cfg.ArtifactDir = filepath.Join(cr.dir, verdict.TrialDir(k))
	}
	run, err := cr.gr.driver.Run(ctx, cfg)
	if run != nil {
		cr.childMS += ms(run.ProcessDuration)
		cr.run = run
		cr.runs = append(cr.runs, run)
		cr.res.Provenance.Commands = append(cr.res.Provenance.Commands, verdict.Command{Stage: "aiperf", Argv: cr.red.Argv(run.Argv), ExitCode: run.ExitCode})
		cr.survivors("aiperf", "AIPerf", run.Survivors)
		_ = fileio.WriteJSON(filepath.Join(cfg.ArtifactDir, "argv.json"), cr.red.Argv(run.Argv))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil {
		err = cr.aiperfTrusted(run)
	} else {
		var se *aiperf.SetupError
		if errors.As(err, &se) {
			err = stageFailure(verdict.CodeAIPerfSetup, err)
		} else {
			err = stageFailure(verdict.CodeAIPerfFailed, err)
		}
	}
	var se *stageError
	if n > 1 && errors.As(err, &se) {
		return stageFailure(se.code, fmt.Errorf("trial %d of %d: %w", k, n, se.err))
	}
	return err
}

// writeDataset writes the dataset AIPerf sends (one line per request, the
// workload's endpoint type's) and records its digest and image sizes.
func (cr *checkpointRun) writeDataset() (*aiperf.Dataset, error) {
	w := cr.gr.group.Workload
	entries, err := aiperf.LoadCorpus(cr.corpus)
	if err != nil {
		return nil, stageFailure(verdict.CodeDataset, err)
	}
	ds, err := aiperf.WriteDataset(filepath.Join(cr.dir, fileDataset), w.EndpointType, entries, w.Warmup+w.Measured)
	if err != nil {
		return nil, stageFailure(verdict.CodeDataset, err)
	}
	cr.dataset = ds
	cr.res.Provenance.DatasetSHA256 = ds.SHA256
	sizes, err := aiperf.ImageSizes(entries, w.Warmup+w.Measured)
	if err != nil {
		return nil, stageFailure(verdict.CodeDataset, err)
	}
	for _, s := range sizes {
		cr.res.Provenance.DatasetImageSizes = append(cr.res.Provenance.DatasetImageSizes, verdict.ImageSize{Width: s.Width, Height: s.Height, Count: s.Count})
	}
	return ds, nil
}

// aiperfConfig is the AIPerf run of this checkpoint over the dataset.
func (cr *checkpointRun) aiperfConfig(ds *aiperf.Dataset) aiperf.Config {
	o := cr.gr.opts
	w := cr.gr.group.Workload
	cfg := aiperf.Config{
		Bin: o.AIPerf.Bin, ExpectedVersion: o.AIPerf.Version, AllowVersionMismatch: o.AIPerf.AllowMismatch,
		EndpointType: w.EndpointType, URL: fmt.Sprintf("http://%s:%d", o.Security.Host, cr.port), Model: cr.profile.Served(),
		InputFile: ds.Path, ArtifactDir: filepath.Join(cr.dir, dirAIPerf),
		Warmup: w.Warmup, Measured: w.Measured, Concurrency: w.Concurrency, Seed: w.Seed,
		RequestTimeout: time.Duration(w.RequestTimeoutS * float64(time.Second)),
		Deadline:       cr.family.Timeouts.AIPerf.Or(defaultAIPerfTimeout),
		ExtraInputs:    w.Generation, Dataset: ds, Env: cr.childEnv(), APIKey: cr.serveToken(), TempDir: cr.tmp,
		Version: &cr.gr.aiperf,
	}
	if endpoint.NeedsTokenizer(w.EndpointType) {
		cfg.Tokenizer = cr.tokenizer
	}
	cfg.GPUTelemetry = telemetryCollector(cr.slot)
	return cfg
}

// aiperfTrusted breaks the stage when the run cannot be trusted: the
// server died during it (every later request fails: a broken stage, not a
// qualification outcome), or AIPerf's exports have a problem the join
// does not count per request (errored, duplicate, missing).
func (cr *checkpointRun) aiperfTrusted(run *aiperf.Run) error {
	select {
	case <-cr.server.Done():
		res, werr := cr.server.Wait()
		if werr == nil {
			werr = fmt.Errorf("exited with status %d", res.ExitCode)
		}
		return stageFailure(verdict.CodeServerDied, fmt.Errorf("the server exited during the AIPerf run: %w", werr))
	default:
	}
	var fatal []aiperf.Problem
	for _, p := range run.Problems {
		if !joinCounts[p.Code] {
			fatal = append(fatal, p)
		}
	}
	if len(fatal) > 0 {
		return stageFailure(verdict.CodeAIPerfIncomplete, &aiperf.IncompleteError{Dir: run.ArtifactDir, Problems: fatal})
	}
	return nil
}

// bundleCheck digests the served bundle again after the run: serving and
// the native replay must have left it as preflight found it (Judge
// compares the digests). Nothing to check when it was never digested.
func (cr *checkpointRun) bundleCheck(ctx context.Context) error {
	if cr.res.Provenance.BundleSHA256 == "" {
		return errSkipped
	}
	cr.rehashBundle(ctx, verdict.BundleAfterRun)
	return ctx.Err()
}

// rehashBundle records the served bundle's digest after a stage (or why it
// could not be taken: Judge fails the row either way unless it is the
// digest before).
func (cr *checkpointRun) rehashBundle(ctx context.Context, after string) {
	c := verdict.BundleCheck{After: after}
	sum, err := inventory.BundleSHA256(ctx, cr.bundle)
	switch {
	case ctx.Err() != nil:
		return // interrupted: the row is incomplete anyway
	case err != nil:
		c.Error = err.Error()
	default:
		c.SHA256 = sum
	}
	cr.res.Provenance.BundleChecks = append(cr.res.Provenance.BundleChecks, c)
	if c.SHA256 != cr.res.Provenance.BundleSHA256 {
		cr.gr.logf("%s: the bundle %s after the %s: sha256 %s (before: %s) %s", cr.profile.ID, cr.bundle, after, c.SHA256, cr.res.Provenance.BundleSHA256, c.Error)
	}
}

// joinCounts are AIPerf findings about single requests, which the join
// counts per phase instead of failing the stage.
var joinCounts = map[string]bool{
	aiperf.ProblemRequestErrors:    true,
	aiperf.ProblemAnswerTooLarge:   true,
	aiperf.ProblemDuplicateRequest: true,
	aiperf.ProblemConversation:     true,
	aiperf.ProblemRecordCancelled:  true,
}

func (cr *checkpointRun) stopAndCollect(ctx context.Context) error {
	// A server may open more sockets while it serves: check again before
	// stopping it (it is still running only if no earlier stage broke).
	var listenErr error
	if cr.server != nil {
		select {
		case <-cr.server.Done():
		default:
			cr.recordLoaded(ctx)
			if cr.stageErr == nil {
				listenErr = cr.checkListen("before stopping")
			}
		}
	}
	cr.stopServer()
	if listenErr != nil {
		return listenErr
	}
	if _, err := os.Stat(filepath.Join(cr.dir, fileRecords)); err != nil {
		if cr.run == nil || !cr.family.Recorded() {
			return nil // nothing was sent (or the route is not recorded): nothing to record
		}
		return stageFailure(verdict.CodeServerRecords, fmt.Errorf("the server wrote no request records (%s)", fileRecords))
	}
	return nil // the join reads them, and names any malformed line
}

func (cr *checkpointRun) nativeAnswers(ctx context.Context) error {
	var reqs []families.NativeRequest
	for _, run := range cr.runs { // every trial's requests, in the order they were sent
		for _, q := range run.Requests {
			if len(q.Payload) > 0 && string(q.Payload) != "null" {
				reqs = append(reqs, families.NativeRequest{RequestID: q.RequestID, Route: cr.family.Route, Payload: q.Payload})
			}
		}
	}
	var buf strings.Builder
	for _, r := range reqs {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := fileio.WriteFile(filepath.Join(cr.dir, fileNativeIn), []byte(buf.String())); err != nil {
		return err
	}
	argv, err := families.Expand(cr.family.Native, cr.vars())
	if err != nil {
		return stageFailure(verdict.CodeFamilyConfig, err)
	}
	_, runErr := cr.runChild(ctx, "native", argv, fileNativeLog, cr.family.Timeouts.Native.Or(defaultNativeTimeout))
	cr.res.Provenance.Native = readNativeMeta(filepath.Join(cr.dir, fileNativeMeta))
	if runErr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return stageFailure(verdict.CodeNativeFailed, fmt.Errorf("profile %s: %w", cr.profile.ID, runErr))
	}
	if _, err := os.Stat(filepath.Join(cr.dir, fileNativeOut)); err != nil {
		return stageFailure(verdict.CodeNativeOutput, fmt.Errorf("the native runner exited 0 but wrote no %s", fileNativeOut))
	}
	return nil // the join reads them, and names any malformed line
}

// readNativeMeta reads what a native runner said about its answers
// (native_meta.json, families.NativeMeta), or nil when it said nothing.
func readNativeMeta(path string) *verdict.NativeRun {
	data, err := fileio.ReadFile(context.Background(), path, fileio.MaxDocumentBytes)
	if err != nil {
		return nil
	}
	var m families.NativeMeta
	if json.Unmarshal(data, &m) != nil {
		return &verdict.NativeRun{Path: "unknown", TimingScope: "unknown (" + fileNativeMeta + " is malformed)"}
	}
	n := &verdict.NativeRun{Path: m.Path, TimingScope: m.TimingScope, TokenCounts: m.TokenCounts, Argv: m.Argv}
	if m.Worker != nil {
		n.WorkerProtocol, n.WorkerCapabilities = m.Worker.ProtocolVersion, m.Worker.Capabilities
	}
	if b := m.WorkerBinary; b != nil {
		n.WorkerBinary, n.WorkerBinarySHA256, n.WorkerBinarySource = b.Path, b.SHA256, b.Source
	}
	return n
}

// join runs the one join (qual/streamjoin) over the checkpoint's
// artifacts: dataset.jsonl, AIPerf's records and raw exports, the server's
// request records and the native answers. It writes joined.jsonl and
// mismatches.jsonl and fills the row's counts, unclaimed ids and latency;
// Judge turns them into reasons.
func (cr *checkpointRun) join(ctx context.Context) error {
	_, err := joinRow(ctx, cr.dir, &cr.res, cr.gr.opts.Registry, joinOutputs{write: true})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return stageFailure(verdict.CodeJoinInput, err)
	}
	// Throughput: AIPerf's own summary (one image per request); a row of
	// trials has each trial's from the join.
	if cr.run != nil && cr.run.Summary != nil && len(cr.runs) == 1 {
		if m, ok := cr.run.Summary.Metric("request_throughput"); ok && m.Avg != nil {
			v := *m.Avg
			cr.res.ImagesPerSec = &v
		}
	}
	if cr.run != nil {
		cr.res.GPUTelemetry = gpuTelemetry(cr.slot, cr.run.Summary)
	}
	return nil
}

// finish records an interruption and lets Judge decide the verdict from
// the row's facts.
func (cr *checkpointRun) finish(ctx context.Context) {
	if ctx.Err() != nil {
		cr.res.Problems = append(cr.res.Problems, verdict.Problem{Stage: lastStage(cr.res.Stages), Code: verdict.CodeInterrupted,
			Message: "the run was interrupted; this row is incomplete"})
	}
	verdict.Judge(&cr.res)
}

func lastStage(st []verdict.Stage) string {
	if len(st) == 0 {
		return "schedule"
	}
	return st[len(st)-1].Name
}

// countLines counts the lines of a regular file without holding it.
func countLines(path string) int {
	f, _, err := fileio.OpenRegular(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	buf := make([]byte, 64<<10)
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err != nil {
			return n
		}
	}
}
