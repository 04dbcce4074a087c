package aiperf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
)

// fakeRunner stands in for proc.OS: `--version` prints version, `profile`
// calls profile (which plays AIPerf by writing a fixture's artifacts).
type fakeRunner struct {
	version  string
	notFound bool // the binary does not exist
	profile  func(ctx context.Context, s proc.Spec, artifactDir string) (proc.Result, error)

	mu    sync.Mutex
	specs []proc.Spec
}

func (f *fakeRunner) Run(ctx context.Context, s proc.Spec) (proc.Result, error) {
	f.mu.Lock()
	f.specs = append(f.specs, s)
	f.mu.Unlock()
	if f.notFound {
		return proc.Result{}, fmt.Errorf("%s: start %s: %w", s.Name, s.Argv[0], &exec.Error{Name: s.Argv[0], Err: exec.ErrNotFound})
	}
	switch {
	case len(s.Argv) == 2 && s.Argv[1] == "--version":
		fmt.Fprintln(s.Stdout, f.version)
		return proc.Result{Argv: s.Argv}, nil
	case len(s.Argv) > 1 && s.Argv[1] == "profile" && f.profile != nil:
		i := slices.Index(s.Argv, "--artifact-dir")
		return f.profile(ctx, s, s.Argv[i+1])
	}
	return proc.Result{}, fmt.Errorf("fakeRunner: unexpected argv %q", s.Argv)
}

func (f *fakeRunner) Start(context.Context, proc.Spec) (proc.Process, error) {
	return nil, errors.New("fakeRunner: Start is not used by the aiperf driver")
}

func (f *fakeRunner) profileSpec(t *testing.T) proc.Spec {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.specs {
		if len(s.Argv) > 1 && s.Argv[1] == "profile" {
			return s
		}
	}
	t.Fatal("aiperf profile was not run")
	return proc.Spec{}
}

func (f *fakeRunner) ranProfile() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.specs {
		if len(s.Argv) > 1 && s.Argv[1] == "profile" {
			return true
		}
	}
	return false
}

// playFixture makes the fake AIPerf write a real fixture's artifacts and
// exit with its status.
func playFixture(t *testing.T, name string) func(context.Context, proc.Spec, string) (proc.Result, error) {
	src, meta := fixture(t, name)
	return func(_ context.Context, s proc.Spec, dir string) (proc.Result, error) {
		fmt.Fprintln(s.Stdout, "NVIDIA AIPerf | LLM Metrics")
		fmt.Fprintln(s.Stderr, "a warning")
		if err := golden.Copy(src, dir); err != nil {
			return proc.Result{}, err
		}
		r := proc.Result{Argv: s.Argv, ExitCode: meta.ExitCode}
		if r.ExitCode != 0 {
			return r, &proc.ExitError{Name: s.Name, Result: r}
		}
		return r, nil
	}
}

// driverConfig is a valid chat Config for the named fixture, with a real
// input file and tokenizer directory.
func driverConfig(t *testing.T, name string) Config {
	t.Helper()
	_, meta := fixture(t, name)
	work := t.TempDir()
	input := filepath.Join(work, "dataset.jsonl")
	require.NoError(t, os.WriteFile(input, []byte("{}\n"), 0o644))
	tok := filepath.Join(work, "tokenizer")
	require.NoError(t, os.MkdirAll(tok, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tok, "tokenizer.json"), []byte("{}"), 0o644))
	ds := meta.Dataset
	c := Config{
		Bin: "/venv/bin/aiperf", EndpointType: ds.EndpointType, URL: "http://127.0.0.1:9",
		Model: "ref", InputFile: input, ArtifactDir: filepath.Join(work, "artifacts"),
		Warmup: meta.Warmup, Measured: meta.Measured, Concurrency: 4, Seed: 1,
		Grace: 3 * time.Second, FinalizeWait: 2 * time.Second, Dataset: &ds,
		OutputsJSON: name == endpoint.Chat,
		Env:         []string{"EXTRA=1"},
	}
	if c.EndpointType == endpoint.Chat {
		c.Tokenizer = tok
	}
	return c
}

func envValue(env []string, key string) (string, bool) {
	v := ""
	found := false
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v, found = val, true
		}
	}
	return v, found
}

