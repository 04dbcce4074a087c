package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// TestRunVerdictErrorGPU: the exit codes of GPU rows. A busy GPU, an
// unreadable nvidia-smi and a GPU family on CPU slots are setup errors
// (exit 3); a profile not run for want of GPUs or hardware scope, and a GPU
// leak, are rows that did not qualify (exit 1); never success.
func TestRunVerdictErrorGPU(t *testing.T) {
	row := func(code verdict.Code) *verdict.Result {
		r := &verdict.Result{Profile: string(code), Problems: []verdict.Problem{{Stage: "x", Code: code, Message: string(code)}}}
		verdict.Judge(r)
		return r
	}
	ok := &verdict.Result{Profile: "ok", Verdict: verdict.VerdictQualified}
	for code, want := range map[verdict.Code]exitCode{
		verdict.CodeGPUBusy: exitSetup, verdict.CodeGPUProbe: exitSetup, verdict.CodeGPURequired: exitSetup,
		verdict.CodeInsufficientGPUs: exitFailed, verdict.CodeHardwareMismatch: exitFailed, verdict.CodeGPULeak: exitFailed,
		verdict.CodeGPUUnused: exitFailed, verdict.CodeHardwareMismatchAllowed: exitFailed,
	} {
		err := runVerdictError([]*verdict.Result{ok, row(code)})
		require.Error(t, err, code)
		assert.Equal(t, want, codeFor(err), code)
		assert.Contains(t, err.Error(), string(code), "the profile is named")
	}
}

// runWithF runs `trtmc-qual ARGS` with run's pipeline replaced by a capture
// of its options; it returns them (nil when run was not reached), the exit
// code and stderr.
func runWithF(t *testing.T, env map[string]string, args ...string) (*runOptions, exitCode, string) {
	t.Helper()
	io, _, errOut := testIO()
	f := newFactory(io, newInterrupts(io.ErrOut))
	f.Getenv = func(k string) string { return env[k] }
	root := newRootCmd(f)
	root.RemoveCommand(mustFind(t, root.Commands(), "run"))
	var got *runOptions
	root.AddCommand(newRunCmd(f, func(o *runOptions) error { got = o; return nil }))
	code := executeTree(context.Background(), f, root, args)
	return got, code, errOut.String()
}

func TestRunFlagsReachOptions(t *testing.T) {
	got, code, errOut := runWithF(t, nil, "run", "-g", "vlm", "--only", "a,b", "--out", "results", "--gpus", "0,1",
		"--resume", "--host", "127.0.0.2", "--junit", "out/vlm.xml", "-o", "json")
	require.Equal(t, exitOK, code, errOut)
	require.NotNil(t, got)
	assert.Equal(t, "vlm", got.Group)
	assert.Equal(t, []string{"a", "b"}, got.Only)
	assert.Equal(t, fileio.Abs("results"), got.Out, "--out is made absolute once, when the configuration is resolved")
	assert.Equal(t, "0,1", got.GPUs)
	assert.True(t, got.Resume)
	assert.Equal(t, "127.0.0.2", got.Host)
	assert.Equal(t, "out/vlm.xml", got.JUnit)
	assert.Equal(t, "json", got.Format)
	assert.Equal(t, executorLocal, got.Executor)
	assert.False(t, got.Detach)

	got, code, errOut = runWithF(t, map[string]string{"TRTMC_QUAL_OUT": "/lustre/out"}, "run", "--group", "g", "--executor", "slurm", "--detach")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, executorSlurm, got.Executor)
	assert.True(t, got.Detach)
	assert.Equal(t, "/lustre/out", got.Out, "the environment gives --out")
	assert.Equal(t, "127.0.0.1", got.Host, "the default host")
}

func TestRunFlagMistakesAreUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no group", []string{"run"}, "--group is required"},
		{"bad group name", []string{"run", "-g", "../vlm"}, "--group"},
		{"bad only name", []string{"run", "-g", "vlm", "--only", "a,$(id)"}, `"$(id)" is not a valid name`},
		{"detach locally", []string{"run", "-g", "vlm", "--detach"}, "--detach needs --executor slurm"},
		{"gpus with slurm", []string{"run", "-g", "vlm", "--executor", "slurm", "--gpus", "0"}, "--gpus does not apply to --executor slurm"},
		{"non-loopback host", []string{"run", "-g", "vlm", "--host", "0.0.0.0"}, "--host 0.0.0.0 is not a loopback address"},
		{"unknown format", []string{"run", "-g", "vlm", "-o", "yaml"}, "yaml"},
		{"junit not xml", []string{"run", "-g", "vlm", "--junit", "report.md"}, "junit"},
		{"unknown flag", []string{"run", "-g", "vlm", "--parallelism", "4"}, "unknown flag: --parallelism"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, code, errOut := runWithF(t, nil, tt.args...)
			assert.Nil(t, got, "the pipeline is not reached")
			assert.Equal(t, exitUsage, code, errOut)
			assert.Contains(t, errOut, tt.want)
		})
	}
	// --allow-non-loopback lets a routable address through.
	got, code, errOut := runWithF(t, nil, "run", "-g", "vlm", "--host", "0.0.0.0", "--allow-non-loopback")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "0.0.0.0", got.Host)
}

