package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"
)

// latencies draws n request times (ms) from a shifted lognormal like the
// reference runs' (a floor of 1 ms and a right tail), fixed seed.
func latencies(seed uint64, n int, shift float64) []float64 {
	d := distuv.LogNormal{Mu: math.Log(1.2), Sigma: 0.5, Src: rand.NewPCG(seed, 7)}
	v := make([]float64, n)
	for i := range v {
		v[i] = 1 + d.Rand() + shift
	}
	return v
}

// trueMedian of latencies' distribution.
const trueMedian = 1 + 1.2

func one(v []float64) [][]float64 { return [][]float64{v} }

// withinRule is the default rule without the run-to-run component: the
// interval of the requests alone, which these tests calibrate
// (runnoise_test.go tests the component).
func withinRule() Rule {
	r := DefaultRule()
	r.RunSD = 0
	return r
}

// methods are the within-run rule under each of its methods.
func methods() map[string]Rule {
	boot := withinRule()
	boot.Method = MethodBootstrapMedians
	return map[string]Rule{MethodHodgesLehmannLog: withinRule(), MethodBootstrapMedians: boot}
}

// TestSameDistributionPairsAreNotFlagged: 1,000 pairs of runs of 50
// requests drawn from one distribution; under either method the rule
// calls a change in at most 5 % of pairs, give or take two standard errors
// (fixed seeds: the count is the same on every run of the test), and the
// interval holds its own estimate.
func TestSameDistributionPairsAreNotFlagged(t *testing.T) {
	for name, r := range methods() {
		called := 0
		for i := range uint64(1000) {
			c, err := r.Compare(one(latencies(2*i, 50, 0)), one(latencies(2*i+1, 50, 0)))
			require.NoError(t, err)
			require.Equal(t, name, c.Method)
			if c.Decision.Called() {
				called++
			}
			assert.LessOrEqual(t, c.Lower, c.Change)
			assert.GreaterOrEqual(t, c.Upper, c.Change)
			assert.LessOrEqual(t, c.RelLower, c.RelChange)
			assert.GreaterOrEqual(t, c.RelUpper, c.RelChange)
		}
		assert.LessOrEqual(t, called, 63, "%s: false calls of 1,000", name)
	}
}

// TestClearShiftIsFlagged: the current run's median 40 % higher (lower) is
// called a regression (an improvement) in nearly every pair, under either
// method.
func TestClearShiftIsFlagged(t *testing.T) {
	for name, r := range methods() {
		regressed, improved := 0, 0
		for i := range uint64(100) {
			base := latencies(1000+2*i, 50, 0)
			up, err := r.Compare(one(base), one(latencies(1001+2*i, 50, 0.4*trueMedian)))
			require.NoError(t, err)
			if up.Decision == Regressed {
				regressed++
			}
			down, err := r.Compare(one(latencies(1001+2*i, 50, 0.4*trueMedian)), one(base))
			require.NoError(t, err)
			if down.Decision == Improved {
				improved++
			}
			assert.NotEqual(t, Improved, up.Decision, name)
			assert.NotEqual(t, Regressed, down.Decision, name)
		}
		assert.GreaterOrEqual(t, regressed, 95, name)
		assert.GreaterOrEqual(t, improved, 95, name)
	}
}

// TestHodgesLehmannHasMorePower: the evaluation of docs/performance.md,
// part 6, in small: on 400 pairs of one distribution, a median 20 %
// higher is called more often by the Hodges–Lehmann rule than by the
// bootstrap of the medians, while neither calls more than 5 % (give or
// take two standard errors) of the same-distribution pairs.
func TestHodgesLehmannHasMorePower(t *testing.T) {
	m := methods()
	count := func(r Rule, shift float64) int {
		n := 0
		for i := range uint64(400) {
			c, err := r.Compare(one(latencies(5000+2*i, 50, 0)), one(latencies(5001+2*i, 50, shift)))
			require.NoError(t, err)
			if c.Decision == Regressed {
				n++
			}
		}
		return n
	}
	hl, boot := count(m[MethodHodgesLehmannLog], 0.2*trueMedian), count(m[MethodBootstrapMedians], 0.2*trueMedian)
	assert.Greater(t, hl, boot, "detections of 400: Hodges–Lehmann %d, bootstrap %d", hl, boot)
	for name, r := range m {
		assert.LessOrEqual(t, count(r, 0), 28, "%s: false regressions of 400", name)
	}
}

func TestDecide(t *testing.T) {
	r := Rule{MinEffect: 0.10}
	for _, c := range []struct {
		name                  string
		lower, upper, rel     float64
		relLower, relUpper    float64
		want                  Decision
		calledWithoutMinEfect bool
	}{
		{"interval above zero, large", 2, 8, 0.25, 0.04, 0.4, Regressed, true},
		{"interval above zero, below the minimum effect", 0.1, 1, 0.05, 0.005, 0.09, NoChange, true},
		{"interval above zero, small point, wide", 0.1, 5, 0.05, 0.005, 0.25, Inconclusive, true},
		{"interval below zero, large", -8, -2, -0.25, -0.4, -0.1, Improved, true},
		{"interval holds zero, narrow", -0.5, 0.5, 0.01, -0.05, 0.05, NoChange, false},
		{"interval holds zero, wide", -3, 3, 0.12, -0.15, 0.15, Inconclusive, false},
		{"interval touches the minimum effect", -0.5, 2, 0.02, -0.05, 0.10, Inconclusive, false},
	} {
		cmp := Comparison{Lower: c.lower, Upper: c.upper, RelChange: c.rel, RelLower: c.relLower, RelUpper: c.relUpper}
		assert.Equal(t, c.want, r.Decide(cmp), c.name)
		assert.Equal(t, c.calledWithoutMinEfect, Rule{}.Decide(cmp).Called(), c.name+" (no minimum effect)")
	}
}

