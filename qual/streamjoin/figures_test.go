package streamjoin

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
)

// TestDriftNoteNamesTheShift: the row's note on an unstable series gives
// the halves' medians in the order measured and calls its percentage the
// rule's estimated shift — the Hodges–Lehmann shift, which is not the
// ratio of the two medians beside it (docs/reports.md, "the drift note
// writes 'medians a → b; estimated shift c %'").
func TestDriftNoteNamesTheShift(t *testing.T) {
	const n = 50
	vals, starts := make([]float64, n), make([]int64, n)
	for i := range vals {
		// ids in reverse start order: the check must follow the starts
		starts[i] = int64(n - i)
		vals[i] = 10 + 0.01*float64(i%7)
		if i < n/2 {
			vals[i] = 15 + 0.01*float64(i%7) // started last: the last half
		}
	}
	p := seriesFigures(vals, starts, n, "", aiperf.LatencyPercentilesMs)
	require.NotNil(t, p.Drift)
	require.True(t, p.Drift.Unstable, "%+v", p.Drift)
	note := driftNote("HTTP", p.Drift)
	assert.Contains(t, note, "HTTP timing unstable within the run")
	assert.Contains(t, note, "medians 10 → 15 ms (first half → last half of the measured requests)")
	assert.Contains(t, note, "estimated shift +50 %, 95 % interval")
	assert.Contains(t, note, "a note on the timing, not a verdict")
	assert.Empty(t, driftNote("HTTP", nil))
}
