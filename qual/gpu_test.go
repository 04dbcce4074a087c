package qual

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual/proc"
	"github.com/trtmc-qual/trtmc-qual/reports"
)

type fakeProbe struct {
	gpus []reports.GPU
	busy map[string]bool
}

func (f fakeProbe) List(context.Context) ([]reports.GPU, error) { return f.gpus, nil }
func (f fakeProbe) CheckIdle(_ context.Context, g reports.GPU) (*reports.GPU, error) {
	if f.busy[g.Index] {
		return nil, assert.AnError
	}
	return &g, nil
}

func TestSlots(t *testing.T) {
	ctx := context.Background()
	none := fakeProbe{}
	two := fakeProbe{gpus: []reports.GPU{{Index: "0", UUID: "GPU-a"}, {Index: "1", UUID: "GPU-b"}}}

	s, err := Slots(ctx, none, "")
	require.NoError(t, err)
	assert.Equal(t, []Slot{{Name: "cpu"}}, s, "no GPU: one CPU slot")

	s, err = Slots(ctx, two, "")
	require.NoError(t, err)
	require.Len(t, s, 2)
	assert.Equal(t, "1", s[1].CUDAVisibleDevices())

	s, err = Slots(ctx, two, "1")
	require.NoError(t, err)
	require.Len(t, s, 1)
	assert.Equal(t, "GPU-b", s[0].GPU.UUID)

	s, err = Slots(ctx, none, "cpu:3")
	require.NoError(t, err)
	assert.Len(t, s, 3)
	assert.Equal(t, "", s[0].CUDAVisibleDevices())

	for _, bad := range []string{"2", "cpu:0", "cpu:x"} {
		_, err = Slots(ctx, two, bad)
		var se *SetupError
		require.ErrorAs(t, err, &se, bad)
		assert.Equal(t, 3, se.ExitCode())
	}
}

// TestNvidiaSMI drives the real probe against a fake nvidia-smi on PATH.
func TestNvidiaSMI(t *testing.T) {
	bin, err := filepath.Abs("testdata/bin")
	require.NoError(t, err)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx := context.Background()
	probe := NvidiaSMI{Runner: proc.OS{}}

	gpus, err := probe.List(ctx)
	require.NoError(t, err)
	require.Len(t, gpus, 2)
	assert.Equal(t, reports.GPU{Index: "1", Name: "NVIDIA GB300", UUID: "GPU-bbbb", Driver: "580.65"}, gpus[1])

	slots, err := Slots(ctx, probe, "")
	require.NoError(t, err)
	assert.Len(t, slots, 2, "one slot per GPU by default")

	g, err := probe.CheckIdle(ctx, gpus[1])
	require.NoError(t, err)
	assert.Equal(t, "GPU-bbbb", g.UUID)

	t.Setenv("FAKE_GPU_BUSY", "util")
	_, err = probe.CheckIdle(ctx, gpus[1])
	assert.ErrorContains(t, err, "is 87% utilised before timing")
	_, err = probe.CheckIdle(ctx, gpus[0])
	assert.NoError(t, err, "only GPU 1 is busy")

	t.Setenv("FAKE_GPU_BUSY", "proc")
	_, err = probe.CheckIdle(ctx, gpus[1])
	assert.ErrorContains(t, err, "runs a foreign compute process (pid 4242 python3)")

	t.Setenv("PATH", t.TempDir())
	gpus, err = NvidiaSMI{Runner: proc.OS{}}.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, gpus, "no nvidia-smi: no GPUs")
}
