package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

// factory carries the dependencies every verb gets: streams, the process
// runner, the clock, the environment, and (after PersistentPreRunE) the
// resolved configuration. Tests build their own.
type factory struct {
	IO      *IOStreams
	Runner  proc.Runner
	Now     func() time.Time
	Getenv  func(string) string
	Version string
	Commit  string
	// Interrupts is the one signal handler (signals.go); verbs that run
	// children set the line it prints on the first signal. Nil in tests
	// that send no signal.
	Interrupts *interrupts
	// Smoke is `ci --smoke`'s qualification run (the run pipeline in
	// production; nil in unit tests, where ci reports it unavailable).
	Smoke SmokeFunc

	Config *Config
}

func newFactory(io *IOStreams, sig *interrupts) *factory {
	return &factory{IO: io, Runner: proc.OS{}, Now: time.Now, Getenv: os.Getenv,
		Version: version, Commit: commit, Interrupts: sig}
}

// run builds the command tree, executes it and maps the outcome to an exit
// code. It is the only caller of os.Exit's argument.
func run(ctx context.Context, sig *interrupts, args []string, io *IOStreams) exitCode {
	f := newFactory(io, sig)
	f.Smoke = smokeRun(f)
	return execute(ctx, f, args)
}

// execute runs the command tree of f over args, printing the error once.
func execute(ctx context.Context, f *factory, args []string) exitCode {
	return executeTree(ctx, f, newRootCmd(f), args)
}

// executeTree is execute over a given tree (tests replace a verb's
// pipeline with a capture of its options).
func executeTree(ctx context.Context, f *factory, root *cobra.Command, args []string) exitCode {
	root.SetArgs(args)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	usageTree(root)
	err := unknownVerb(root, args)
	if err == nil {
		var cmd *cobra.Command
		cmd, err = root.ExecuteContextC(ctx)
		if err != nil && cmd != nil && cmd.Name() == cobra.ShellCompRequestCmd {
			// cobra adds its shell-completion verb inside Execute, after
			// usageTree; it fails only on its command line (no words).
			err = &flagError{err: err}
		}
	}
	code := codeFor(err)
	if err != nil {
		reportError(f, err, code)
	}
	return code
}

func reportError(f *factory, err error, code exitCode) {
	var ce *codedError
	if errors.As(err, &ce) && ce.quiet {
		return
	}
	// What the error quotes (a child's output, a file name) goes to a
	// terminal: control, bidi and invisible characters escaped.
	err = printableError{err}
	switch code {
	case exitInterrupted:
		fmt.Fprintln(f.IO.ErrOut, "trtmc-qual: interrupted")
	case exitHarness:
		if isIOError(err) {
			fmt.Fprintf(f.IO.ErrOut, "trtmc-qual: I/O error, evidence could not be written or read (what was written is complete; re-run with --resume once fixed): %v\n", err)
			break
		}
		var ee *verdict.EvidenceError
		if errors.As(err, &ee) {
			fmt.Fprintf(f.IO.ErrOut, "trtmc-qual: malformed evidence (a file that is not what trtmc-qual wrote): %v\n", err)
			break
		}
		fmt.Fprintf(f.IO.ErrOut, "trtmc-qual: internal error (please report it with the command and its evidence directory): %v\n", err)
	default:
		fmt.Fprintf(f.IO.ErrOut, "trtmc-qual: %v\n", err)
	}
	var fe *flagError
	if errors.As(err, &fe) {
		fmt.Fprintln(f.IO.ErrOut, "run with --help for usage")
	}
}