func TestDriverRun(t *testing.T) {
	for _, name := range []string{endpoint.Chat, endpoint.ImageRetrieval} {
		t.Run(name, func(t *testing.T) {
			f := &fakeRunner{version: "0.13.0", profile: playFixture(t, name)}
			var log bytes.Buffer
			d := &Driver{Runner: f, Stderr: &log}
			c := driverConfig(t, name)
			run, err := d.Run(context.Background(), c)
			require.NoError(t, err)
			require.Empty(t, run.Problems)
			s := f.profileSpec(t)
			assert.Equal(t, s.Argv, run.Argv, "the argv recorded is the one run")
			assert.Equal(t, []string{"/venv/bin/aiperf", "profile", "--endpoint-type", name, "--url", "http://127.0.0.1:9", "--model", "ref"}, run.Argv[:8])
			assert.Contains(t, strings.Join(run.Argv, " "), " --artifact-dir "+c.ArtifactDir+" ")
			assert.Equal(t, "0.13.0", run.Version)
			assert.False(t, run.VersionMismatchAllowed)
			assert.Len(t, run.Requests, 55)
			require.NotNil(t, run.Ready)
			assert.True(t, run.Ready.Ready)

			assert.Equal(t, syscall.SIGINT, s.StopSignal, "AIPerf writes results on SIGINT only")
			assert.Equal(t, c.Grace, s.Grace)
			home, ok := envValue(s.Env, "HOME")
			require.True(t, ok)
			_, err = os.Stat(home)
			assert.ErrorIs(t, err, os.ErrNotExist, "the temporary HOME is removed after the run")
			off, ok := envValue(s.Env, "HF_HUB_OFFLINE")
			assert.True(t, ok)
			assert.Empty(t, off, "offline mode breaks local tokenizer paths in 0.13.0")
			for _, k := range []string{"HF_HOME", "TIKTOKEN_CACHE_DIR", "XDG_CACHE_HOME"} {
				v, _ := envValue(s.Env, k)
				assert.True(t, strings.HasPrefix(v, home), "%s=%s under the temp HOME", k, v)
			}
			extra, _ := envValue(s.Env, "EXTRA")
			assert.Equal(t, "1", extra, "Config.Env is passed")

			out, err := os.ReadFile(filepath.Join(c.ArtifactDir, FileStdout))
			require.NoError(t, err)
			assert.Contains(t, string(out), "LLM Metrics")
			errOut, err := os.ReadFile(filepath.Join(c.ArtifactDir, FileStderr))
			require.NoError(t, err)
			assert.Equal(t, "a warning\n", string(errOut))
			assert.Contains(t, log.String(), "aiperf: exited with status 0")
		})
	}
}

func TestDriverRunAllFailed(t *testing.T) {
	f := &fakeRunner{version: "0.13.0", profile: playFixture(t, "all_failed")}
	c := driverConfig(t, "all_failed")
	start := time.Now()
	run, err := (&Driver{Runner: f}).Run(context.Background(), c)
	require.NoError(t, err, "a failed run is a Run with problems, not an error")
	assert.Less(t, time.Since(start), c.FinalizeWait, "no marker is awaited after a failed exit")
	assert.Equal(t, 1, run.ExitCode)
	assert.Equal(t, ProblemExitStatus, run.Problems[0].Code)
	assert.True(t, run.HasProblem(ProblemAllFailed))
	assert.True(t, run.HasProblem(ProblemSummaryMissing))
}

func TestDriverVersion(t *testing.T) {
	ctx := context.Background()
	t.Run("match", func(t *testing.T) {
		vc, err := (&Driver{Runner: &fakeRunner{version: "0.13.0"}}).CheckVersion(ctx, "aiperf", "", false)
		require.NoError(t, err)
		assert.Equal(t, VersionCheck{Got: "0.13.0", Want: DefaultVersion}, vc)
	})
	t.Run("last line counts", func(t *testing.T) {
		v, err := (&Driver{Runner: &fakeRunner{version: "some banner\n0.13.0\n"}}).Version(ctx, "aiperf")
		require.NoError(t, err)
		assert.Equal(t, "0.13.0", v)
	})
	t.Run("mismatch is a setup error", func(t *testing.T) {
		_, err := (&Driver{Runner: &fakeRunner{version: "0.14.1"}}).CheckVersion(ctx, "aiperf", "0.13.0", false)
		var se *SetupError
		require.ErrorAs(t, err, &se)
		assert.Contains(t, err.Error(), "aiperf --version is 0.14.1, want 0.13.0")
	})
	t.Run("allowed mismatch is recorded", func(t *testing.T) {
		vc, err := (&Driver{Runner: &fakeRunner{version: "0.14.1"}}).CheckVersion(ctx, "aiperf", "0.13.0", true)
		require.NoError(t, err)
		assert.True(t, vc.MismatchAllowed)
	})
	t.Run("no output", func(t *testing.T) {
		_, err := (&Driver{Runner: &fakeRunner{version: ""}}).Version(ctx, "aiperf")
		var se *SetupError
		require.ErrorAs(t, err, &se)
	})
	t.Run("missing binary", func(t *testing.T) {
		_, err := (&Driver{Runner: &fakeRunner{notFound: true}}).CheckVersion(ctx, "aiperf", "", false)
		var se *SetupError
		require.ErrorAs(t, err, &se)
		assert.ErrorIs(t, err, exec.ErrNotFound)
	})
}

