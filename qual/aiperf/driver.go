package aiperf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
)

// SetupError means AIPerf cannot be used at all (not installed, not
// runnable, the wrong version, no tokenizer): the CLI's exit 3.
type SetupError struct {
	Op  string
	Err error
}

func (e *SetupError) Error() string { return "aiperf setup: " + e.Op + ": " + e.Err.Error() }
func (e *SetupError) Unwrap() error { return e.Err }

// VersionCheck is the outcome of comparing `aiperf --version` with the
// expected version.
type VersionCheck struct {
	Got, Want string
	// MismatchAllowed is set when Got != Want and that was allowed.
	MismatchAllowed bool
}

// versionTimeout bounds `aiperf --version` (it starts in well under a second).
const versionTimeout = 60 * time.Second

// finalizePoll is how often the artifact directory is checked for final
// exports.
const finalizePoll = 10 * time.Millisecond

// Driver runs AIPerf. Runner is proc.OS{} in production.
type Driver struct {
	Runner proc.Runner
	// Stderr receives the driver's progress lines; nil discards them.
	Stderr io.Writer
	// Env is added to the environment of `aiperf --version` (the run's
	// temporary directory).
	Env []string
}

func (d *Driver) logf(format string, args ...any) {
	if d.Stderr != nil {
		fmt.Fprintf(d.Stderr, "aiperf: "+format+"\n", args...)
	}
}

// settledText says how long the exports took to settle after AIPerf
// exited: "after 1.2s", or "at exit (<1ms)" when they were final at once
// (never "after 0s", which reads as a duration that was not measured).
func settledText(waited time.Duration) string {
	if waited < time.Millisecond {
		return "at exit (<1ms)"
	}
	return "after " + waited.Round(time.Millisecond).String()
}

