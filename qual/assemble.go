package qual

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// RunBuilder is one group run as its caller resolved it — the values of
// the command line and the configuration, and what the process gives —
// before the pipeline's Options are assembled from it (Build): the GPU
// pool, the secrets, {self}, the roots, the command that reproduces the
// run and the progress display are the pipeline's own assembly, so the
// command-line wiring only resolves values and calls Run.
type RunBuilder struct {
	Inventory *inventory.Inventory
	Families  *families.Config
	Group     string
	Only      []string
	// Out is the evidence root.
	Out    string
	Resume bool
	// Trials overrides the workload's trials (0: the workload's).
	Trials int
	// BinDir is {bin} in family argv templates.
	BinDir string
	AIPerf AIPerfOptions
	// GPUs is the GPU selection (CheckGPUSelection's syntax), resolved;
	// GPUsSource, when set, names where it came from ("--gpus",
	// "TRTMC_QUAL_GPUS", "config file c.yaml: gpus") before an error of a
	// selection the host cannot give.
	GPUs, GPUsSource      string
	AllowHardwareMismatch bool
	// Host is the address servers bind to.
	Host             string
	AllowNonLoopback bool
	// SecretEnv names the environment variables whose values are secrets.
	SecretEnv []string
	// Command is the command line that reproduces the run as the caller
	// writes it (its flags, resolved); the environment that shaped the run
	// goes before it (CommandLine).
	Command []string
	// Roots are this host's named roots; the evidence root is put first.
	Roots []verdict.Root
	// Publish is what the published tables map.
	Publish publish.Publisher
	// Slurm is the Slurm task this process runs as, if any.
	Slurm *verdict.SlurmTask
	// Version and Commit are the harness's, recorded in every row.
	Version, Commit string

	Runner proc.Runner
	Getenv func(string) string
	Now    func() time.Time
	// ErrOut receives warnings, the stage lines and the progress display
	// (ErrTTY: it is a terminal).
	ErrOut io.Writer
	ErrTTY bool
}

// Run assembles the group run for the executor (Build) and runs it there.
func (b *RunBuilder) Run(ctx context.Context, exec Executor) (*Outcome, error) {
	opts, err := b.Build(ctx, exec)
	if err != nil {
		return nil, err
	}
	defer opts.Progress.Close()
	return exec.Run(ctx, opts)
}

// Build assembles the pipeline's Options for the executor, in named steps:
// the GPU pool (only when the executor runs checkpoints on this host; a
// Slurm task gets the GPUs Slurm allocates it), the secrets (a short one
// warned about), {self}, the roots with the evidence root first, the
// reproduce command, and the progress display that stage lines share
// stderr with (closed by Run; a caller of Build closes opts.Progress).
func (b *RunBuilder) Build(ctx context.Context, exec Executor) (Options, error) {
	probe := NvidiaSMI{Runner: b.Runner}
	pool, err := b.pool(ctx, exec, probe)
	if err != nil {
		return Options{}, err
	}
	secrets := b.secrets()
	self, err := os.Executable()
	if err != nil {
		return Options{}, fmt.Errorf("locate the trtmc-qual executable for {self}: %w", err)
	}
	prog := NewProgress(b.ErrOut, b.ErrTTY, b.Now)
	return Options{
		Inventory: b.Inventory, Families: b.Families, Registry: families.DefaultRegistry(),
		Group: b.Group, Only: b.Only, Out: b.Out, BinDir: b.BinDir, Self: self,
		AIPerf:   b.AIPerf,
		Hardware: HardwareOptions{Pool: pool, AllowMismatch: b.AllowHardwareMismatch, Probe: probe},
		Security: SecurityOptions{Host: b.Host, AllowNonLoopback: b.AllowNonLoopback, Secrets: secrets,
			SecretEnv: b.SecretEnv, ServeToken: b.Getenv(ServeTokenEnv)},
		Provenance: ProvenanceOptions{HarnessVersion: b.Version, HarnessCommit: b.Commit, Slurm: b.Slurm,
			Command: CommandLine(b.Command, b.Getenv, b.SecretEnv), Roots: b.roots()},
		Publish: b.Publish,
		Resume:  b.Resume, Trials: b.Trials, Runner: b.Runner, Log: prog, Progress: prog, Now: b.Now,
	}, nil
}

// pool probes the GPU selection into the slots checkpoints are scheduled
// on, when the executor runs them on this host.
func (b *RunBuilder) pool(ctx context.Context, exec Executor, probe NvidiaSMI) (*Pool, error) {
	if !exec.OnThisHost() {
		return nil, nil
	}
	pool, err := NewPool(ctx, probe, b.GPUs)
	if err != nil && b.GPUsSource != "" {
		err = fmt.Errorf("%s %w", b.GPUsSource, err) // where the selection came from
	}
	return pool, err
}

// shortSecret is the length under which a secret's redaction is likely to
// mask unrelated text too; the run warns about it.
const shortSecret = 8

// secrets are the values of the configured secret variables, which never
// reach the evidence; a short one is warned about.
func (b *RunBuilder) secrets() []string {
	secrets := []string{}
	for _, name := range b.SecretEnv {
		if v := b.Getenv(name); v != "" {
			secrets = append(secrets, v)
			if len(v) < shortSecret {
				fmt.Fprintf(b.ErrOut, "trtmc-qual: warning: secret %s is only %d characters long; it is redacted everywhere, "+
					"which can also mask unrelated text of the evidence that happens to equal it\n", name, len(v))
			}
		}
	}
	return secrets
}

// roots are the named roots a run records in every row
// (provenance.roots): its evidence root and this host's roots.
func (b *RunBuilder) roots() []verdict.Root {
	return append([]verdict.Root{{Name: publish.RootOut, Path: fileio.Abs(b.Out)}}, b.Roots...)
}

// ReproEnv are the environment variables outside the command line that
// change what a run does; their values (secrets referenced, never
// written) go into the reproduce command.
var ReproEnv = []string{ServeTokenEnv, "TRTMC_REFSERVER_FAULT", "CUDA_VISIBLE_DEVICES"}

// CommandLine is the command that reproduces a run: argv shell-quoted so
// that pasting it runs exactly this, after the ReproEnv variables that
// are set. A secret (one of secretEnv) is never written: the command takes
// it from the caller's environment.
func CommandLine(argv []string, getenv func(string) string, secretEnv []string) string {
	cmd := text.ShellJoin(argv)
	var env []string
	for _, name := range ReproEnv {
		v := getenv(name)
		switch {
		case v == "":
		case slices.Contains(secretEnv, name):
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