func newRootCmd(f *factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "trtmc-qual",
		Short: "Qualify every checkpoint of a model group on TRTMC's native server with AIPerf",
		Long: `trtmc-qual qualifies every checkpoint of a model group (vlm, detection, ...) on
TRTMC's native inference server: it starts the server, runs the family's
correctness case on the served bundle, drives pip-installed AIPerf, joins native
and HTTP answers by request identity, and writes a result row with its evidence.

Configuration: flags > TRTMC_QUAL_* environment > config file (--config, or
./trtmc-qual.yaml) > defaults. Data goes to stdout, logs to stderr.

` + exitStatusHelp(),
		Example: `  # validate the inventory and list its profiles
  trtmc-qual inventory validate
  trtmc-qual inventory list --group vlm

  # qualify the vision-language group on the reference target
  trtmc-qual run --group vlm --out out/demo`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd, f.Getenv)
			if err != nil {
				return err
			}
			f.Config = cfg
			return nil
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err: err} })
	// --version prints what `trtmc-qual version` prints.
	root.Version = f.Version
	root.SetVersionTemplate(versionLine(f))
	// Only --config is global; the inventory and AIPerf flags are declared
	// by the verbs that use them (flags.go), so `version --help` and
	// `completion --help` show nothing of run's.
	pf := root.PersistentFlags()
	pf.String("config", "", "config file (default ./trtmc-qual.yaml when present)")
	_ = root.MarkPersistentFlagFilename("config", "yaml", "yml")

	// The verbs, one file each (cmd_<verb>.go). Add a verb with one line here.
	root.AddCommand(
		newVersionCmd(f),
		newInventoryCmd(f),
		newRunCmd(f, nil),
		newReportCmd(f, nil),
		newExportCmd(f, nil),
		newStatusCmd(f, nil),
		newCICmd(f, f.Smoke, nil),
		newDoctorCmd(f, nil),
		newCorpusCmd(f),
		newAdapterCmd(f),
	)
	return root
}

// loadInventory reads the inventory files and the family configuration
// (files as configured or given), reporting every problem.
func loadInventory(files []string, familiesFile string) (*inventory.Inventory, *families.Config, error) {
	fams, err := loadFamilies(familiesFile)
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, &configError{errors.New("no inventory: pass --inventory FILE or set inventory in the config file")}
	}
	inv, err := inventory.Load(files, fams.Has)
	return inv, fams, err
}

func loadFamilies(file string) (*families.Config, error) {
	if file == "" {
		return nil, &configError{errors.New("no family configuration: pass --families FILE or set families in the config file")}
	}
	fams, err := families.Load(file)
	if err != nil {
		return nil, &configError{err}
	}
	return fams, nil
}

// printableError is an error whose message is escaped for a terminal; it
// keeps the chain for errors.As.
type printableError struct{ err error }

func (e printableError) Error() string { return text.Printable(e.err.Error()) }
func (e printableError) Unwrap() error { return e.err }

// checkOutputFile refuses a file flag that names something other than a
// regular file (a directory, a FIFO, a device): writing it atomically
// would fail halfway, as an I/O error, for what is a usage mistake.
func checkOutputFile(flag, path string) error {
	if path == "" {
		return nil
	}
	err := fileio.CheckRegular(path)
	if errors.Is(err, fileio.ErrNotRegular) {
		return flagErrorf("%s: %v", flag, err)
	}
	return nil
}

// checkOutsideEvidence refuses a file to write (flag's value path) that
// lies, its links resolved, inside an evidence tree the verb reads or
// writes (--from, --baseline, the run's --out): no output overwrites a
// sealed row or lands in a row's directory. A usage error (exit 2) naming
// the path and the tree.
func checkOutsideEvidence(flag, path string, trees ...string) error {
	if path == "" {
		return nil
	}
	if err := fileio.CheckOutside(path, trees...); err != nil {
		var inside *fileio.InsideError
		if errors.As(err, &inside) {
			return withCode(exitUsage, fmt.Errorf("%s %w", flag, err))
		}
		return withCode(exitUsage, fmt.Errorf("%s %s: %w", flag, path, err))
	}
	return nil
}

// checkNames applies the one name check (text.CheckName) to a flag's
// values: a group or profile id that could not be in a valid inventory is
// a usage error (exit 2), quoted so nothing in it reaches the terminal raw.
func checkNames(flag string, values ...string) error {
	for _, v := range values {
		if err := text.CheckName(v); err != nil {
			return flagErrorf("%s: %v", flag, err)
		}
	}
	return nil
}

// isIOError reports whether err comes from the file system refusing a
// write (full, read-only, no permission, failing): exit 4 still, but not a
// bug to report.
func isIOError(err error) bool {
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EACCES, syscall.EPERM, syscall.EIO} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
