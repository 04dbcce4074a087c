package stats

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummariseTrials(t *testing.T) {
	s, err := SummariseTrials([]float64{4, 1, 3, 2})
	require.NoError(t, err)
	assert.Equal(t, 4, s.Trials)
	assert.Equal(t, 2.5, s.Median)
	assert.Equal(t, 1.0, s.Min)
	assert.Equal(t, 4.0, s.Max)
	require.NotNil(t, s.CV)
	assert.InDelta(t, math.Sqrt(5.0/3)/2.5, *s.CV, 1e-12) // sd (n−1) of 1..4 over the mean
	assert.InDelta(t, 3/2.5, s.Spread(), 1e-12)

	s, err = SummariseTrials([]float64{7})
	require.NoError(t, err)
	assert.Equal(t, TrialSummary{Trials: 1, Median: 7, Min: 7, Max: 7}, s)
	assert.Nil(t, s.CV)
	assert.Zero(t, s.Spread())

	s, err = SummariseTrials([]float64{3, 1, 2})
	require.NoError(t, err)
	assert.Equal(t, 2.0, s.Median)

	_, err = SummariseTrials(nil)
	assert.Error(t, err)
	_, err = SummariseTrials([]float64{1, math.NaN()})
	assert.Error(t, err)
	_, err = SummariseTrials([]float64{math.Inf(-1)})
	assert.Error(t, err)
}
