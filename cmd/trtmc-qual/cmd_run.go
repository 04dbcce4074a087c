package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/proc"
	"github.com/trtmc-qual/trtmc-qual/qual/slurm"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/junit"
)

// runOptions are the run verb's: the flags, the resolved configuration
// and what the pipeline needs of this process. The wiring fills them
// (complete), Validate checks them together, and runQualify runs them; no
// cobra and no factory below.
type runOptions struct {
	IO     *IOStreams
	Runner proc.Runner
	Now    func() time.Time
	Getenv func(string) string
	// Version and Commit are the harness's, recorded in every row.
	Version, Commit string
	// Config is the resolved configuration (flags > environment > file >
	// defaults); Out, GPUs and Executor below start from it.
	Config *Config
	// Publish is what the published tables map: this host's roots and
	// identity.
	Publish publish.Publisher

	Group  string
	Only   []string
	Out    string
	GPUs   string
	Resume bool
	Host   string
	Format string
	// JUnit is a file to write a JUnit XML report to: one test case per
	// profile of the group.
	JUnit string
	// Executor is local or slurm; Detach submits to Slurm and returns.
	Executor string
	Detach   bool
	// GPUsGiven says --gpus was given on the command line (it does not
	// apply to --executor slurm).
	GPUsGiven bool
}

// runFormats are run's -o/--format values.
var runFormats = formats(reports.FormatAuto, "table", "tsv", "md", "csv", "json")

// Executors (config key `executor`, flag --executor).
const (
	executorLocal = "local"
	executorSlurm = "slurm"
)

