package qual

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