func TestDriverRunVersionMismatch(t *testing.T) {
	c := driverConfig(t, endpoint.ImageRetrieval)
	f := &fakeRunner{version: "0.12.0", profile: playFixture(t, endpoint.ImageRetrieval)}
	_, err := (&Driver{Runner: f}).Run(context.Background(), c)
	var se *SetupError
	require.ErrorAs(t, err, &se)
	assert.False(t, f.ranProfile())

	c.AllowVersionMismatch = true
	var log bytes.Buffer
	run, err := (&Driver{Runner: f, Stderr: &log}).Run(context.Background(), c)
	require.NoError(t, err)
	assert.True(t, run.VersionMismatchAllowed)
	assert.Equal(t, "0.12.0", run.Version)
	assert.Equal(t, DefaultVersion, run.ExpectedVersion)
	assert.Contains(t, log.String(), "differs from the expected 0.13.0")
	// The fixture's summary says 0.13.0, not the 0.12.0 the binary printed.
	assert.True(t, run.HasProblem(ProblemSummaryVersion), "%v", run.Problems)
}

func TestDriverRunRefusesBadSetups(t *testing.T) {
	var se *SetupError
	var ce *ConfigError
	t.Run("artifact dir not empty", func(t *testing.T) {
		c := driverConfig(t, endpoint.Chat)
		require.NoError(t, os.MkdirAll(c.ArtifactDir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(c.ArtifactDir, FileSummary), []byte("{}"), 0o644))
		f := &fakeRunner{version: "0.13.0", profile: playFixture(t, endpoint.Chat)}
		_, err := (&Driver{Runner: f}).Run(context.Background(), c)
		require.ErrorAs(t, err, &ce)
		assert.Contains(t, err.Error(), "not empty")
		assert.False(t, f.ranProfile())
	})
	t.Run("no tokenizer.json", func(t *testing.T) {
		c := driverConfig(t, endpoint.Chat)
		c.Tokenizer = t.TempDir()
		_, err := (&Driver{Runner: &fakeRunner{version: "0.13.0"}}).Run(context.Background(), c)
		require.ErrorAs(t, err, &se)
	})
	t.Run("no input file", func(t *testing.T) {
		c := driverConfig(t, endpoint.Chat)
		c.InputFile = filepath.Join(t.TempDir(), "none.jsonl")
		_, err := (&Driver{Runner: &fakeRunner{version: "0.13.0"}}).Run(context.Background(), c)
		require.ErrorAs(t, err, &ce)
	})
	t.Run("invalid config", func(t *testing.T) {
		c := driverConfig(t, endpoint.Chat)
		c.Concurrency = 0
		_, err := (&Driver{Runner: &fakeRunner{version: "0.13.0"}}).Run(context.Background(), c)
		require.ErrorAs(t, err, &ce)
	})
	t.Run("binary vanished before profile", func(t *testing.T) {
		c := driverConfig(t, endpoint.Chat)
		f := &fakeRunner{version: "0.13.0", profile: func(context.Context, proc.Spec, string) (proc.Result, error) {
			return proc.Result{}, fmt.Errorf("aiperf: start: %w", exec.ErrNotFound)
		}}
		_, err := (&Driver{Runner: f}).Run(context.Background(), c)
		require.ErrorAs(t, err, &se)
	})
}

// blockUntilStopped plays an AIPerf that runs until it is stopped, then
// (as on SIGINT) writes its results.
func blockUntilStopped(t *testing.T, name string) func(context.Context, proc.Spec, string) (proc.Result, error) {
	play := playFixture(t, name)
	return func(ctx context.Context, s proc.Spec, dir string) (proc.Result, error) {
		<-ctx.Done()
		r, err := play(ctx, s, dir)
		r.Stopped = true
		return r, err
	}
}