func newRunCmd(f *factory, runF func(*runOptions) error) *cobra.Command {
	opts := &runOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "run --group G",
		Short: "Qualify every checkpoint of a model group",
		Long: `Qualify every checkpoint of a group: start the family's native server, run its
correctness case on the served bundle, drive AIPerf (warmup + measured requests),
run the native Task over exactly the payloads sent, join native and HTTP answers
by request identity, and write OUT/<group>/<profile>/result.json with its
evidence, then OUT/<group>/results.{md,csv,json,html}. The group table is
printed to stdout; stage lines go to stderr. --junit FILE also writes a JUnit
XML report, one test case per profile (qualified passes; failed is a failure
and a broken or interrupted row an error, with the row's reasons as the
message; excluded and not-run profiles are skipped with their reason), so a
nightly run shows up in any CI system.

With --executor slurm the group is submitted to Slurm instead, one array task
per profile, each running this same pipeline (` + "`run --only ID`" + `) on its node into
the shared evidence root; the driver follows the tasks, turns a task that died
into an error row naming its Slurm job, cancels the job on Ctrl-C and writes the
same tables. --detach submits and prints the job id; ` + "`trtmc-qual status`" + ` follows
it later. See docs/slurm.md.

Each profile holds tp x cp GPUs of --gpus for its whole run (concurrent profiles
never share one; children see them by UUID in CUDA_VISIBLE_DEVICES). A profile
that needs more GPUs than the run has, whose inventory hardware scope does not
match the GPUs, or whose family needs a GPU on a CPU-only run is not run, with
the reason (docs/gpu.md).

Exit status: 0 when every row is qualified (or excluded), 1 when a row failed or
broke, 3 when a server, GPU or AIPerf was unavailable, a profile could not be run
on this host (or Slurm rejected the job), 130 when interrupted.`,
		Example: `  # the reference target, from the repository root
  trtmc-qual run --group vlm --out out/demo

  # two checkpoints only, resuming finished ones, on GPUs 0 and 1
  trtmc-qual run --group detection --only yolo11n,rtdetr --resume --gpus 0,1

  # a nightly job: the Markdown table on stdout, JUnit for the CI system
  trtmc-qual run --group vlm --out out/nightly -o md --junit out/nightly-vlm-junit.xml

  # the whole group across a Slurm cluster (partition etc. in trtmc-qual.yaml)
  trtmc-qual run --group vlm --executor slurm --out /lustre/qual/out`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.complete(f)
			if opts.Executor == executorSlurm && f.Config.Slurm.Out != "" && !cmd.Flags().Changed("out") {
				opts.Out = f.Config.Slurm.Out
			}
			opts.GPUsGiven = cmd.Flags().Changed("gpus")
			if err := opts.Validate(); err != nil {
				return err
			}
			f.Interrupts.SetNotice(opts.notice())
			if runF != nil {
				return runF(opts)
			}
			return runQualify(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Group, "group", "g", "", "the model group to qualify (required)")
	fl.StringSliceVar(&opts.Only, "only", nil, "only these profile ids")
	fl.String("out", "out", "evidence root directory")
	fl.String("gpus", "", `GPU indexes or UUIDs ("0,1"), "cpu", "cpu:N" (N CPU slots), or empty for every GPU nvidia-smi lists; a profile holds tp x cp of them`)
	fl.Bool("allow-hardware-mismatch", false, "run profiles whose inventory hardware scope does not match the GPUs (recorded; such rows never qualify)")
	fl.BoolVar(&opts.Resume, "resume", false, "skip checkpoints whose finished result has the same run key")
	fl.StringVar(&opts.Host, "host", "127.0.0.1", "address servers bind to")
	fl.Bool("allow-non-loopback", false, "allow --host beyond loopback")
	addFormatFlag(cmd, &opts.Format, runFormats)
	addFileFlag(cmd, &opts.JUnit, "junit", "also write a JUnit XML report to this file: one test case per profile", "xml")
	addInventoryFlags(fl)
	addAIPerfFlags(fl)
	markInputFiles(cmd)
	completeGroupFlag(cmd, f, "group")
	completeProfilesFlag(cmd, f, "only")
	completeGPUsFlag(cmd, f)
	_ = cmd.MarkFlagDirname("out")
	fl.String("executor", executorLocal, "where checkpoints run: local (this host) or slurm (one array task per profile; see docs/slurm.md)")
	fl.BoolVar(&opts.Detach, "detach", false, "with --executor slurm: submit, print the job id(s) and exit; follow later with `trtmc-qual status`")
	_ = cmd.RegisterFlagCompletionFunc("executor", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{executorLocal + "\tthis host's GPU slots", executorSlurm + "\tone Slurm array task per profile"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// complete fills what the run needs of this process and the resolved
// configuration (f.Config, set by the root's PersistentPreRunE): the
// verb's wiring and `ci --smoke` both run through it.
func (o *runOptions) complete(f *factory) {
	o.IO, o.Runner, o.Now, o.Getenv = f.IO, f.Runner, f.Now, f.Getenv
	o.Version, o.Commit, o.Config = f.Version, f.Commit, f.Config
	o.Publish = publicOptions(f.Config, f.Getenv, nil)
	o.Out, o.GPUs, o.Executor = f.Config.Out, f.Config.GPUs, f.Config.Executor
}

// Validate checks the flags and the configuration together: a group and
// valid names, the format and --junit's file, --detach and --gpus against
// the executor, --host against --allow-non-loopback.
func (o *runOptions) Validate() error {
	if o.Group == "" {
		return flagErrorf("--group is required")
	}
	if err := checkNames("--group", o.Group); err != nil {
		return err
	}
	if err := checkNames("--only", o.Only...); err != nil {
		return err
	}
	if err := runFormats.check(o.Format); err != nil {
		return err
	}
	if err := checkFileKind("junit", o.JUnit, "xml"); err != nil {
		return err
	}
	if o.Detach && o.Executor != executorSlurm {
		return flagErrorf("--detach needs --executor slurm")
	}
	if o.Executor == executorSlurm && o.GPUsGiven {
		return flagErrorf("--gpus does not apply to --executor slurm: each task uses the GPUs Slurm allocates it (slurm.gpu_request)")
	}
	if !o.Config.AllowNonLoopback && !qual.IsLoopback(o.Host) {
		return flagErrorf("--host %s is not a loopback address: the servers would be reachable from the network; "+
			"pass --allow-non-loopback to allow it", o.Host)
	}
	return nil
}

// notice is the line the first signal prints while this run's children
// (servers and AIPerf, or Slurm tasks) run.
func (o *runOptions) notice() string {
	if o.Executor == executorSlurm {
		return noticeSlurm
	}
	return noticeChildren
}

// runQualify is the run verb: the group's pipeline (runGroup), then its
// table on stdout, the JUnit file, and the exit status from the rows.
func runQualify(ctx context.Context, opts *runOptions) error {
	if err := checkOutsideEvidence("--junit", opts.JUnit, opts.Out); err != nil {
		return err
	}
	out, err := runGroup(ctx, opts)
	if opts.Detach && err == nil {
		return nil
	}
	var rep *reports.GroupReport
	if out != nil {
		var lerr error
		if rep, lerr = reports.Load([]string{opts.Out}, opts.Group); lerr == nil {
			rep.Publisher = opts.Publish
			if rerr := reports.Render(opts.IO.Out, rep, reports.Resolve(opts.Format, opts.IO.OutTTY)); rerr != nil {
				return rerr
			}
		} else if err == nil {
			err = lerr
		}
	}
	if opts.JUnit != "" {
		if jerr := writeRunJUnit(opts, rep, err); jerr != nil && err == nil {
			err = jerr
		}
	}
	if err != nil {
		return err
	}
	return runVerdictError(out.Results)
}

// writeRunJUnit writes --junit: the group report's rows, one test case per
// profile; when the run could not produce rows (no AIPerf, a bad group...)
// a single error case carrying runErr, so the CI system still shows why.
func writeRunJUnit(opts *runOptions, rep *reports.GroupReport, runErr error) error {
	var b bytes.Buffer
	if rep != nil {
		if err := rep.JUnit(&b); err != nil {
			return err
		}
	} else {
		msg := "the run produced no rows"
		if runErr != nil {
			msg = runErr.Error()
		}
		suite := junit.Suite{Name: "trtmc-qual run " + opts.Group, Properties: [][2]string{{"group", opts.Group}},
			Cases: []junit.Case{{Name: "run", Classname: "trtmc-qual." + opts.Group, Status: junit.Error,
				Type: fmt.Sprintf("exit-%d", codeFor(runErr)), Message: msg, Output: msg}}}
		if err := junit.Write(&b, "trtmc-qual", suite); err != nil {
			return err
		}
	}
	if err := writeReport(opts.JUnit, b.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "trtmc-qual: wrote JUnit report %s\n", opts.JUnit)
	return nil
}

// runGroup runs the pipeline over one group with the resolved
// configuration, through the configured executor.
func runGroup(ctx context.Context, opts *runOptions) (*qual.Outcome, error) {
	c := opts.Config
	inv, fams, err := loadInventory(c.Inventory, c.Families)
	if err != nil {
		return nil, err
	}
	probe := qual.NvidiaSMI{Runner: opts.Runner}
	gpus, err := runGPUs(ctx, opts, probe)
	if err != nil {
		return nil, err
	}
	var pool *qual.Pool
	if opts.Executor != executorSlurm { // Slurm tasks use the GPUs Slurm allocates them (--gpus slurm)
		if pool, err = qual.NewPool(ctx, probe, gpus); err != nil {
			if src := c.Source("gpus"); src != "gpus" {
				err = fmt.Errorf("%s %w", src, err) // where the selection came from
			}
			return nil, err
		}
	}
	secrets := runSecrets(opts)
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locate the trtmc-qual executable for {self}: %w", err)
	}
	// Stage lines and the progress display share stderr through one
	// writer, so they never glue to each other.
	prog := qual.NewProgress(opts.IO.ErrOut, opts.IO.ErrTTY, opts.Now)
	defer prog.Close()
	qopts := qual.Options{
		Inventory: inv, Families: fams, Registry: families.DefaultRegistry(),
		Group: opts.Group, Only: opts.Only, Out: opts.Out, BinDir: c.BinDir, Self: self,
		AIPerf: qual.AIPerfOptions{Bin: c.AIPerf, Version: c.AIPerfVersion,
			AllowMismatch: c.AllowMismatch, Tokenizer: c.Tokenizer},
		Hardware: qual.HardwareOptions{Pool: pool, AllowMismatch: c.AllowHardwareMismatch, Probe: probe},
		Security: qual.SecurityOptions{Host: opts.Host, AllowNonLoopback: c.AllowNonLoopback, Secrets: secrets,
			SecretEnv: c.Secrets, ServeToken: opts.Getenv(qual.ServeTokenEnv)},
		Provenance: qual.ProvenanceOptions{HarnessVersion: opts.Version, HarnessCommit: opts.Commit,
			Slurm: slurm.TaskFromEnv(opts.Getenv), Command: reproCommand(opts), Roots: runRoots(opts)},
		Publish: opts.Publish,
		Resume:  opts.Resume, Runner: opts.Runner, Log: prog, Progress: prog, Now: opts.Now,
	}
	if opts.Executor != executorSlurm {
		return qual.Local{}.Run(ctx, qopts)
	}
	ex, err := slurmExecutor(opts)
	if err != nil {
		return nil, err
	}
	out, err := ex.Run(ctx, qopts)
	if err == nil && opts.Detach {
		for _, id := range ex.JobIDs {
			fmt.Fprintln(opts.IO.Out, id)
		}
	}
	return out, err
}

// runGPUs is the GPU selection: --gpus slurm is the GPUs Slurm allocated
// this task.
func runGPUs(ctx context.Context, opts *runOptions, probe qual.NvidiaSMI) (string, error) {
	if opts.GPUs != slurm.GPUSelectionSlurm {
		return opts.GPUs, nil
	}
	sel, note, err := slurm.GPUSelection(ctx, probe, opts.Getenv)
	if err != nil {
		return "", &qual.SetupError{Err: err}
	}
	if note != "" {
		fmt.Fprintf(opts.IO.ErrOut, "trtmc-qual: --gpus slurm: %s\n", note)
	}
	return sel, nil
}

// runSecrets are the values of the configured secret variables, which
// never reach the evidence; a short one is warned about.
func runSecrets(opts *runOptions) []string {
	secrets := []string{}
	for _, name := range opts.Config.Secrets {
		if v := opts.Getenv(name); v != "" {
			secrets = append(secrets, v)
			if len(v) < shortSecret {
				fmt.Fprintf(opts.IO.ErrOut, "trtmc-qual: warning: secret %s is only %d characters long; it is redacted everywhere, "+
					"which can also mask unrelated text of the evidence that happens to equal it\n", name, len(v))
			}
		}
	}
	return secrets
}

// slurmExecutor builds the Slurm executor from the configuration: each
// task runs this trtmc-qual (or slurm.trtmc_qual) with the configuration
// resolved here passed as explicit flags and absolute paths, so every node
// runs exactly what this driver would run locally.
func slurmExecutor(opts *runOptions) (*slurm.Executor, error) {
	c := opts.Config
	sc := c.Slurm.Config
	if err := sc.Validate(); err != nil {
		return nil, &configError{err}
	}
	self := c.Slurm.TrtmcQual
	if self == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find this trtmc-qual for the Slurm tasks (set slurm.trtmc_qual): %w", err)
		}
		if self, err = filepath.EvalSymlinks(exe); err != nil {
			return nil, err
		}
	}
	argv := append([]string{absPath(self)}, shapingFlags(c)...)
	argv = append(argv, "run", "--group", opts.Group, "--out", absPath(opts.Out), "--executor", executorLocal,
		"--gpus", slurm.GPUSelectionSlurm, "--host", opts.Host, "--format", "tsv")
	argv = append(argv, shapingRunFlags(c)...)
	return &slurm.Executor{Config: sc, Runner: opts.Runner, Task: argv, Detach: opts.Detach, RowExits: rowExitStatuses()}, nil
}

