package qual

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/proc/proctest"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// captureExecutor records the Options it is run with.
type captureExecutor struct {
	here bool
	got  *Options
}

func (e *captureExecutor) Run(_ context.Context, opts Options) (*Outcome, error) {
	e.got = &opts
	return &Outcome{Group: opts.Group, Submitted: []string{"42"}}, nil
}

func (e *captureExecutor) OnThisHost() bool { return e.here }

func testBuilder(t *testing.T, env map[string]string) (*RunBuilder, *bytes.Buffer) {
	var errOut bytes.Buffer
	runner := &proctest.FakeRunner{}
	t.Cleanup(func() { assert.NoError(t, runner.Verify()) })
	return &RunBuilder{Group: "vlm", Only: []string{"a"}, Out: "out", Host: "127.0.0.1", GPUs: "cpu:2",
		SecretEnv: []string{"TRTMC_SERVE_TOKEN", "HF_TOKEN", "UNSET"}, Command: []string{"trtmc-qual", "run", "--group", "vlm"},
		Roots:  []verdict.Root{{Name: "home", Path: "/home/u"}},
		Runner: runner, Getenv: func(k string) string { return env[k] }, Now: time.Now, ErrOut: &errOut}, &errOut
}

// TestRunBuilderAssemblesTheRun: what the wiring used to assemble — the
// pool, the secrets, the roots, the reproduce command — is the builder's,
// and the executor runs what it built.
func TestRunBuilderAssemblesTheRun(t *testing.T) {
	env := map[string]string{"TRTMC_SERVE_TOKEN": "a-long-serve-token", "HF_TOKEN": "short", "TRTMC_REFSERVER_FAULT": "slow-ms=5"}
	b, errOut := testBuilder(t, env)
	ex := &captureExecutor{here: true}
	out, err := b.Run(context.Background(), ex)
	require.NoError(t, err)
	assert.Equal(t, []string{"42"}, out.Submitted, "the executor's outcome comes back")
	o := ex.got
	require.NotNil(t, o)
	assert.Equal(t, "vlm", o.Group)
	assert.Equal(t, []string{"a"}, o.Only)
	require.NotNil(t, o.Hardware.Pool)
	assert.Equal(t, 2, o.Hardware.Pool.CPUSlots, "the selection probed into the pool")
	assert.Equal(t, []string{"a-long-serve-token", "short"}, o.Security.Secrets)
	assert.Equal(t, "a-long-serve-token", o.Security.ServeToken)
	assert.Equal(t, "trtmc-qual: warning: secret HF_TOKEN is only 5 characters long; it is redacted everywhere, "+
		"which can also mask unrelated text of the evidence that happens to equal it\n", errOut.String(), "only the short secret is warned about")
	abs, err := filepath.Abs("out")
	require.NoError(t, err)
	assert.Equal(t, []verdict.Root{{Name: publish.RootOut, Path: abs}, {Name: "home", Path: "/home/u"}}, o.Provenance.Roots)
	assert.Equal(t, `TRTMC_SERVE_TOKEN="$TRTMC_SERVE_TOKEN" TRTMC_REFSERVER_FAULT=slow-ms=5 trtmc-qual run --group vlm`, o.Provenance.Command)
	self, err := os.Executable()
	require.NoError(t, err)
	assert.Equal(t, self, o.Self)
	assert.NotNil(t, o.Progress)
	assert.Same(t, o.Progress, o.Log, "stage lines and the progress display share one writer")
}

// TestRunBuilderPoolThroughTheExecutor: an executor that places
// checkpoints elsewhere gets no pool (Slurm allocates each task its
// GPUs), so the host's GPUs are never probed for it; a selection this host
// cannot give names where it came from.
func TestRunBuilderPoolThroughTheExecutor(t *testing.T) {
	b, _ := testBuilder(t, nil)
	b.GPUs = "7"
	ex := &captureExecutor{here: false}
	_, err := b.Run(context.Background(), ex)
	require.NoError(t, err)
	assert.Nil(t, ex.got.Hardware.Pool, "no pool, no nvidia-smi")

	b, _ = testBuilder(t, nil)
	b.GPUs, b.GPUsSource = "7", "TRTMC_QUAL_GPUS"
	// No nvidia-smi on PATH, or one the FakeRunner refuses: GPU 7 is not
	// this host's either way.
	b.Runner.(*proctest.FakeRunner).Expect(`nvidia-smi --query-gpu=`).Exit(9, "NVIDIA-SMI has failed").Always()
	_, err = b.Run(context.Background(), &captureExecutor{here: true})
	require.Error(t, err)
	assert.Regexp(t, `^TRTMC_QUAL_GPUS "7": `, err.Error())
	var se *SetupError
	assert.True(t, errors.As(err, &se), "still a setup error (exit 3)")
}
