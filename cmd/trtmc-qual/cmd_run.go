package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/slurm"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/junit"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// runOptions are the run verb's: the flags, the resolved configuration
// and what the pipeline needs of this process. toOptions fills them,
// Validate checks them together, and runQualify runs them; no cobra and no
// factory below.
type runOptions struct {
	IO     *IOStreams
	Runner proc.Runner
	Now    func() time.Time
	Getenv func(string) string
	// Version and Commit are the harness's, recorded in every row.
	Version, Commit string
	// Config is the resolved configuration (flags > environment > file >
	// defaults); Out, GPUs and Executor below come from it.
	Config *Config
	// Publish is what the published tables map: this host's roots and
	// identity.
	Publish publish.Publisher

	Group  string
	Only   []string
	Out    string
	GPUs   string
	Resume bool
	// Trials overrides the workload's trials (0: not given).
	Trials      int
	TrialsGiven bool
	Host        string
	Format      string
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

// runFlags are run's flags that are not configuration keys, as cobra
// parses them (kubectl's WaitFlags). The flags that are keys (--out,
// --gpus, --executor, --allow-*, the inventory and AIPerf flags) are
// resolved with the environment and the config file into Config
// (config.go); toOptions is the one place both become runOptions.
type runFlags struct {
	Group  string
	Only   []string
	Resume bool
	Trials int
	Host   string
	Format string
	JUnit  string
	Detach bool
}

// toOptions is the one resolution of run's values: the flags, the
// resolved configuration and what the run needs of this process. given
// says whether a flag was given on the command line. `ci --smoke` runs
// through it too.
func (fl *runFlags) toOptions(f *factory, given func(flag string) bool) *runOptions {
	c := f.Config
	o := &runOptions{IO: f.IO, Runner: f.Runner, Now: f.Now, Getenv: f.Getenv, Version: f.Version, Commit: f.Commit, Config: c,
		Publish: publicOptions(c, f.Getenv, nil),
		Group:   fl.Group, Only: fl.Only, Resume: fl.Resume, Host: fl.Host, Format: fl.Format, JUnit: fl.JUnit, Detach: fl.Detach,
		Out: c.Out, GPUs: c.GPUs, Executor: c.Executor, GPUsGiven: given("gpus"), Trials: fl.Trials, TrialsGiven: given("trials")}
	if o.Executor == executorSlurm {
		o.Out = slurm.EvidenceRoot(c.Out, c.Slurm.Out, given("out"))
	}
	return o
}

// runFormats are run's -o/--format values.
var runFormats = formats(reports.FormatAuto, "table", "tsv", "md", "csv", "json")

// Executors (config key `executor`, flag --executor).
const (
	executorLocal = "local"
	executorSlurm = "slurm"
)

// runLong is newRunCmd's help text.
var runLong = `Qualify every checkpoint of a group: start the family's native server, run its
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

` + exitHelp(
	exitOutcome{exitOK, "when every row is qualified (or excluded)"},
	exitOutcome{exitFailed, "when a row failed or broke"},
	exitOutcome{exitUsage, "for a usage, configuration or inventory error (a group or profile id the inventory does not have, an inventory that does not validate)"},
	exitOutcome{exitSetup, "when a server, GPU or AIPerf was unavailable, a profile could not be run on this host, Slurm rejected the job, or another run holds the group's evidence"},
	exitOutcome{exitInterrupted, "when interrupted"})

// runExample are newRunCmd's examples.
const runExample = `  # the reference target, from the repository root
  trtmc-qual run --group vlm --out out/demo

  # two checkpoints only, resuming finished ones, on GPUs 0 and 1
  trtmc-qual run --group detection --only yolo11n,rt-detr --resume --gpus 0,1

  # a nightly job: the Markdown table on stdout, JUnit for the CI system
  trtmc-qual run --group vlm --out out/nightly -o md --junit out/nightly-vlm-junit.xml

  # the whole group across a Slurm cluster (partition etc. in trtmc-qual.yaml)
  trtmc-qual run --group vlm --executor slurm --out /lustre/qual/out`

func newRunCmd(f *factory, runF func(*runOptions) error) *cobra.Command {
	flags := &runFlags{}
	cmd := &cobra.Command{
		Use:     "run --group G",
		Short:   "Qualify every checkpoint of a model group",
		Long:    runLong,
		Example: runExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := flags.toOptions(f, cmd.Flags().Changed)
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
	fl.StringVarP(&flags.Group, "group", "g", "", "the model group to qualify (required)")
	fl.StringSliceVar(&flags.Only, "only", nil, "only these profile ids")
	fl.String("out", "out", "evidence root directory")
	fl.String("gpus", "", `GPU indexes or UUIDs ("0,1"), "cpu", "cpu:N" (N CPU slots), or empty for every GPU nvidia-smi lists; a profile holds tp x cp of them`)
	fl.Bool("allow-hardware-mismatch", false, "run profiles whose inventory hardware scope does not match the GPUs (recorded; such rows never qualify)")
	fl.BoolVar(&flags.Resume, "resume", false, "skip checkpoints whose finished result has the same run key")
	fl.IntVar(&flags.Trials, "trials", 0, fmt.Sprintf("run each profile's warmup + measured requests this many times (1 to %d), each trial complete and joined; "+
		"the row qualifies only when every trial does (default: the workload's trials, else 1)", inventory.MaxTrials))
	fl.StringVar(&flags.Host, "host", "127.0.0.1", "address servers bind to")
	fl.Bool("allow-non-loopback", false, "allow --host beyond loopback")
	addFormatFlag(cmd, &flags.Format, runFormats)
	addFileFlag(cmd, &flags.JUnit, "junit", "also write a JUnit XML report to this file: one test case per profile", "xml")
	addInventoryFlags(fl)
	addAIPerfFlags(fl)
	markInputFiles(cmd)
	completeGroupFlag(cmd, f, "group")
	completeProfilesFlag(cmd, f, "only")
	completeGPUsFlag(cmd, f)
	_ = cmd.MarkFlagDirname("out")
	fl.String("executor", executorLocal, "where checkpoints run: local (this host) or slurm (one array task per profile; see docs/slurm.md)")
	fl.BoolVar(&flags.Detach, "detach", false, "with --executor slurm: submit, print the job id(s) and exit; follow later with trtmc-qual status")
	_ = cmd.RegisterFlagCompletionFunc("executor", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{executorLocal + "\tthis host's GPU slots", executorSlurm + "\tone Slurm array task per profile"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
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
	if o.TrialsGiven && (o.Trials < 1 || o.Trials > inventory.MaxTrials) {
		return flagErrorf("--trials must be between 1 and %d, got %d", inventory.MaxTrials, o.Trials)
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

// runGroup runs the pipeline over one group through the configured
// executor: the inventory, the GPU selection and the executor are
// resolved here, the run itself is assembled by qual.RunBuilder.
func runGroup(ctx context.Context, opts *runOptions) (*qual.Outcome, error) {
	c := opts.Config
	inv, fams, err := loadInventory(c.Inventory, c.Families)
	if err != nil {
		return nil, err
	}
	gpus, err := runGPUs(ctx, opts, qual.NvidiaSMI{Runner: opts.Runner})
	if err != nil {
		return nil, err
	}
	exec, err := runExecutor(opts)
	if err != nil {
		return nil, err
	}
	b := &qual.RunBuilder{Inventory: inv, Families: fams, Group: opts.Group, Only: opts.Only, Out: opts.Out, Resume: opts.Resume, Trials: opts.Trials,
		BinDir: c.BinDir, AIPerf: qual.AIPerfOptions{Bin: c.AIPerf, Version: c.AIPerfVersion, AllowMismatch: c.AllowMismatch, Tokenizer: c.Tokenizer},
		GPUs: gpus, AllowHardwareMismatch: c.AllowHardwareMismatch, Host: opts.Host, AllowNonLoopback: c.AllowNonLoopback,
		SecretEnv: c.Secrets, Command: reproArgv(opts), Roots: hostRoots(c, opts.Getenv), Publish: opts.Publish,
		Slurm: slurm.TaskFromEnv(opts.Getenv), Version: opts.Version, Commit: opts.Commit,
		Runner: opts.Runner, Getenv: opts.Getenv, Now: opts.Now, ErrOut: opts.IO.ErrOut, ErrTTY: opts.IO.ErrTTY}
	if src := c.Source("gpus"); src != "gpus" {
		b.GPUsSource = src
	}
	out, err := b.Run(ctx, exec)
	if err == nil {
		for _, id := range out.Submitted {
			fmt.Fprintln(opts.IO.Out, id)
		}
	}
	return out, err
}

// runExecutor is where the group's checkpoints run (config key
// `executor`): this host, or Slurm.
func runExecutor(opts *runOptions) (qual.Executor, error) {
	if opts.Executor == executorSlurm {
		return slurmExecutor(opts)
	}
	return qual.Local{}, nil
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
	argv := runArgv(fileio.Abs(self), opts, "--executor", executorLocal,
		"--gpus", slurm.GPUSelectionSlurm, "--host", opts.Host, "--format", "tsv")
	return &slurm.Executor{Config: sc, Runner: opts.Runner, Task: argv, Detach: opts.Detach, RowExits: rowExitStatuses()}, nil
}

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
		opts := (&runFlags{Group: group, Host: "127.0.0.1"}).toOptions(f, func(string) bool { return false })
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
// row that is not qualified, excluded or skipped (--resume) is exit 1.
func runVerdictError(results []*verdict.Result) error {
	var failed []string
	var setup []*verdict.Result
	for _, r := range results {
		switch {
		case r.HasClass(verdict.ClassSetup):
			setup = append(setup, r)
		case r.Verdict == verdict.VerdictQualified, r.Verdict == verdict.VerdictExcluded, r.Verdict == verdict.VerdictSkipped:
		default:
			failed = append(failed, r.Profile)
		}
	}
	switch {
	case len(setup) > 0:
		return withCode(exitSetup, setupFailure(setup))
	case len(failed) > 0:
		return withCode(exitFailed, fmt.Errorf("%d of %d row(s) not qualified: %s", len(failed), len(results), strings.Join(failed, ", ")))
	}
	return nil
}

// reproArgv is the command line that reproduces a run: every flag and
// TRTMC_QUAL_* setting that shaped it, resolved (the config file is named
// too; what it set is in it). qual.CommandLine puts the environment that
// shaped the children before it and quotes it.
func reproArgv(opts *runOptions) []string {
	var args []string
	if opts.GPUs != "" {
		args = append(args, "--gpus", opts.GPUs)
	}
	if opts.Host != "" && opts.Host != "127.0.0.1" {
		args = append(args, "--host", opts.Host)
	}
	return runArgv("trtmc-qual", opts, args...)
}

// runArgv is the one shape of a command line that runs the group as opts
// does (the reproduce command, a Slurm task's): exe, the global flags
// that shape a run, `run --group G --out DIR`, args, --trials, and run's
// own shaping flags.
func runArgv(exe string, opts *runOptions, args ...string) []string {
	argv := append([]string{exe}, shapingFlags(opts.Config)...)
	argv = append(argv, "run", "--group", opts.Group, "--out", fileio.Abs(opts.Out))
	argv = append(argv, args...)
	argv = append(argv, trialsFlag(opts)...)
	return append(argv, shapingRunFlags(opts.Config)...)
}

// shapingFlags are the global flags for every setting of c that shapes a
// run, paths made absolute: the reproduce command and the Slurm tasks'
// argv both take them from here, so neither can leave one out.
func shapingFlags(c *Config) []string {
	var argv []string
	if c.File != "" {
		argv = append(argv, "--config", fileio.Abs(c.File))
	}
	for _, inv := range c.Inventory {
		argv = append(argv, "--inventory", fileio.Abs(inv))
	}
	if c.Families != "" {
		argv = append(argv, "--families", fileio.Abs(c.Families))
	}
	aiperfBin := c.AIPerf
	if strings.ContainsRune(aiperfBin, '/') {
		aiperfBin = fileio.Abs(aiperfBin)
	}
	argv = append(argv, "--aiperf", aiperfBin, "--aiperf-version", c.AIPerfVersion)
	if c.AllowMismatch {
		argv = append(argv, "--allow-aiperf-version-mismatch")
	}
	if c.Tokenizer != "" {
		argv = append(argv, "--tokenizer", fileio.Abs(c.Tokenizer))
	}
	if c.BinDir != "" {
		argv = append(argv, "--bin-dir", fileio.Abs(c.BinDir))
	}
	return argv
}

// trialsFlag is --trials as given (the reproduce command and the Slurm
// tasks run the same trials).
func trialsFlag(opts *runOptions) []string {
	if opts.Trials < 1 {
		return nil
	}
	return []string{"--trials", strconv.Itoa(opts.Trials)}
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