// TestResampledMedianByCounting: the median found by counting draws is the
// median of the resample built and sorted the slow way, from the same
// draws.
func TestResampledMedianByCounting(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 50, 51} {
		s := slices.Sorted(slices.Values(latencies(uint64(n), n, 0)))
		b := Bootstrap{Seed: 9}
		rs := newResampler(b)
		ref := b.rng()
		for range 200 {
			got := rs.median(s)
			res := make([]float64, n)
			for i := range res {
				res[i] = s[ref.IntN(n)]
			}
			slices.Sort(res)
			assert.Equal(t, median(res), got, "n=%d", n)
		}
	}
	assert.Equal(t, 2.5, median([]float64{1, 2, 3, 4}))
	assert.Equal(t, 3.0, median([]float64{1, 2, 3, 4, 100}))
}

// TestCompareIsReproducible: the same inputs give the same interval; a
// different seed moves its ends by little (DefaultResamples), never the
// point.
func TestCompareIsReproducible(t *testing.T) {
	base, cur := latencies(1, 50, 0), latencies(2, 50, 0.3)
	r := methods()[MethodBootstrapMedians]
	a, err := r.Compare(one(base), one(cur))
	require.NoError(t, err)
	b, err := r.Compare(one(base), one(cur))
	require.NoError(t, err)
	assert.Equal(t, a, b)
	r2 := r
	r2.Seed++
	c, err := r2.Compare(one(base), one(cur))
	require.NoError(t, err)
	assert.Equal(t, a.Change, c.Change)
	assert.InDelta(t, a.Lower, c.Lower, 0.1*(a.Upper-a.Lower))
	assert.InDelta(t, a.Upper, c.Upper, 0.1*(a.Upper-a.Lower))
	// The Hodges–Lehmann interval is exact: no seed moves it.
	hl := DefaultRule()
	x, err := hl.Compare(one(base), one(cur))
	require.NoError(t, err)
	hl.Seed++
	y, err := hl.Compare(one(base), one(cur))
	require.NoError(t, err)
	y.Rule = x.Rule
	assert.Equal(t, x, y)
}

// TestTrialsCarryTheirVariation: three trials a side, each trial slower or
// faster as a whole (a run effect): the two-stage bootstrap's interval is
// wider than the one of the same requests pooled as if one trial, and so
// the same difference is no longer called.
func TestTrialsCarryTheirVariation(t *testing.T) {
	scale := func(v []float64, f float64) []float64 {
		out := slices.Clone(v)
		for i := range out {
			out[i] *= f
		}
		return out
	}
	base := [][]float64{scale(latencies(1, 50, 0), 0.85), scale(latencies(2, 50, 0), 1.0), scale(latencies(3, 50, 0), 1.2)}
	cur := [][]float64{scale(latencies(4, 50, 0), 1.05), scale(latencies(5, 50, 0), 1.25), scale(latencies(6, 50, 0), 1.4)}
	r := withinRule()
	trials, err := r.Compare(base, cur)
	require.NoError(t, err)
	pooled, err := r.Compare(one(slices.Concat(base...)), one(slices.Concat(cur...)))
	require.NoError(t, err)
	assert.Equal(t, MethodBootstrapMedians, trials.Method, "trials: the two-stage bootstrap")
	assert.Equal(t, MethodHodgesLehmannLog, pooled.Method)
	assert.Equal(t, 3, trials.BaseTrials)
	assert.Equal(t, 150, trials.CurrentN)
	assert.Greater(t, trials.Upper-trials.Lower, 1.5*(pooled.Upper-pooled.Lower))
	assert.Equal(t, Regressed, pooled.Decision)
	assert.False(t, trials.Decision.Called(), "%+v", trials)
	// The point is the median of the trials' medians.
	meds := []float64{}
	for _, tr := range cur {
		meds = append(meds, median(slices.Sorted(slices.Values(tr))))
	}
	slices.Sort(meds)
	assert.Equal(t, meds[1], trials.CurrentMedian)
}

func TestCompareRefusesBadInput(t *testing.T) {
	r := DefaultRule()
	ok := one([]float64{1, 2, 3})
	for name, c := range map[string]struct {
		rule      Rule
		base, cur [][]float64
	}{
		"no trials":           {r, nil, ok},
		"empty trial":         {r, ok, [][]float64{{1}, {}}},
		"NaN":                 {r, ok, one([]float64{1, math.NaN()})},
		"infinite":            {r, one([]float64{math.Inf(1)}), ok},
		"negative":            {r, one([]float64{-1, 2}), ok},
		"zero median":         {r, one([]float64{0, 0, 1}), ok},
		"few resamples":       {Rule{Bootstrap: Bootstrap{Confidence: 0.95, Resamples: 10}, MinEffect: 0.1}, ok, ok},
		"confidence 1":        {Rule{Bootstrap: Bootstrap{Confidence: 1, Resamples: 1000}, MinEffect: 0.1}, ok, ok},
		"negative min effect": {Rule{Bootstrap: DefaultBootstrap(), MinEffect: -0.1}, ok, ok},
		"unknown method":      {Rule{Bootstrap: DefaultBootstrap(), Method: "t_test", MinEffect: 0.1}, ok, ok},
		"a time of 0 (log)":   {r, one([]float64{0, 1, 2}), ok},
	} {
		_, err := c.rule.Compare(c.base, c.cur)
		assert.Error(t, err, name)
	}
}