// Version runs `bin --version` and returns what it printed (the last
// non-empty line of stdout, trimmed).
func (d *Driver) Version(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	var out bytes.Buffer
	_, err := d.Runner.Run(ctx, proc.Spec{
		Name:       "aiperf --version",
		Argv:       []string{bin, "--version"},
		Env:        d.Env,
		Stdout:     &out,
		StopSignal: syscall.SIGINT,
		Grace:      5 * time.Second,
	})
	if err != nil {
		return "", &SetupError{Op: "run " + bin + " --version", Err: err}
	}
	if ctx.Err() != nil {
		return "", &SetupError{Op: "run " + bin + " --version", Err: ctx.Err()}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	v := strings.TrimSpace(lines[len(lines)-1])
	if v == "" {
		return "", &SetupError{Op: "run " + bin + " --version", Err: errors.New("printed nothing")}
	}
	return v, nil
}

// CheckVersion compares `bin --version` with want (DefaultVersion when
// empty). A mismatch is a *SetupError unless allow is set, in which case it
// is returned as MismatchAllowed for the evidence.
func (d *Driver) CheckVersion(ctx context.Context, bin, want string, allow bool) (VersionCheck, error) {
	if want == "" {
		want = DefaultVersion
	}
	got, err := d.Version(ctx, bin)
	if err != nil {
		return VersionCheck{Want: want}, err
	}
	vc := VersionCheck{Got: got, Want: want}
	if got != want {
		if !allow {
			return vc, &SetupError{Op: "version check", Err: fmt.Errorf("%s --version is %s, want %s (allow a mismatch explicitly to run anyway)", bin, got, want)}
		}
		vc.MismatchAllowed = true
	}
	return vc, nil
}

// Run validates c, checks the AIPerf version, runs `aiperf profile` in its
// own process group, waits for its exports to be final, and collects them.
//
// The returned error is a *ConfigError, a *SetupError, a harness failure, or
// the context's error when ctx was cancelled (the child was stopped with
// SIGINT, then SIGKILL after the grace period). A run that went wrong on
// AIPerf's or the server's side is not an error: it is a *Run with
// Problems (see Run.Err). AIPerf's stdout and stderr are kept in the
// artifact directory as aiperf.stdout.log and aiperf.stderr.log, next to
// its own logs/aiperf.log.
func (d *Driver) Run(ctx context.Context, c Config) (*Run, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := checkInputs(c); err != nil {
		return nil, err
	}
	vc, err := d.version(ctx, c)
	if err != nil {
		return nil, err
	}
	if err := freshDir(c.ArtifactDir); err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp(c.TempDir, "trtmc-aiperf-home-")
	if err != nil {
		return nil, fmt.Errorf("aiperf: %w", err)
	}
	defer os.RemoveAll(home)
	stdout, stderr, err := openLogs(c.ArtifactDir)
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	defer stderr.Close()

	argv := Argv(c)
	env, err := d.env(c, home)
	if err != nil {
		return nil, err
	}
	run := &Run{
		Argv:                   Redacted(argv),
		Version:                vc.Got,
		VersionMismatchAllowed: vc.MismatchAllowed,
		ExpectedVersion:        vc.Want,
		ArtifactDir:            c.ArtifactDir,
	}
	res, err := d.profile(ctx, c, proc.Spec{
		Name:       "aiperf",
		Argv:       argv,
		Env:        env,
		Stdout:     stdout,
		Stderr:     stderr,
		StopSignal: syscall.SIGINT, // AIPerf writes its results on SIGINT, not SIGTERM
		Grace:      c.grace(),
	})
	if err != nil {
		return nil, err
	}
	run.ExitCode = res.ExitCode
	run.ProcessDuration = res.Duration
	run.Survivors = res.Survivors

	waited := waitFinal(ctx, c.ArtifactDir, res.ExitCode == 0 && !res.Stopped, c.finalizeWait())
	d.logf("exports settled %s", settledText(waited))
	collected, err := Collect(c.ArtifactDir, Expect{
		Warmup:      c.Warmup,
		Measured:    c.Measured,
		Version:     vc.Got,
		Dataset:     c.Dataset,
		OutputsJSON: c.OutputsJSON,
	})
	if err != nil {
		return nil, err
	}
	run.Ready = collected.Ready
	run.Summary = collected.Summary
	run.Requests = collected.Requests
	run.Outputs = collected.Outputs
	run.Problems = append(exitProblems(ctx, c, res), collected.Problems...)
	if err := ctx.Err(); err != nil {
		return run, err
	}
	return run, nil
}

// version is the run's AIPerf version check: the group's when it did one
// (c.Version), else `aiperf --version` now. A mismatch that is allowed is
// logged.
func (d *Driver) version(ctx context.Context, c Config) (VersionCheck, error) {
	vc := VersionCheck{}
	if c.Version != nil {
		vc = *c.Version
	} else {
		var err error
		if vc, err = d.CheckVersion(ctx, c.Bin, c.expectedVersion(), c.AllowVersionMismatch); err != nil {
			return vc, err
		}
	}
	if vc.MismatchAllowed {
		d.logf("version %s differs from the expected %s; running anyway as allowed", vc.Got, vc.Want)
	}
	return vc, nil
}

// openLogs creates AIPerf's stdout and stderr files in its artifact
// directory.
func openLogs(dir string) (stdout, stderr *os.File, err error) {
	stdout, err = os.Create(filepath.Join(dir, FileStdout))
	if err != nil {
		return nil, nil, fmt.Errorf("aiperf: %w", err)
	}
	stderr, err = os.Create(filepath.Join(dir, FileStderr))
	if err != nil {
		stdout.Close()
		return nil, nil, fmt.Errorf("aiperf: %w", err)
	}
	return stdout, stderr, nil
}

// env is AIPerf's environment: hermetic, then the caller's, then the API
// key through the environment and the config file KeyConfig writes — or,
// when the key cannot go that way, a note that it is in argv.
func (d *Driver) env(c Config, home string) ([]string, error) {
	env := append(hermeticEnv(home), c.Env...)
	switch {
	case KeyViaEnv(c):
		if err := os.WriteFile(KeyConfigFile(c), KeyConfig(c), 0o644); err != nil {
			return nil, fmt.Errorf("aiperf: %w", err)
		}
		env = append(env, APIKeyEnv+"="+c.APIKey, apiKeyEnvEnd+"=")
	case c.APIKey != "":
		d.logf("the API key (or the input path) holds $, { or }, which AIPerf's config file would expand: passing it as --api-key, visible in AIPerf's argv while it runs")
	}
	return env, nil
}

// profile runs `aiperf profile` under the run's deadline. AIPerf exiting
// with a status is not an error (the caller records it); one that cannot
// start is a *SetupError.
func (d *Driver) profile(ctx context.Context, c Config, spec proc.Spec) (proc.Result, error) {
	runCtx := ctx
	if c.Deadline > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, c.Deadline)
		defer cancel()
	}
	d.logf("profiling %s (%s, %d warmup + %d measured, concurrency %d) into %s",
		c.URL, c.EndpointType, c.Warmup, c.Measured, c.Concurrency, c.ArtifactDir)
	start := time.Now()
	res, err := d.Runner.Run(runCtx, spec)
	var exitErr *proc.ExitError
	switch {
	case err == nil, errors.As(err, &exitErr):
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission):
		return res, &SetupError{Op: "start " + c.Bin, Err: err}
	default:
		return res, fmt.Errorf("aiperf: %w", err)
	}
	d.logf("exited with status %d after %s", res.ExitCode, time.Since(start).Round(time.Millisecond))
	return res, nil
}

