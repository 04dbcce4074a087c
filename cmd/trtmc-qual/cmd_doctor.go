package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/doctor"
	"github.com/trtmc-qual/trtmc-qual/reports"
)

type doctorOptions struct {
	IO         *IOStreams
	Runner     proc.Runner
	Getenv     func(string) string
	Groups     []string
	Repo       string
	Probe      []string
	Format     string
	MinFreeGiB float64
	// Config is the resolved configuration: the inventory, families,
	// AIPerf, tokenizer, bin dir and evidence root checked.
	Config *Config
}

// doctorFormats are doctor's -o/--format values.
var doctorFormats = formats(reports.FormatAuto, "table", "tsv", "md", "csv", "json")

// Validate checks the flags: the format, the free-space floor and the
// group and profile names.
func (o *doctorOptions) Validate() error {
	if err := doctorFormats.check(o.Format); err != nil {
		return err
	}
	if o.MinFreeGiB < 0 {
		return flagErrorf("--min-free-gib must be >= 0")
	}
	if err := checkNames("--group", o.Groups...); err != nil {
		return err
	}
	return checkNames("--probe", o.Probe...)
}

func newDoctorCmd(f *factory, runF func(*doctorOptions) error) *cobra.Command {
	opts := &doctorOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "doctor [--group G]... [--repo PATH]",
		Short: "Check that this host is ready to qualify a group",
		Long: `Check a host before a long run, and say how to fix each problem:

  gpu         GPUs present (count, model, driver) and idle, and enough of them
              for the profiles' parallelism
  executable  every program the groups' families start, on PATH, with its version
  aiperf      the required AIPerf version
  corpus      each group's corpus: present, pinned digest, a question per image
              for vision-language, image sizes readable
  bundle      every profile's bundle present and equal to its pinned sha256
  tokenizer   every vision-language profile's tokenizer directory
  disk        free space for evidence under --out
  repo        the TRTMC checkout (--repo, else TRTMC_REPO): commit, and whether
              its work tree differs from it
  trtmc       for TRTMC families, without a GPU: which trtmc-server the console
              script on PATH is and that its --help lists every flag the
              families pass; where the native worker is (beside the
              tensorrt_model_connect package of the TRTMC interpreter, else
              $TRTMC_REPO/build, or TRTMC_WORKER_BINARY); the TRTMC
              interpreter (TRTMC_PYTHON, Python >= 3.12); whether the
              checkout's commit has the server at all (PR #1292)
  probe       with --probe PROFILE (on a GPU node for TRTMC): start the
              profile's server on its bundle, wait for readiness, send one
              request with a chosen X-Request-ID and require the echo, an
              answer that extracts and names the served model, and a record
              line with the public fields; start the native worker and
              require protocol >= 2 and the capability the family needs

Excluded profiles are listed and skipped. The checks go to stdout (a table on
a terminal, tab-separated when piped, or --format json|md|csv); the verdict
line goes to stderr.

` + exitHelp(
			exitOutcome{exitOK, "ready (warnings allowed)"},
			exitOutcome{exitUsage, "usage, configuration or inventory error"},
			exitOutcome{exitSetup, "not ready"}),
		Example: `  trtmc-qual --config trtmc-qual.trtmc.yaml doctor --group vlm --repo ~/TensorRT-Model-Connect
  trtmc-qual --config trtmc-qual.trtmc.yaml doctor --group vlm --probe qwen3-vl-2b
  trtmc-qual doctor --format json | jq '.checks[] | select(.status == "fail")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			opts.Runner, opts.Getenv, opts.Config = f.Runner, f.Getenv, f.Config
			if runF != nil {
				return runF(opts)
			}
			return runDoctor(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVarP(&opts.Groups, "group", "g", nil, "groups to check (default: every group of the inventory)")
	fl.StringVar(&opts.Repo, "repo", "", "the TRTMC checkout the correctness cases run in (default $TRTMC_REPO)")
	fl.StringSliceVar(&opts.Probe, "probe", nil, "start this profile's server and worker once and prove their contract (repeatable)")
	addFormatFlag(cmd, &opts.Format, doctorFormats)
	fl.Float64Var(&opts.MinFreeGiB, "min-free-gib", 20, "free space the evidence root needs")
	addInventoryFlags(fl)
	addAIPerfFlags(fl)
	markInputFiles(cmd)
	completeGroupFlag(cmd, f, "group")
	_ = cmd.MarkFlagDirname("repo")
	return cmd
}

func runDoctor(ctx context.Context, opts *doctorOptions) error {
	c := opts.Config
	inv, fams, err := loadInventory(c.Inventory, c.Families)
	if err != nil {
		return err
	}
	for _, g := range opts.Groups {
		if _, ok := inv.Groups[g]; !ok {
			return flagErrorf("%s", inventory.WithHint(fmt.Sprintf("no group %q in the inventory (groups: %v)", g, inv.GroupNames()), g, inv.GroupNames()))
		}
	}
	self, _ := os.Executable()
	dopts := doctor.Options{
		Inventory: inv, Families: fams, Groups: opts.Groups, Repo: opts.Repo,
		Out: c.Out, MinFreeBytes: uint64(opts.MinFreeGiB * (1 << 30)),
		AIPerfBin: c.AIPerf, AIPerfVersion: c.AIPerfVersion, Tokenizer: c.Tokenizer,
		BinDir: c.BinDir, Self: self,
		Runner: opts.Runner, GPUs: qual.NvidiaSMI{Runner: opts.Runner}, LookPath: exec.LookPath, Getenv: opts.Getenv,
		FreeBytes: freeBytes,
	}
	rep := doctor.Run(ctx, dopts)
	for _, p := range opts.Probe {
		rep.Add(doctor.Probe(ctx, dopts, p)...)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch format := reports.Resolve(opts.Format, opts.IO.OutTTY); format {
	case "json":
		if err := writeJSON(opts.IO.Out, rep); err != nil {
			return err
		}
	default:
		if err := rep.Table().Write(opts.IO.Out, format); err != nil {
			return err
		}
	}
	fmt.Fprintln(opts.IO.ErrOut, rep.Summary())
	if !rep.Ready {
		return &codedError{code: exitSetup, err: fmt.Errorf("host not ready"), quiet: true}
	}
	return nil
}

// freeBytes is the space available to an unprivileged writer at path.
func freeBytes(path string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
