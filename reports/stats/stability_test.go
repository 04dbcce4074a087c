package stats

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDriftStableRun: 400 stable runs; at most 5 % called unstable, give
// or take two standard errors (fixed seeds).
func TestDriftStableRun(t *testing.T) {
	r := DefaultRule()
	unstable := 0
	for i := range uint64(400) {
		d, err := r.Drift(latencies(500+i, 50, 0))
		require.NoError(t, err)
		require.True(t, d.Checked)
		assert.Equal(t, DriftCheck, d.Check)
		assert.Equal(t, 25, d.Halves.BaseN)
		assert.Equal(t, 25, d.Halves.CurrentN)
		if d.Unstable {
			unstable++
		}
	}
	assert.LessOrEqual(t, unstable, 28, "stable runs called unstable, of 400")
}

// TestDriftUnstableRun: a run whose second half is half as slow again
// (a neighbour started) is unstable, and the note says so with figures.
func TestDriftUnstableRun(t *testing.T) {
	v := slices.Concat(latencies(1, 25, 0), latencies(2, 25, 0.5*trueMedian))
	d, err := DefaultRule().Drift(v)
	require.NoError(t, err)
	assert.True(t, d.Unstable)
	assert.Equal(t, Regressed, d.Halves.Decision)
	assert.Contains(t, d.String(), "unstable: the last half's median differs from the first's")
	assert.Contains(t, d.String(), "95 % interval")

	s, err := DefaultRule().Drift(latencies(3, 50, 0))
	require.NoError(t, err)
	assert.Contains(t, s.String(), "stable: ")
}

// TestDriftOddRun: with an odd count the middle request is in neither half.
func TestDriftOddRun(t *testing.T) {
	v := latencies(4, 51, 0)
	d, err := DefaultRule().Drift(v)
	require.NoError(t, err)
	assert.Equal(t, 51, d.N)
	assert.Equal(t, 25, d.Halves.BaseN)
	assert.Equal(t, median(slices.Sorted(slices.Values(v[26:]))), d.Halves.CurrentMedian)
}

func TestDriftTooShort(t *testing.T) {
	d, err := DefaultRule().Drift(latencies(1, MinDriftSample-1, 0))
	require.NoError(t, err)
	assert.False(t, d.Checked)
	assert.False(t, d.Unstable)
	assert.Nil(t, d.Halves)
	assert.Equal(t, "drift not checked: 19 requests, the check needs 20", d.String())
	_, err = DefaultRule().Drift(append(latencies(1, 30, 0), -1))
	assert.Error(t, err)
}