// runRoots are the named roots a run records in every row
// (provenance.roots): its evidence root and this host's roots.
func runRoots(opts *runOptions) []verdict.Root {
	return append([]verdict.Root{{Name: publish.RootOut, Path: absPath(opts.Out)}}, hostRoots(opts.Config, opts.Getenv)...)
}

// shortSecret is the length under which a secret's redaction is likely to
// mask unrelated text too; the run warns about it.
const shortSecret = 8

// The lines the first signal prints while children run.
const (
	noticeChildren = "trtmc-qual: interrupted, stopping servers and AIPerf (Ctrl-C again to force)"
	noticeSlurm    = "trtmc-qual: interrupted, cancelling the Slurm tasks (Ctrl-C again to force; then scancel them yourself)"
)

// smokeOut is where `ci --smoke` qualifies: OUT/ci-smoke.
func smokeOut(out string) string { return filepath.Join(out, "ci-smoke") }

// smokeRun is `trtmc-qual ci --smoke`: the run pipeline over one group into
// smokeOut, passed only when every row qualifies. It reads f.Config when
// called, after the root resolved it.
func smokeRun(f *factory) SmokeFunc {
	return func(ctx context.Context, group string) (bool, string, error) {
		opts := &runOptions{Group: group, Host: "127.0.0.1"}
		opts.complete(f)
		opts.Out, opts.Executor = smokeOut(f.Config.Out), executorLocal
		out, err := runGroup(ctx, opts)
		if err != nil {
			return false, "", err
		}
		qualified := 0
		for _, r := range out.Results {
			if r.Verdict == verdict.VerdictQualified || r.Verdict == verdict.VerdictExcluded {
				qualified++
			}
		}
		summary := fmt.Sprintf("%d of %d row(s) qualified or excluded; evidence in %s", qualified, len(out.Results), filepath.Join(opts.Out, group))
		return runVerdictError(out.Results) == nil, summary, nil
	}
}