func TestDriverRunDeadline(t *testing.T) {
	c := driverConfig(t, endpoint.ImageRetrieval)
	c.Deadline = 50 * time.Millisecond
	f := &fakeRunner{version: "0.13.0", profile: blockUntilStopped(t, endpoint.ImageRetrieval)}
	run, err := (&Driver{Runner: f}).Run(context.Background(), c)
	require.NoError(t, err)
	require.NotEmpty(t, run.Problems)
	assert.Equal(t, Problem{Code: ProblemDeadline, Detail: "deadline 50ms passed; aiperf stopped"}, run.Problems[0])
}

func TestDriverRunInterrupted(t *testing.T) {
	c := driverConfig(t, endpoint.ImageRetrieval)
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeRunner{version: "0.13.0", profile: func(pctx context.Context, s proc.Spec, dir string) (proc.Result, error) {
		cancel()
		return blockUntilStopped(t, endpoint.ImageRetrieval)(pctx, s, dir)
	}}
	run, err := (&Driver{Runner: f}).Run(ctx, c)
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, run, "what AIPerf wrote is still collected")
	assert.Equal(t, Problem{Code: ProblemInterrupted, Detail: "interrupted; aiperf stopped"}, run.Problems[0])
}

func TestWaitFinal(t *testing.T) {
	ctx := context.Background()
	t.Run("marker arrives late", func(t *testing.T) {
		dir := t.TempDir()
		go func() {
			time.Sleep(300 * time.Millisecond)
			_ = os.WriteFile(filepath.Join(dir, FileReadyMarker), []byte(`{"ready":true}`), 0o644)
		}()
		waited := waitFinal(ctx, dir, true, 5*time.Second)
		assert.GreaterOrEqual(t, waited, 300*time.Millisecond)
		assert.Less(t, waited, 2*time.Second)
	})
	t.Run("growing export is awaited", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileReadyMarker), []byte(`{"ready":true}`), 0o644))
		path := filepath.Join(dir, FileRaw)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 5 {
				f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
				if err != nil {
					return
				}
				_, _ = f.WriteString("{}\n")
				_ = f.Close()
				time.Sleep(finalizePoll / 2)
			}
		}()
		waitFinal(ctx, dir, true, 5*time.Second)
		<-done
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, int64(15), st.Size(), "returned only after the writes stopped")
	})
	t.Run("processing marker holds", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileReadyMarker), []byte(`{"ready":true}`), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, FileProcessing), []byte(`{}`), 0o644))
		waited := waitFinal(ctx, dir, true, 400*time.Millisecond)
		assert.GreaterOrEqual(t, waited, 400*time.Millisecond)
	})
	t.Run("no marker after a failure", func(t *testing.T) {
		waited := waitFinal(ctx, t.TempDir(), false, 5*time.Second)
		assert.Less(t, waited, time.Second)
	})
	t.Run("gives up at the limit", func(t *testing.T) {
		waited := waitFinal(ctx, t.TempDir(), true, 300*time.Millisecond)
		assert.GreaterOrEqual(t, waited, 300*time.Millisecond)
		assert.Less(t, waited, 2*time.Second)
	})
}

func TestErrorsFormat(t *testing.T) {
	se := &SetupError{Op: "version check", Err: errors.New("boom")}
	assert.Equal(t, "aiperf setup: version check: boom", se.Error())
	ce := &ConfigError{Err: errors.New("url: empty")}
	assert.Equal(t, "aiperf config: url: empty", ce.Error())
	ie := &IncompleteError{Dir: "/a", Problems: []Problem{{Code: "x", Detail: "y"}, {Code: "z", Detail: "w"}}}
	assert.Equal(t, "aiperf run in /a is incomplete: x: y; z: w", ie.Error())
}

// Issue 36: a duration line never says "0s". Exports that were final when
// AIPerf exited say so; a wait says how long it took.
func TestSettledText(t *testing.T) {
	assert.Equal(t, "at exit (<1ms)", settledText(0))
	assert.Equal(t, "at exit (<1ms)", settledText(400*time.Microsecond))
	assert.Equal(t, "after 1ms", settledText(1200*time.Microsecond))
	assert.Equal(t, "after 1.25s", settledText(1250*time.Millisecond))
}
