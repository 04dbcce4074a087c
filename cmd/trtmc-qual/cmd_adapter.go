package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/families/trtmc"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
)

// newAdapterCmd is the hidden `adapter` verb: the TRTMC families of
// families/trtmc.yaml call it through {self} to drive TRTMC's native
// worker or CLI, its e2e correctness case and its bundle builder. The
// logic lives in families/trtmc; this file only parses flags.
func newAdapterCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:    "adapter",
		Short:  "Adapters between trtmc-qual and TRTMC (called by families/trtmc.yaml)",
		Hidden: true,
		Long: `Adapters that the TRTMC families call through the {self} placeholder; a
person rarely runs them by hand (docs/trtmc.md shows how, for debugging):

  native       request lines -> TRTMC native calls -> answer lines
  correctness  TRTMC's e2e case on the served bundle -> trtmc-qual correctness result
  bundle       locate or build a profile's bundle and record its sha256`,
	}
	cmd.AddCommand(newAdapterNativeCmd(f, nil), newAdapterCorrectnessCmd(f, nil), newAdapterBundleCmd(f, nil))
	return cmd
}

type adapterNativeOptions struct {
	IO     *IOStreams
	Runner proc.Runner
	Getenv func(string) string

	Task, Path, Bundle, In, Out, Meta string

	WorkerBinary, Python, Repo       string
	WorkerCap, WorkerOp, WorkerImage string
	WorkerArgs                       []string
	WorkerProtocol                   int
	Startup, Request                 time.Duration

	Trtmc      string
	CLIArgs    []string
	CLITimeout time.Duration

	MaxNewTokens, DefaultMaxNewTokens int
	// ScoreThreshold is passed to the Task only when ScoreThresholdGiven
	// (--score-threshold on the command line).
	ScoreThreshold      float64
	ScoreThresholdGiven bool
	Clamp               bool
	Decimals            int
}

// Validate checks the flags: the required ones and the choices of
// --task, --path and --worker-image.
func (o *adapterNativeOptions) Validate() error {
	if err := requireFlags("--task", o.Task, "--bundle", o.Bundle, "--requests", o.In, "--out", o.Out); err != nil {
		return err
	}
	if o.Task != trtmc.TaskChat && o.Task != trtmc.TaskDetect {
		return flagErrorf("--task must be chat or detect, got %q", o.Task)
	}
	if o.Path != trtmc.PathWorker && o.Path != trtmc.PathCLI {
		return flagErrorf("--path must be worker or cli, got %q", o.Path)
	}
	if o.WorkerImage != "image_path" && o.WorkerImage != "image_base64" {
		return flagErrorf("--worker-image must be image_path or image_base64, got %q", o.WorkerImage)
	}
	return nil
}