// TestRunValidate: run's checks of its flags together, on the options
// alone (no cobra): each mistake is a usage error naming the flag.
func TestRunValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*runOptions)
		want string // "" = valid
	}{
		{"valid", func(*runOptions) {}, ""},
		{"no group", func(o *runOptions) { o.Group = "" }, "--group is required"},
		{"bad only name", func(o *runOptions) { o.Only = []string{"a", "../b"} }, "--only"},
		{"unknown format", func(o *runOptions) { o.Format = "yaml" }, `--format: invalid format "yaml"`},
		{"junit not xml", func(o *runOptions) { o.JUnit = "r.md" }, "--junit r.md: this flag writes xml"},
		{"detach locally", func(o *runOptions) { o.Detach = true }, "--detach needs --executor slurm"},
		{"detach to slurm", func(o *runOptions) { o.Detach, o.Executor = true, executorSlurm }, ""},
		{"--gpus with slurm", func(o *runOptions) { o.Executor, o.GPUsGiven = executorSlurm, true }, "--gpus does not apply to --executor slurm"},
		{"configured gpus with slurm", func(o *runOptions) { o.Executor, o.GPUs = executorSlurm, "0,1" }, ""},
		{"routable host", func(o *runOptions) { o.Host = "0.0.0.0" }, "--host 0.0.0.0 is not a loopback address"},
		{"routable host allowed", func(o *runOptions) { o.Host, o.Config.AllowNonLoopback = "0.0.0.0", true }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := &runOptions{Config: &Config{}, Group: "vlm", Host: "127.0.0.1", Executor: executorLocal}
			tt.edit(o)
			err := o.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, exitUsage, codeFor(err))
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestRunQualifyWithoutRows: the logic called directly with options: a
// run that cannot start (no family configuration) returns its
// configuration error (exit 2), prints no table, and still writes
// --junit's single error case naming why.
func TestRunQualifyWithoutRows(t *testing.T) {
	io, out, errOut := testIO()
	path := filepath.Join(t.TempDir(), "ci", "vlm.xml")
	opts := &runOptions{IO: io, Config: &Config{Inventory: []string{"inv.yaml"}}, Getenv: func(string) string { return "" },
		Now: time.Now, Group: "vlm", Out: t.TempDir(), Host: "127.0.0.1", Executor: executorLocal, JUnit: path}
	err := runQualify(context.Background(), opts)
	require.Error(t, err)
	assert.Equal(t, exitUsage, codeFor(err))
	assert.Contains(t, err.Error(), "no family configuration")
	assert.Empty(t, out.String())
	assert.Contains(t, errOut.String(), "wrote JUnit report "+path)
	data, rerr := os.ReadFile(path)
	require.NoError(t, rerr)
	assert.Contains(t, string(data), `type="exit-2"`)
	assert.Contains(t, string(data), "no family configuration")
}

// TestRunSetsTheNotice: the wiring tells the signal handler what the
// first Ctrl-C stops (servers and AIPerf, or the Slurm tasks) before the
// run starts.
func TestRunSetsTheNotice(t *testing.T) {
	for executor, want := range map[string]string{executorLocal: noticeChildren, executorSlurm: noticeSlurm} {
		io, _, errOut := testIO()
		f := newFactory(io, newInterrupts(io.ErrOut))
		f.Getenv = func(string) string { return "" }
		root := newRootCmd(f)
		root.RemoveCommand(mustFind(t, root.Commands(), "run"))
		root.AddCommand(newRunCmd(f, func(*runOptions) error { return nil }))
		code := executeTree(context.Background(), f, root, []string{"run", "-g", "vlm", "--executor", executor})
		require.Equal(t, exitOK, code, errOut.String())
		assert.Equal(t, want, f.Interrupts.notice, executor)
	}
}