// runVerdictError maps the rows to the exit-code table through their
// reasons' classes (verdict.Codes): any setup reason is exit 3; any other
// row that is not qualified or excluded is exit 1.
func runVerdictError(results []*verdict.Result) error {
	var failed, setup []string
	for _, r := range results {
		switch {
		case r.HasClass(verdict.ClassSetup):
			setup = append(setup, r.Profile)
		case r.Verdict == verdict.VerdictQualified, r.Verdict == verdict.VerdictExcluded, r.Verdict == verdict.VerdictSkipped:
		default:
			failed = append(failed, r.Profile)
		}
	}
	switch {
	case len(setup) > 0:
		return withCode(exitSetup, fmt.Errorf("setup failed for %s (server, GPU or AIPerf unavailable); see the reasons above", strings.Join(setup, ", ")))
	case len(failed) > 0:
		return withCode(exitFailed, fmt.Errorf("%d of %d row(s) not qualified: %s", len(failed), len(results), strings.Join(failed, ", ")))
	}
	return nil
}

// reproCommand is the command that reproduces a run: every flag and
// TRTMC_QUAL_* setting that shaped it, resolved (the config file is named
// too; what it set is in it), shell-quoted so that pasting it runs exactly
// this. Secret values are redacted by the caller's redactor.
func reproCommand(opts *runOptions) string {
	argv := append([]string{"trtmc-qual"}, shapingFlags(opts.Config)...)
	argv = append(argv, "run", "--group", opts.Group, "--out", absPath(opts.Out))
	if opts.GPUs != "" {
		argv = append(argv, "--gpus", opts.GPUs)
	}
	if opts.Host != "" && opts.Host != "127.0.0.1" {
		argv = append(argv, "--host", opts.Host)
	}
	argv = append(argv, shapingRunFlags(opts.Config)...)
	cmd := text.ShellJoin(argv)
	// The environment that shaped the children beside the flags above
	// (which already carry the resolved TRTMC_QUAL_* values). A secret is
	// never written: the command takes it from the caller's environment.
	var env []string
	for _, name := range reproEnv {
		v := opts.Getenv(name)
		switch {
		case v == "":
		case slices.Contains(opts.Config.Secrets, name):
			env = append(env, name+`="$`+name+`"`)
		default:
			env = append(env, name+"="+text.ShellQuote(v))
		}
	}
	if len(env) > 0 {
		cmd = strings.Join(env, " ") + " " + cmd
	}
	return cmd
}