// exitProblems are the problems of how AIPerf ended: stopped at the
// deadline or by an interrupt, or exited with a status or a signal.
func exitProblems(ctx context.Context, c Config, res proc.Result) []Problem {
	var pre []Problem
	if res.Stopped {
		how := "stopped"
		if res.Killed {
			how = "stopped (SIGKILL after the grace period)"
		}
		if ctx.Err() == nil {
			pre = append(pre, Problem{Code: ProblemDeadline, Detail: fmt.Sprintf("deadline %s passed; aiperf %s", c.Deadline, how)})
		} else {
			pre = append(pre, Problem{Code: ProblemInterrupted, Detail: "interrupted; aiperf " + how})
		}
	}
	if res.ExitCode != 0 {
		how := fmt.Sprintf("exited with status %d", res.ExitCode)
		if res.Signal != "" {
			how = fmt.Sprintf("was killed by a signal (%s)", res.Signal)
		}
		detail := fmt.Sprintf("aiperf %s; see %s and %s", how, FileStdout, FileLog)
		if tail := stderrTail(res.StderrTail, 5); tail != "" {
			detail += "; last stderr lines:\n" + tail
		}
		pre = append(pre, Problem{Code: ProblemExitStatus, Detail: detail})
	}
	return pre
}

// checkInputs checks what must exist on disk before AIPerf starts.
func checkInputs(c Config) error {
	if st, err := os.Stat(c.InputFile); err != nil {
		return &ConfigError{Err: fmt.Errorf("input file: %w", err)}
	} else if st.IsDir() {
		return &ConfigError{Err: fmt.Errorf("input file: %s is a directory", c.InputFile)}
	}
	if endpoint.NeedsTokenizer(c.EndpointType) {
		if _, err := os.Stat(filepath.Join(c.Tokenizer, "tokenizer.json")); err != nil {
			return &SetupError{Op: "tokenizer", Err: fmt.Errorf("%s has no tokenizer.json (run scripts/setup-venv.sh): %w", c.Tokenizer, err)}
		}
	}
	return nil
}

// freshDir creates dir, which must not exist or be empty: stale exports in
// a reused directory would be read as this run's.
func freshDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("aiperf: artifact dir: %w", err)
	case len(entries) > 0:
		return &ConfigError{Err: fmt.Errorf("artifact dir %s is not empty; every run needs a fresh one", dir)}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("aiperf: artifact dir: %w", err)
	}
	return nil
}

// hermeticEnv keeps AIPerf's caches out of the user's home and away from the
// model hub. HF_HUB_OFFLINE and TRANSFORMERS_OFFLINE are set empty (false):
// with offline mode on, AIPerf 0.13.0 routes a local tokenizer path through
// snapshot_download and fails.
func hermeticEnv(home string) []string {
	return []string{
		"HOME=" + home,
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"HF_HOME=" + filepath.Join(home, "hf"),
		"TIKTOKEN_CACHE_DIR=" + filepath.Join(home, "tiktoken"),
		"MPLCONFIGDIR=" + filepath.Join(home, "matplotlib"),
		"HF_HUB_OFFLINE=",
		"TRANSFORMERS_OFFLINE=",
		"HF_HUB_DISABLE_TELEMETRY=1",
		"NO_COLOR=1",
	}
}

// waitFinal waits until the exports in dir are final: the ready marker is
// present, no processing marker, and the sizes of the export files did not
// change over one poll interval. When AIPerf failed (expectMarker false) no
// marker will come, so only stable sizes are awaited. It gives up after
// limit and returns how long it waited; Collect then names what is missing.
func waitFinal(ctx context.Context, dir string, expectMarker bool, limit time.Duration) time.Duration {
	start := time.Now()
	deadline := start.Add(limit)
	prev := snapshot(dir)
	if expectMarker && prev.ready && !prev.processing {
		return time.Since(start)
	}
	for {
		select {
		case <-ctx.Done():
			return time.Since(start)
		case <-time.After(finalizePoll):
		}
		cur := snapshot(dir)
		stable := cur == prev
		prev = cur
		if stable && !cur.processing && (cur.ready || !expectMarker) {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			return time.Since(start)
		}
	}
}

type dirState struct {
	ready, processing bool
	sizes             [4]int64
}

func snapshot(dir string) dirState {
	var s dirState
	_, err := os.Stat(filepath.Join(dir, FileReadyMarker))
	s.ready = err == nil
	_, err = os.Stat(filepath.Join(dir, FileProcessing))
	s.processing = err == nil
	for i, name := range []string{FileSummary, FileRecords, FileRaw, FileOutputs} {
		s.sizes[i] = -1
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil {
			s.sizes[i] = st.Size()
		}
	}
	return s
}

// stderrTail is the last n non-empty lines of a child's stderr, indented,
// for a problem's detail.
func stderrTail(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, "    "+strings.TrimRight(l, "\r"))
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
