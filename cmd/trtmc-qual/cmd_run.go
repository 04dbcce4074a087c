package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/text"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/slurm"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/junit"
)

type runOptions struct {
	IO     *IOStreams
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
}

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
  trtmc-qual run --group vlm --out out/nightly -o md --junit out/nightly/vlm-junit.xml

  # the whole group across a Slurm cluster (partition etc. in trtmc-qual.yaml)
  trtmc-qual run --group vlm --executor slurm --out /lustre/qual/out`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Group == "" {
				return flagErrorf("--group is required")
			}
			if err := checkNames("--group", opts.Group); err != nil {
				return err
			}
			if err := checkNames("--only", opts.Only...); err != nil {
				return err
			}
			if err := checkFormatFlag(cmd); err != nil {
				return err
			}
			if err := checkFileKind("junit", opts.JUnit, "xml"); err != nil {
				return err
			}
			opts.Out = f.Config.Out
			opts.GPUs = f.Config.GPUs
			opts.Executor = f.Config.Executor
			if opts.Executor == executorSlurm && f.Config.Slurm.Out != "" && !cmd.Flags().Changed("out") {
				opts.Out = f.Config.Slurm.Out
			}
			if opts.Detach && opts.Executor != executorSlurm {
				return flagErrorf("--detach needs --executor slurm")
			}
			if opts.Executor == executorSlurm && cmd.Flags().Changed("gpus") {
				return flagErrorf("--gpus does not apply to --executor slurm: each task uses the GPUs Slurm allocates it (slurm.gpu_request)")
			}
			if !f.Config.AllowNonLoopback && !qual.IsLoopback(opts.Host) {
				return flagErrorf("--host %s is not a loopback address: the servers would be reachable from the network; "+
					"pass --allow-non-loopback to allow it", opts.Host)
			}
			if runF != nil {
				return runF(opts)
			}
			return runAndReport(cmd, f, opts)
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
	addFormatFlag(cmd, &opts.Format, reports.FormatAuto, "table", "tsv", "md", "csv", "json")
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

// runAndReport is the run verb: the group's pipeline (runGroup), then its
// table on stdout, the JUnit file, and the exit status from the rows.
func runAndReport(cmd *cobra.Command, f *factory, opts *runOptions) error {
	ctx := cmd.Context()
	if opts.Executor == executorSlurm {
		f.Interrupts.SetNotice(noticeSlurm)
	} else {
		f.Interrupts.SetNotice(noticeChildren)
	}
	out, err := runGroup(ctx, f, opts)
	if opts.Detach && err == nil {
		return nil
	}
	var rep *reports.GroupReport
	if out != nil {
		var lerr error
		if rep, lerr = reports.Load([]string{opts.Out}, opts.Group); lerr == nil {
			rep.Publish = publicOptions(f, nil)
			if rerr := reports.Render(f.IO.Out, rep, reports.Resolve(opts.Format, f.IO.OutTTY)); rerr != nil {
				return rerr
			}
		} else if err == nil {
			err = lerr
		}
	}
	if opts.JUnit != "" {
		if jerr := writeRunJUnit(f, opts, rep, err); jerr != nil && err == nil {
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
func writeRunJUnit(f *factory, opts *runOptions, rep *reports.GroupReport, runErr error) error {
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
	fmt.Fprintf(f.IO.ErrOut, "trtmc-qual: wrote JUnit report %s\n", opts.JUnit)
	return nil
}

// runGroup runs the pipeline over one group with the resolved
// configuration, through the configured executor.
func runGroup(ctx context.Context, f *factory, opts *runOptions) (*qual.Outcome, error) {
	inv, fams, err := f.loadInventory(nil)
	if err != nil {
		return nil, err
	}
	probe := qual.NvidiaSMI{Runner: f.Runner}
	gpus := opts.GPUs
	if gpus == slurm.GPUSelectionSlurm {
		sel, note, err := slurm.GPUSelection(ctx, probe, f.Getenv)
		if err != nil {
			return nil, &qual.SetupError{Err: err}
		}
		if note != "" {
			fmt.Fprintf(f.IO.ErrOut, "trtmc-qual: --gpus slurm: %s\n", note)
		}
		gpus = sel
	}
	var pool *qual.Pool
	if opts.Executor != executorSlurm { // Slurm tasks use the GPUs Slurm allocates them (--gpus slurm)
		if pool, err = qual.NewPool(ctx, probe, gpus); err != nil {
			if src := f.Config.Source("gpus"); src != "gpus" {
				err = fmt.Errorf("%s %w", src, err) // where the selection came from
			}
			return nil, err
		}
	}
	secrets := []string{}
	for _, name := range f.Config.Secrets {
		if v := f.Getenv(name); v != "" {
			secrets = append(secrets, v)
			if len(v) < shortSecret {
				fmt.Fprintf(f.IO.ErrOut, "trtmc-qual: warning: secret %s is only %d characters long; it is redacted everywhere, "+
					"which can also mask unrelated text of the evidence that happens to equal it\n", name, len(v))
			}
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locate the trtmc-qual executable for {self}: %w", err)
	}
	// Stage lines and the progress display share stderr through one
	// writer, so they never glue to each other.
	prog := qual.NewProgress(f.IO.ErrOut, f.IO.ErrTTY, f.Now)
	defer prog.Close()
	qopts := qual.Options{
		Inventory: inv, Families: fams, Registry: families.DefaultRegistry(),
		Group: opts.Group, Only: opts.Only, Out: opts.Out, BinDir: f.Config.BinDir, Self: self,
		AIPerf: qual.AIPerfOptions{Bin: f.Config.AIPerf, Version: f.Config.AIPerfVersion,
			AllowMismatch: f.Config.AllowMismatch, Tokenizer: f.Config.Tokenizer},
		Hardware: qual.HardwareOptions{Pool: pool, AllowMismatch: f.Config.AllowHardwareMismatch, Probe: probe},
		Security: qual.SecurityOptions{Host: opts.Host, AllowNonLoopback: f.Config.AllowNonLoopback, Secrets: secrets,
			SecretEnv: f.Config.Secrets, ServeToken: f.Getenv(qual.ServeTokenEnv)},
		Provenance: qual.ProvenanceOptions{HarnessVersion: f.Version, HarnessCommit: f.Commit,
			Slurm: slurm.TaskFromEnv(f.Getenv), Command: reproCommand(f, opts), Roots: runRoots(f, opts)},
		Publish: publicOptions(f, nil),
		Resume:  opts.Resume, Runner: f.Runner, Log: prog, Progress: prog, Now: f.Now,
	}
	if opts.Executor != executorSlurm {
		return qual.Local{}.Run(ctx, qopts)
	}
	ex, err := slurmExecutor(f, opts)
	if err != nil {
		return nil, err
	}
	out, err := ex.Run(ctx, qopts)
	if err == nil && opts.Detach {
		for _, id := range ex.JobIDs {
			fmt.Fprintln(f.IO.Out, id)
		}
	}
	return out, err
}

// slurmExecutor builds the Slurm executor from the configuration: each
// task runs this trtmc-qual (or slurm.trtmc_qual) with the configuration
// resolved here passed as explicit flags and absolute paths, so every node
// runs exactly what this driver would run locally.
func slurmExecutor(f *factory, opts *runOptions) (*slurm.Executor, error) {
	c := f.Config
	sc := slurm.Config{Partition: c.Slurm.Partition, Account: c.Slurm.Account, TimeLimit: c.Slurm.TimeLimit,
		SbatchArgs: c.Slurm.SbatchArgs, Constraints: c.Slurm.Constraints, GPURequest: c.Slurm.GPURequest,
		CPUsPerTask: c.Slurm.CPUsPerTask, MaxParallel: c.Slurm.MaxParallel, PollInterval: c.Slurm.PollInterval,
		CommandsDir: c.Slurm.CommandsDir}
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
	return &slurm.Executor{Config: sc, Runner: f.Runner, Task: argv, Detach: opts.Detach}, nil
}

// runRoots are the named roots a run records in every row
// (provenance.roots): its evidence root and this host's roots.
func runRoots(f *factory, opts *runOptions) []reports.Root {
	return append([]reports.Root{{Name: reports.RootOut, Path: absPath(opts.Out)}}, hostRoots(f)...)
}

// shortSecret is the length under which a secret's redaction is likely to
// mask unrelated text too; the run warns about it.
const shortSecret = 8

// The lines the first signal prints while children run.
const (
	noticeChildren = "trtmc-qual: interrupted, stopping servers and AIPerf (Ctrl-C again to force)"
	noticeSlurm    = "trtmc-qual: interrupted, cancelling the Slurm tasks (Ctrl-C again to force; then scancel them yourself)"
)

// smokeRun is `trtmc-qual ci --smoke`: the run pipeline over one group into
// OUT/ci-smoke, passed only when every row qualifies.
func smokeRun(f *factory) SmokeFunc {
	return func(ctx context.Context, group string) (bool, string, error) {
		opts := &runOptions{Group: group, Out: filepath.Join(f.Config.Out, "ci-smoke"), GPUs: f.Config.GPUs, Host: "127.0.0.1",
			Executor: executorLocal}
		out, err := runGroup(ctx, f, opts)
		if err != nil {
			return false, "", err
		}
		qualified := 0
		for _, r := range out.Results {
			if r.Verdict == reports.VerdictQualified || r.Verdict == reports.VerdictExcluded {
				qualified++
			}
		}
		summary := fmt.Sprintf("%d of %d row(s) qualified or excluded; evidence in %s", qualified, len(out.Results), filepath.Join(opts.Out, group))
		return runVerdictError(out.Results) == nil, summary, nil
	}
}

// runVerdictError maps the rows to the exit-code table through their
// reasons' classes (reports.Codes): any setup reason is exit 3; any other
// row that is not qualified or excluded is exit 1.
func runVerdictError(results []*reports.Result) error {
	var failed, setup []string
	for _, r := range results {
		switch {
		case r.HasClass(reports.ClassSetup):
			setup = append(setup, r.Profile)
		case r.Verdict == reports.VerdictQualified, r.Verdict == reports.VerdictExcluded, r.Verdict == reports.VerdictSkipped:
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
func reproCommand(f *factory, opts *runOptions) string {
	argv := append([]string{"trtmc-qual"}, shapingFlags(f.Config)...)
	argv = append(argv, "run", "--group", opts.Group, "--out", absPath(opts.Out))
	if opts.GPUs != "" {
		argv = append(argv, "--gpus", opts.GPUs)
	}
	if opts.Host != "" && opts.Host != "127.0.0.1" {
		argv = append(argv, "--host", opts.Host)
	}
	argv = append(argv, shapingRunFlags(f.Config)...)
	cmd := text.ShellJoin(argv)
	// The environment that shaped the children beside the flags above
	// (which already carry the resolved TRTMC_QUAL_* values). A secret is
	// never written: the command takes it from the caller's environment.
	var env []string
	for _, name := range reproEnv {
		v := f.Getenv(name)
		switch {
		case v == "":
		case slices.Contains(f.Config.Secrets, name):
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