func newAdapterNativeCmd(f *factory, runF func(*adapterNativeOptions) error) *cobra.Command {
	o := &adapterNativeOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "native --task chat|detect --bundle B --requests IN --out OUT",
		Short: "Answer {request_id, route, payload} lines with TRTMC's native Task",
		Long: `Read {request_id, route, payload} lines (payload = the exact body that was
posted), call the family's native Task for each, and write
{request_id, answer, task_ms} lines (or {request_id, error}) in the form the
family's extractor compares with the HTTP answer: chat {"text",
"completion_tokens"}, detection the NIM /v1/infer data array.

--path worker (default) starts one persistent native worker, 'NATIVE
_serve-worker BUNDLE', and speaks its JSONL protocol; task_ms is the
worker's model_call_ms (timing scope public_task_call_wall), checked
against the adapter's own clock. NATIVE is the native trtmc-server binary,
found as TRTMC's control plane finds it: --worker-binary (or
TRTMC_WORKER_BINARY), else tensorrt_model_connect/bin/trtmc-server beside
the package that the TRTMC interpreter (--python, TRTMC_PYTHON) imports,
else $TRTMC_REPO/build/trtmc-server; never trtmc-server from PATH, which is
the pip console script (the Python control plane). --path cli runs one 'trtmc run' or
'trtmc detect' per request (the bundle loads every time): task_ms is
'trtmc run' total_ms (prefill + decode), or null for 'trtmc detect'. --meta
records the path, the timing scope and the worker's handshake for the row.

Exit status: 0 every request answered or rejected (error lines), 1 the
worker died or broke the protocol (everything answered before is written,
and an error line names the request it died on), 2 usage, 3 a program
could not be started.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			o.Runner, o.Getenv = f.Runner, f.Getenv
			o.ScoreThresholdGiven = cmd.Flags().Changed("score-threshold")
			if runF != nil {
				return runF(o)
			}
			return runAdapterNative(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Task, "task", "", "chat (vision-language, /v1/chat/completions) or detect (/v1/infer)")
	fl.StringVar(&o.Path, "path", trtmc.PathWorker, "worker (persistent JSONL worker) or cli (trtmc run / trtmc detect per request)")
	fl.StringVar(&o.Bundle, "bundle", "", "the served bundle")
	fl.StringVar(&o.In, "requests", "", "request lines {request_id, route, payload}")
	fl.StringVar(&o.Out, "out", "", "answer lines {request_id, answer, task_ms}")
	fl.StringVar(&o.Meta, "meta", "", "write the run's path, timing scope and worker handshake here (JSON)")
	fl.StringVar(&o.WorkerBinary, "worker-binary", "", "the native worker binary (default: $TRTMC_WORKER_BINARY, else found beside the TRTMC interpreter's tensorrt_model_connect, else $TRTMC_REPO/build)")
	fl.StringVar(&o.Python, "python", "", "the TRTMC environment's interpreter (default: $TRTMC_PYTHON, else python3)")
	fl.StringVar(&o.Repo, "repo", "", "the TRTMC checkout, for build/trtmc-server (default $TRTMC_REPO)")
	fl.StringArrayVar(&o.WorkerArgs, "worker-arg", nil, "argument after '_serve-worker BUNDLE' (repeat: --worker-arg --kv-cache-size --worker-arg N)")
	fl.IntVar(&o.WorkerProtocol, "worker-protocol", 2, "protocol_version the worker must announce (0: any)")
	fl.StringVar(&o.WorkerCap, "worker-capability", "", "capability the worker must announce (empty: none required)")
	fl.StringVar(&o.WorkerOp, "worker-op", "generate", "the request op")
	fl.StringVar(&o.WorkerImage, "worker-image", "image_path", "how the image travels: image_path (a file) or image_base64")
	fl.DurationVar(&o.Startup, "startup-timeout", 15*time.Minute, "longest bundle load (worker's ready line)")
	fl.DurationVar(&o.Request, "request-timeout", 10*time.Minute, "longest single reply")
	fl.StringVar(&o.Trtmc, "trtmc", "trtmc", "the trtmc executable (cli path)")
	fl.StringArrayVar(&o.CLIArgs, "cli-arg", nil, "argument appended to every trtmc run/detect call (repeat)")
	fl.DurationVar(&o.CLITimeout, "cli-timeout", trtmc.CLIStartTimeout, "longest single trtmc run/detect process (it loads the bundle)")
	fl.IntVar(&o.MaxNewTokens, "max-new-tokens", 4096, "the server's --max-new-tokens limit")
	fl.IntVar(&o.DefaultMaxNewTokens, "default-max-new-tokens", 0, "max_new_tokens when a request names none (0: the worker's default)")
	fl.Float64Var(&o.ScoreThreshold, "score-threshold", 0, "detection score threshold passed to the Task (unset: the Task's default)")
	fl.BoolVar(&o.Clamp, "nim-clamp", false, "clamp normalised box coordinates to [0, 1] (as the /v1/infer adapter does)")
	fl.IntVar(&o.Decimals, "nim-decimals", -1, "round coordinates and confidences to N decimals (-1: no rounding)")
	return cmd
}

// runAdapterNative answers the request lines through the native Task
// (trtmc.RunNative), its images staged in a temporary directory beside
// the output.
func runAdapterNative(ctx context.Context, o *adapterNativeOptions) error {
	tmp, err := os.MkdirTemp(filepath.Dir(o.Out), ".native-images-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	opts := trtmc.NativeOptions{
		Task: o.Task, Path: o.Path, Bundle: o.Bundle, In: o.In, Out: o.Out, Meta: o.Meta,
		Worker: trtmc.WorkerSpec{
			Protocol: o.WorkerProtocol, Capability: o.WorkerCap,
			StartupTimeout: o.Startup, RequestTimeout: o.Request, Stderr: o.IO.ErrOut,
		},
		WorkerArgs: o.WorkerArgs,
		Locate:     workerLocate(o.Getenv, o.Runner, o.WorkerBinary, o.Python, o.Repo),
		WorkerOp:   o.WorkerOp, WorkerImage: o.WorkerImage,
		CLI:    trtmc.CLISpec{Trtmc: o.Trtmc, Extra: o.CLIArgs, Timeout: o.CLITimeout, Stderr: o.IO.ErrOut, TempDir: tmp},
		Limits: trtmc.ChatLimits{MaxNewTokens: o.MaxNewTokens, DefaultMaxNewTokens: o.DefaultMaxNewTokens},
		NIM:    trtmc.NIMOptions{Clamp: o.Clamp, Decimals: o.Decimals},
		Runner: o.Runner, Log: o.IO.ErrOut, TempDir: tmp,
	}
	if o.ScoreThresholdGiven {
		v := o.ScoreThreshold
		opts.ScoreThreshold = &v
	}
	meta, err := trtmc.RunNative(ctx, opts)
	if meta != nil {
		fmt.Fprintf(o.IO.ErrOut, "trtmc-qual adapter native: %d request(s): %d answered, %d error line(s); path %s, timing scope %s\n",
			meta.Requests, meta.Answered, meta.Errors, meta.Path, meta.TimingScope)
	}
	return adapterError(err)
}

type adapterCorrectnessOptions struct {
	IO     *IOStreams
	Runner proc.Runner
	Getenv func(string) string
	// SpecGroups is the configured spec-groups file (the manifest's
	// testcases are read through it).
	SpecGroups string
	// Command is the e2e command given after --; DashAt is where -- stood
	// among the arguments (cobra's ArgsLenAtDash: -1 when absent).
	Command []string
	DashAt  int

	Profile, Bundle, BundleName, EngineDir, Artifacts, Out, Repo string
	Layout, Family, QualifyProgram, QualifyEnvironment           string
	TRTMCBinary, RuntimeRoot, ModelDir                           string
	Python, WorkerBinary                                         string
	// Revision is the profile's checkpoint revision (a newer e2e test
	// that validates a prebuilt bundle requires it).
	Revision string
}

// Validate checks the flags: the required ones, the command after --,
// and a TRTMC checkout to run it in (--repo, else TRTMC_REPO).
func (o *adapterCorrectnessOptions) Validate() error {
	if err := requireFlags("--profile", o.Profile, "--bundle", o.Bundle, "--engine-dir", o.EngineDir,
		"--artifacts-dir", o.Artifacts, "--out", o.Out); err != nil {
		return err
	}
	if o.DashAt != 0 || len(o.Command) == 0 {
		return flagErrorf("give the e2e command after --")
	}
	if o.Repo == "" {
		return flagErrorf("profile %s: the TRTMC checkout is unknown: pass --repo or set TRTMC_REPO", o.Profile)
	}
	return nil
}

func newAdapterCorrectnessCmd(f *factory, runF func(*adapterCorrectnessOptions) error) *cobra.Command {
	o := &adapterCorrectnessOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "correctness --profile P --bundle B --engine-dir D --artifacts-dir A --out OUT -- COMMAND...",
		Short: "Run TRTMC's e2e case on the served bundle and convert its result.json",
		Long: `Run TRTMC's e2e case for a profile (COMMAND, in the TRTMC checkout --repo) with
an engine directory that holds only the served bundle under the manifest's
bundle name, then convert every <artifacts>/<case>/result.json into
trtmc-qual's correctness result: each metric as <case>/<stage>/<metric>, each
thresholded metric a gate {name, value, op, threshold, passed}.

It refuses to report a result that cannot be trusted: a case that built its
own bundle or changed the served one, no result.json, no thresholded metric,
a skipped case, a metric whose outcome contradicts its value, operator and
threshold. It reads TRTMC's result closed: a case of another profile, a
stage that is not a pass, a failure_type with a pass, a metric that says
passed: false without a threshold, an unknown status are failures naming the
field; a stage passes under its composite_rule only when the rule holds.

--layout auto (the default) runs the case the checkout holds: COMMAND when
its test file exists (TRTMC's older layout), else the newer layout's
trtmc-qualify run --kind accuracy (families/<f>/tests/qualification/
<profile>.accuracy.yaml; report.json), else its families/<f>/tests/
test_e2e.py. Steps the public sources do not establish fail closed, naming
the step.

Exit status: 0 passed, 1 failed (OUT written with passed=false) or no
trustworthy result (OUT not written; the message says why), 2 usage, 3 the
command could not be started.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Command, o.DashAt = args, cmd.ArgsLenAtDash()
			o.Runner, o.Getenv, o.SpecGroups = f.Runner, f.Getenv, f.Config.SpecGroups
			o.Repo = orEnv(f.Getenv, o.Repo, "TRTMC_REPO")
			if err := o.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runAdapterCorrectness(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Profile, "profile", "", "the profile (manifest name)")
	fl.StringVar(&o.Bundle, "bundle", "", "the served bundle")
	fl.StringVar(&o.BundleName, "bundle-name", "", "the manifest's bundle file name (default: the bundle's base name)")
	fl.StringVar(&o.EngineDir, "engine-dir", "", "engine directory to create (pass the same path to the case's --engine-dir)")
	fl.StringVar(&o.Artifacts, "artifacts-dir", "", "artifacts directory to create (the case's --e2e-artifacts-dir)")
	fl.StringVar(&o.Out, "out", "", "trtmc-qual correctness result to write")
	fl.StringVar(&o.Repo, "repo", "", "the TRTMC checkout the case runs in (default $TRTMC_REPO)")
	fl.StringVar(&o.Layout, "layout", trtmc.LayoutAuto, "which case runs: auto (the one the checkout holds), e2e-result, qualify or e2e-env")
	fl.StringVar(&o.Family, "trtmc-family", "", "the TRTMC family directory (families/<f>) of the newer layout")
	fl.StringVar(&o.QualifyProgram, "qualify-program", "trtmc-qualify", "TRTMC's family-owned qualification CLI (newer layout)")
	fl.StringVar(&o.QualifyEnvironment, "qualify-environment", "", "its environment file (default $TRTMC_QUALIFY_ENVIRONMENT)")
	fl.StringVar(&o.TRTMCBinary, "trtmc-binary", "", "TRTMC_BINARY for the newer e2e test (default $TRTMC_BINARY)")
	fl.StringVar(&o.RuntimeRoot, "runtime-root", "", "TRTMC_RUNTIME_ROOT for the newer e2e test (default $TRTMC_RUNTIME_ROOT, else the wheel's runtime root)")
	fl.StringVar(&o.ModelDir, "model-dir", "", "TRTMC_<FAMILY>_MODEL_DIR for the newer e2e test (default that variable)")
	fl.StringVar(&o.Python, "python", "", "the TRTMC interpreter (default $TRTMC_PYTHON, else python3)")
	fl.StringVar(&o.WorkerBinary, "worker-binary", "", "the native worker, whose directory is the runtime root (default $TRTMC_WORKER_BINARY)")
	fl.StringVar(&o.Revision, "revision", "", "the profile's checkpoint revision: TRTMC_E2E_CHECKPOINT_REVISION for a newer e2e test that validates the served bundle")
	return cmd
}

// runAdapterCorrectness runs the e2e case in the checkout and converts
// its result (trtmc.RunCorrectness), the settings the flags leave out
// taken from the environment.
func runAdapterCorrectness(ctx context.Context, o *adapterCorrectnessOptions) error {
	co := trtmc.CorrectnessOptions{
		Profile: o.Profile, Bundle: o.Bundle, BundleName: o.BundleName, EngineDir: o.EngineDir,
		ArtifactsDir: o.Artifacts, Out: o.Out, Argv: o.Command, Dir: o.Repo, Runner: o.Runner,
		Stdout: o.IO.ErrOut, Stderr: o.IO.ErrOut,
		Layout: o.Layout, Family: o.Family, QualifyProgram: o.QualifyProgram,
		QualifyEnvironment: orEnv(o.Getenv, o.QualifyEnvironment, "TRTMC_QUALIFY_ENVIRONMENT"),
		TRTMCBinary:        orEnv(o.Getenv, o.TRTMCBinary, "TRTMC_BINARY"),
		RuntimeRoot:        orEnv(o.Getenv, o.RuntimeRoot, "TRTMC_RUNTIME_ROOT"),
		Revision:           o.Revision,
	}
	if o.Family != "" {
		co.ModelDir = orEnv(o.Getenv, o.ModelDir, "TRTMC_"+strings.ToUpper(o.Family)+"_MODEL_DIR")
	}
	if co.RuntimeRoot == "" {
		// The wheel's runtime root, where the worker is found.
		if w, err := trtmc.LocateWorker(ctx, workerLocate(o.Getenv, o.Runner, o.WorkerBinary, o.Python, o.Repo)); err == nil {
			co.RuntimeRoot = w.RuntimeRoot
		}
	}
	co.Cases = manifestCases(ctx, o.SpecGroups, o.IO.ErrOut, o.Repo, o.Profile)
	res, err := trtmc.RunCorrectness(ctx, co)
	if res != nil {
		fmt.Fprintf(o.IO.ErrOut, "trtmc-qual adapter correctness: %s: %d case(s), %d metric(s), %d gate(s), passed=%t\n",
			o.Profile, len(res.Cases), len(res.Metrics), len(res.Gates), res.Passed != nil && *res.Passed)
	}
	var cf *trtmc.CorrectnessFailed
	if errors.As(err, &cf) {
		return withCode(exitFailed, err)
	}
	return adapterError(err)
}

// orEnv is v, else the environment variable name.
func orEnv(getenv func(string) string, v, name string) string {
	if v != "" {
		return v
	}
	return getenv(name)
}

// manifestCases are the testcase names of the profile's manifest at the
// checkout's HEAD (through git, as reconcile reads it), or nil when it
// cannot be read: then only a case named as the profile is accepted.
func manifestCases(ctx context.Context, specGroups string, log io.Writer, repo, profile string) []string {
	cfg, err := specs.LoadConfig(specGroups)
	if err != nil {
		return nil
	}
	snap, err := specs.Source{Git: gitread.CLI{Repo: repo}, Config: cfg, Repo: repo}.Read(ctx, "HEAD")
	if err != nil {
		fmt.Fprintf(log, "trtmc-qual adapter correctness: %s: the manifest's testcases cannot be read (%v): only a case named %s is accepted\n", profile, err, profile)
		return nil
	}
	for _, m := range snap.Manifests {
		if m.Name == profile {
			var out []string
			for _, tc := range m.Testcases {
				if tc.Name != "" {
					out = append(out, tc.Name)
				}
			}
			return out
		}
	}
	return nil
}

type adapterBundleOptions struct {
	IO     *IOStreams
	Runner proc.Runner
	// SpecGroups is the configured spec-groups file (the manifest is read
	// through it).
	SpecGroups string

	Profile, Bundle, Repo, Ref, Python string
	// Search are the directories of already-built bundles: --search, else
	// those of TRTMC_BUNDLE_DIR.
	Search []string
	Build  bool
}

// Validate checks the required flags.
func (o *adapterBundleOptions) Validate() error {
	if o.Profile == "" || o.Bundle == "" {
		return flagErrorf("--profile and --bundle are required")
	}
	return nil
}

func newAdapterBundleCmd(f *factory, runF func(*adapterBundleOptions) error) *cobra.Command {
	o := &adapterBundleOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "bundle --profile P --bundle PATH [--search DIR]... [--build --repo R --ref REF]",
		Short: "Locate or build a profile's bundle and record its sha256",
		Long: `Make the profile's bundle exist at PATH: use it when it is there, link an
already-built bundle of the same file name from a --search directory
(default: the directories of TRTMC_BUNDLE_DIR, ':'-separated), or --build it
from the profile's manifest in the TRTMC checkout (--repo, default
$TRTMC_REPO) at --ref with TRTMC's own build command. Writes
PATH.receipt.json (source, manifest, commit, argv, sha256) and prints
"<sha256>  <path>" and the inventory line that pins it.

Exit status: 0 ready, 1 missing or the build failed, 2 usage, 3 a program
could not be started.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if !cmd.Flags().Changed("search") {
				for _, d := range strings.Split(f.Getenv("TRTMC_BUNDLE_DIR"), ":") {
					if d != "" {
						o.Search = append(o.Search, d)
					}
				}
			}
			o.Repo = orEnv(f.Getenv, o.Repo, "TRTMC_REPO")
			o.Runner, o.SpecGroups = f.Runner, f.Config.SpecGroups
			if runF != nil {
				return runF(o)
			}
			return runAdapterBundle(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Profile, "profile", "", "the profile (manifest name)")
	fl.StringVar(&o.Bundle, "bundle", "", "where the inventory expects the bundle")
	fl.StringArrayVar(&o.Search, "search", nil, "directory holding already-built bundles (repeat; default $TRTMC_BUNDLE_DIR)")
	fl.BoolVar(&o.Build, "build", false, "build a missing bundle from the profile's manifest")
	fl.StringVar(&o.Repo, "repo", "", "the TRTMC checkout (default $TRTMC_REPO)")
	fl.StringVar(&o.Ref, "ref", "HEAD", "git ref of the manifest")
	fl.StringVar(&o.Python, "python", "python3", "the Python that has tensorrt_model_connect (the build)")
	return cmd
}

// runAdapterBundle makes the profile's bundle exist (trtmc.PrepareBundle)
// and prints its sha256 and the inventory line that pins it.
func runAdapterBundle(ctx context.Context, o *adapterBundleOptions) error {
	cfg, err := specs.LoadConfig(o.SpecGroups)
	if err != nil {
		return err
	}
	rc, err := trtmc.PrepareBundle(ctx, trtmc.BundleOptions{
		Profile: o.Profile, Bundle: o.Bundle, Search: o.Search, Build: o.Build, Repo: o.Repo, Ref: o.Ref,
		Python: o.Python, Specs: cfg, Git: gitread.CLI{Repo: o.Repo}, Runner: o.Runner,
		Stdout: o.IO.ErrOut, Stderr: o.IO.ErrOut,
	})
	if err != nil {
		return adapterError(err)
	}
	fmt.Fprintf(o.IO.Out, "%s  %s\n", rc.SHA256, rc.Bundle)
	fmt.Fprintf(o.IO.ErrOut, "trtmc-qual adapter bundle: %s: %s bundle; pin it in the inventory:\n  bundle: {path: %s, sha256: %s}\n",
		o.Profile, rc.Source, o.Bundle, rc.SHA256)
	return nil
}

// workerLocate resolves where the native worker is looked for: flag, then
// environment, as every trtmc-qual setting.
func workerLocate(getenv func(string) string, runner proc.Runner, binary, python, repo string) trtmc.LocateOptions {
	o := trtmc.LocateOptions{Explicit: binary, ExplicitFrom: trtmc.WorkerFromFlag, Python: python, Repo: repo, Runner: runner,
		LookPath: exec.LookPath}
	if o.Explicit == "" {
		o.Explicit, o.ExplicitFrom = getenv("TRTMC_WORKER_BINARY"), trtmc.WorkerFromEnv
	}
	if o.Python == "" {
		o.Python = getenv("TRTMC_PYTHON")
	}
	if o.Repo == "" {
		o.Repo = getenv("TRTMC_REPO")
	}
	return o
}

// adapterError gives adapter failures their exit status: a program that
// could not start is a setup error (3), anything else a failed check (1);
// cancellation stays cancellation. None is a harness bug.
func adapterError(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var ce *codedError
	if errors.As(err, &ce) {
		return err
	}
	var exitErr *proc.ExitError
	if errors.Is(err, trtmc.ErrNoWorker) {
		return withCode(exitSetup, err)
	}
	if !errors.As(err, &exitErr) && (errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrPermission)) {
		return withCode(exitSetup, err)
	}
	return withCode(exitFailed, err)
}

// requireFlags names, in the order given, the first of the (flag, value)
// pairs whose value is empty: the same message on every run.
func requireFlags(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return flagErrorf("%s is required", pairs[i])
		}
	}
	return nil
}
