package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports"
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
}

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
printed to stdout; stage lines go to stderr.

Each profile holds tp x cp GPUs of --gpus for its whole run (concurrent profiles
never share one; children see them by UUID in CUDA_VISIBLE_DEVICES). A profile
that needs more GPUs than the run has, whose inventory hardware scope does not
match the GPUs, or whose family needs a GPU on a CPU-only run is not run, with
the reason (docs/gpu.md).

Exit status: 0 when every row is qualified (or excluded), 1 when a row failed or
broke, 3 when a server, GPU or AIPerf was unavailable or a profile could not be
run on this host, 130 when interrupted.`,
		Example: `  # the reference target, from the repository root
  trtmc-qual run --group vlm --out out/demo

  # two checkpoints only, resuming finished ones, on GPUs 0 and 1
  trtmc-qual run --group detection --only yolo11n,rtdetr --resume --gpus 0,1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Group == "" {
				return flagErrorf("--group is required")
			}
			if err := reports.CheckFormat(opts.Format, "", "table", "tsv", "md", "csv", "json"); err != nil {
				return &flagError{err}
			}
			opts.Out = f.Config.Out
			opts.GPUs = f.Config.GPUs
			if !f.Config.AllowNonLoopback && !qual.IsLoopback(opts.Host) {
				return flagErrorf("--host %s is not a loopback address: the servers would be reachable from the network; "+
					"pass --allow-non-loopback to allow it", opts.Host)
			}
			if runF != nil {
				return runF(opts)
			}
			return runRun(cmd, f, opts)
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
	fl.StringVarP(&opts.Format, "format", "o", "", "group table format: table, tsv, md, csv or json")
	return cmd
}

func runRun(cmd *cobra.Command, f *factory, opts *runOptions) error {
	ctx := cmd.Context()
	go func() {
		<-ctx.Done()
		// First signal: stop gracefully; a second one kills the default way.
		f.Stop()
		fmt.Fprintln(f.IO.ErrOut, "trtmc-qual: interrupted, stopping servers and AIPerf (Ctrl-C again to force)")
	}()
	out, err := runGroup(ctx, f, opts)
	if out != nil {
		if rep, lerr := reports.Load([]string{opts.Out}, opts.Group); lerr == nil {
			if rerr := reports.Render(f.IO.Out, rep, reports.Resolve(opts.Format, f.IO.OutTTY)); rerr != nil {
				return rerr
			}
		} else if err == nil {
			err = lerr
		}
	}
	if err != nil {
		return err
	}
	return runVerdictError(out.Results)
}

// runGroup runs the pipeline over one group with the resolved configuration.
func runGroup(ctx context.Context, f *factory, opts *runOptions) (*qual.Outcome, error) {
	inv, fams, err := f.loadInventory(nil)
	if err != nil {
		return nil, err
	}
	probe := qual.NvidiaSMI{Runner: f.Runner}
	pool, err := qual.NewPool(ctx, probe, opts.GPUs)
	if err != nil {
		return nil, err
	}
	secrets := []string{}
	for _, name := range f.Config.Secrets {
		if v := f.Getenv(name); v != "" {
			secrets = append(secrets, v)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locate the trtmc-qual executable for {self}: %w", err)
	}
	return qual.Run(ctx, qual.Options{
		Inventory: inv, Families: fams, Registry: families.DefaultRegistry(),
		Group: opts.Group, Only: opts.Only, Out: opts.Out, BinDir: f.Config.BinDir, Self: self,
		AIPerfBin: f.Config.AIPerf, AIPerfVersion: f.Config.AIPerfVersion, AllowMismatch: f.Config.AllowMismatch,
		Tokenizer: f.Config.Tokenizer, Pool: pool, AllowHardwareMismatch: f.Config.AllowHardwareMismatch, Resume: opts.Resume,
		Host: opts.Host, AllowNonLoopback: f.Config.AllowNonLoopback, Secrets: secrets,
		SecretEnv: f.Config.Secrets, ServeToken: f.Getenv(qual.ServeTokenEnv),
		Runner: f.Runner, GPUs: probe, Log: f.IO.ErrOut, Progress: progressWriter(f.IO), Now: f.Now,
		HarnessVersion: f.Version, HarnessCommit: f.Commit,
		Command: reproCommand(f, opts),
	})
}

// smokeRun is `trtmc-qual ci --smoke`: the run pipeline over one group into
// OUT/ci-smoke, passed only when every row qualifies.
func smokeRun(f *factory) SmokeFunc {
	return func(ctx context.Context, group string) (bool, string, error) {
		opts := &runOptions{Group: group, Out: filepath.Join(f.Config.Out, "ci-smoke"), GPUs: f.Config.GPUs, Host: "127.0.0.1"}
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

// runVerdictError maps the rows to the exit-code table.
func runVerdictError(results []*reports.Result) error {
	var failed, broken, setup []string
	for _, r := range results {
		switch r.Verdict {
		case reports.VerdictQualified, reports.VerdictExcluded, reports.VerdictSkipped:
		case reports.VerdictNotRun:
			// The host cannot run it as declared (GPUs, hardware scope).
			setup = append(setup, r.Profile)
		case reports.VerdictError:
			if isSetupFailure(r) {
				setup = append(setup, r.Profile)
			} else {
				broken = append(broken, r.Profile)
			}
		default:
			failed = append(failed, r.Profile)
		}
	}
	switch {
	case len(setup) > 0:
		return withCode(exitSetup, fmt.Errorf("setup failed for %s (server, GPU or AIPerf unavailable, or the host cannot run it as declared); see the reasons above", strings.Join(setup, ", ")))
	case len(failed)+len(broken) > 0:
		return withCode(exitFailed, fmt.Errorf("%d of %d row(s) not qualified: %s", len(failed)+len(broken), len(results), strings.Join(append(failed, broken...), ", ")))
	}
	return nil
}

// isSetupFailure reports whether a row broke because something it needs
// was unavailable: the server never came up, AIPerf is unusable, the GPU is busy.
func isSetupFailure(r *reports.Result) bool {
	for _, reason := range r.Reasons {
		switch {
		case reason.Stage == "server":
			return true
		case reason.Code == "aiperf_setup" || reason.Code == "gpu_busy" || reason.Code == "gpu_probe" || reason.Code == "port":
			return true
		}
	}
	return false
}

func reproCommand(f *factory, opts *runOptions) string {
	parts := []string{"trtmc-qual"}
	if f.Config.File != "" {
		parts = append(parts, "--config", f.Config.File)
	}
	parts = append(parts, "run", "--group", opts.Group, "--out", opts.Out)
	if opts.GPUs != "" {
		parts = append(parts, "--gpus", opts.GPUs)
	}
	if f.Config.AllowHardwareMismatch {
		parts = append(parts, "--allow-hardware-mismatch")
	}
	return strings.Join(parts, " ")
}

// progressWriter is stderr on a terminal, else nil (no live counts in logs).
func progressWriter(s *IOStreams) io.Writer {
	if s.ErrTTY {
		return s.ErrOut
	}
	return nil
}