// shapingFlags are the global flags for every setting of c that shapes a
// run, paths made absolute: the reproduce command and the Slurm tasks'
// argv both take them from here, so neither can leave one out.
func shapingFlags(c *Config) []string {
	var argv []string
	if c.File != "" {
		argv = append(argv, "--config", absPath(c.File))
	}
	for _, inv := range c.Inventory {
		argv = append(argv, "--inventory", absPath(inv))
	}
	if c.Families != "" {
		argv = append(argv, "--families", absPath(c.Families))
	}
	aiperfBin := c.AIPerf
	if strings.ContainsRune(aiperfBin, '/') {
		aiperfBin = absPath(aiperfBin)
	}
	argv = append(argv, "--aiperf", aiperfBin, "--aiperf-version", c.AIPerfVersion)
	if c.AllowMismatch {
		argv = append(argv, "--allow-aiperf-version-mismatch")
	}
	if c.Tokenizer != "" {
		argv = append(argv, "--tokenizer", absPath(c.Tokenizer))
	}
	if c.BinDir != "" {
		argv = append(argv, "--bin-dir", absPath(c.BinDir))
	}
	return argv
}

// shapingRunFlags are run's own flags for the settings of c that shape a
// run (they follow the verb).
func shapingRunFlags(c *Config) []string {
	var argv []string
	if c.AllowHardwareMismatch {
		argv = append(argv, "--allow-hardware-mismatch")
	}
	if c.AllowNonLoopback {
		argv = append(argv, "--allow-non-loopback")
	}
	return argv
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// reproEnv are environment variables outside the flags that change what a
// run does; their values (secrets redacted) go into the reproduce command.
var reproEnv = []string{"TRTMC_SERVE_TOKEN", "TRTMC_REFSERVER_FAULT", "CUDA_VISIBLE_DEVICES"}
