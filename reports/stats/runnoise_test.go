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

// gpuRun draws one run of n request times like the H200's GPU-computed
// reference profile (a lognormal of log-spread 0.15 around 8 ms: the
// within-run interval is narrow, so the run-to-run component matters
// most), the whole run scaled by runFactor.
func gpuRun(seed uint64, n int, runFactor float64) []float64 {
	d := distuv.LogNormal{Mu: math.Log(8), Sigma: 0.15, Src: rand.NewPCG(seed, 11)}
	v := make([]float64, n)
	for i := range v {
		v[i] = runFactor * d.Rand()
	}
	return v
}

// runFactors draws k run factors exp(N(0, sd²)), fixed seed.
func runFactors(seed uint64, k int, sd float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 13))
	out := make([]float64, k)
	for i := range out {
		out[i] = math.Exp(sd * rng.NormFloat64())
	}
	return out
}

// TestRunNoiseIsNotCalled: pairs of single runs of one configuration, each
// run as a whole slower or faster by a factor drawn with sd 0.075 of its
// log (the H200's measured run-to-run noise): the default rule leaves at
// least 95 % of them uncalled, where the within-run interval alone calls
// far more (the issue this component answers).
func TestRunNoiseIsNotCalled(t *testing.T) {
	called, calledWithin := 0, 0
	const pairs = 400
	for i := range uint64(pairs) {
		f := runFactors(i, 2, 0.075)
		c, err := DefaultRule().Compare(one(gpuRun(2*i, 50, f[0])), one(gpuRun(2*i+1, 50, f[1])))
		require.NoError(t, err)
		if c.Decision.Called() {
			called++
		}
		if withinRule().Decide(Comparison{Lower: c.WithinLower, Upper: c.WithinUpper, RelChange: c.RelChange,
			RelLower: c.WithinRelLower, RelUpper: c.WithinRelUpper}).Called() {
			calledWithin++
		}
	}
	assert.LessOrEqual(t, called, pairs*5/100, "false calls of %d with the run-to-run component", pairs)
	assert.Greater(t, calledWithin, pairs*15/100, "false calls of %d by the within-run interval alone", pairs)
}

// TestRunNoiseKeepsLargeChanges: a median 40 % higher (lower), the runs
// otherwise alike, is still called in at least 95 % of pairs under the
// default rule.
func TestRunNoiseKeepsLargeChanges(t *testing.T) {
	regressed, improved := 0, 0
	for i := range uint64(200) {
		base, cur := gpuRun(3000+2*i, 50, 1), gpuRun(3001+2*i, 50, 1.4)
		up, err := DefaultRule().Compare(one(base), one(cur))
		require.NoError(t, err)
		down, err := DefaultRule().Compare(one(cur), one(base))
		require.NoError(t, err)
		if up.Decision == Regressed {
			regressed++
		}
		if down.Decision == Improved {
			improved++
		}
	}
	assert.GreaterOrEqual(t, regressed, 190)
	assert.GreaterOrEqual(t, improved, 190)
}

// TestRunNoiseZeroIsTheWithinInterval: RunSD 0 gives exactly the interval
// of the requests alone (the Hodges–Lehmann one of one run against one,
// the bootstrap's with trials), and the within-run fields equal it.
func TestRunNoiseZeroIsTheWithinInterval(t *testing.T) {
	base, cur := gpuRun(1, 50, 1), gpuRun(2, 50, 1.1)
	c, err := withinRule().Compare(one(base), one(cur))
	require.NoError(t, err)
	lb, err := logSorted(slices.Sorted(slices.Values(base)))
	require.NoError(t, err)
	lc, err := logSorted(slices.Sorted(slices.Values(cur)))
	require.NoError(t, err)
	s, err := HodgesLehmann(lb, lc, DefaultConfidence)
	require.NoError(t, err)
	assert.Equal(t, math.Expm1(s.Lower), c.RelLower)
	assert.Equal(t, math.Expm1(s.Upper), c.RelUpper)
	assert.Equal(t, 0, c.RunNoiseSides)
	for _, cc := range []Comparison{c, mustCompare(t, withinRule(), [][]float64{base, cur}, [][]float64{cur, base, cur})} {
		assert.Equal(t, cc.Lower, cc.WithinLower)
		assert.Equal(t, cc.Upper, cc.WithinUpper)
		assert.Equal(t, cc.RelLower, cc.WithinRelLower)
		assert.Equal(t, cc.RelUpper, cc.WithinRelUpper)
		assert.False(t, cc.RunNoiseFloor)
	}
	// The default rule keeps the same within-run interval beside its wider one.
	d, err := DefaultRule().Compare(one(base), one(cur))
	require.NoError(t, err)
	assert.Equal(t, c.RelLower, d.WithinRelLower)
	assert.Equal(t, c.RelUpper, d.WithinRelUpper)
	assert.Equal(t, c.RelChange, d.RelChange)
	assert.Less(t, d.RelLower, c.RelLower)
	assert.Greater(t, d.RelUpper, c.RelUpper)
}

func mustCompare(t *testing.T, r Rule, base, cur [][]float64) Comparison {
	t.Helper()
	c, err := r.Compare(base, cur)
	require.NoError(t, err)
	return c
}

// TestRunNoiseWidening: the half-widths on the log scale are
// √(w² + k·(z·RunSD)²), k the sides with one trial — 2 for one run against
// one, 1 for one run against trials —; with trials on both sides the
// interval is the bootstrap's, at least the floor z·RunSD·√(v(m) + v(n)).
func TestRunNoiseWidening(t *testing.T) {
	r := DefaultRule()
	zs := distuv.UnitNormal.Quantile(0.975) * r.RunSD
	trials := func(seed uint64, k int, f float64) [][]float64 {
		out := make([][]float64, k)
		for i := range out {
			out[i] = gpuRun(seed+uint64(i), 50, f)
		}
		return out
	}
	half := func(c Comparison) (lo, hi, wlo, whi float64) {
		p := math.Log1p(c.RelChange)
		return p - math.Log1p(c.RelLower), math.Log1p(c.RelUpper) - p, p - math.Log1p(c.WithinRelLower), math.Log1p(c.WithinRelUpper) - p
	}
	for _, tc := range []struct {
		name       string
		base, cur  [][]float64
		sides      int
		floorParts []int // trials whose medianVar make the floor
	}{
		{"1 against 1", trials(10, 1, 1), trials(20, 1, 1.1), 2, nil},
		{"1 against 3", trials(10, 1, 1), trials(20, 3, 1.1), 1, []int{1, 3}},
		{"3 against 3", trials(10, 3, 1), trials(20, 3, 1.1), 0, []int{3, 3}},
	} {
		c := mustCompare(t, r, tc.base, tc.cur)
		assert.Equal(t, tc.sides, c.RunNoiseSides, tc.name)
		lo, hi, wlo, whi := half(c)
		floor := 0.0
		if tc.floorParts != nil {
			floor = zs * math.Sqrt(medianVar(tc.floorParts[0])+medianVar(tc.floorParts[1]))
		}
		add := float64(tc.sides) * zs * zs
		assert.InDelta(t, math.Max(math.Sqrt(wlo*wlo+add), floor), lo, 1e-9, tc.name)
		assert.InDelta(t, math.Max(math.Sqrt(whi*whi+add), floor), hi, 1e-9, tc.name)
		assert.InDelta(t, c.RelLower*c.BaseMedian, c.Lower, 1e-9, tc.name)
		assert.InDelta(t, c.RelUpper*c.BaseMedian, c.Upper, 1e-9, tc.name)
	}
	// Three tight trials a side that happen to agree: the floor, not
	// their bootstrap, sets the interval.
	c := mustCompare(t, r, trials(30, 3, 1), trials(40, 3, 1))
	assert.True(t, c.RunNoiseFloor, "%+v", c)
	assert.InDelta(t, zs*math.Sqrt(2*medianVar(3)), math.Log1p(c.RelUpper)-math.Log1p(c.RelChange), 1e-9)
}

// TestRunNoiseTrialsAgainstSingleRuns: the same run-to-run noise, a 20 %
// higher median — one run against one is not sure of it (the run factors
// could make it), three trials a side more often are: trials, not single
// runs, detect a change of the run-to-run noise's size.
func TestRunNoiseTrialsAgainstSingleRuns(t *testing.T) {
	single, triple := 0, 0
	const pairs = 100
	for i := range uint64(pairs) {
		f := runFactors(500+i, 8, 0.075)
		one1 := mustCompare(t, DefaultRule(), one(gpuRun(7000+10*i, 50, f[0])), one(gpuRun(7001+10*i, 50, 1.2*f[1])))
		three := mustCompare(t, DefaultRule(),
			[][]float64{gpuRun(7000+10*i, 50, f[0]), gpuRun(7002+10*i, 50, f[2]), gpuRun(7003+10*i, 50, f[3])},
			[][]float64{gpuRun(7001+10*i, 50, 1.2*f[1]), gpuRun(7004+10*i, 50, 1.2*f[4]), gpuRun(7005+10*i, 50, 1.2*f[5])})
		if one1.Decision == Regressed {
			single++
		}
		if three.Decision == Regressed {
			triple++
		}
		assert.NotEqual(t, Improved, one1.Decision)
		assert.NotEqual(t, Improved, three.Decision)
	}
	assert.Greater(t, triple, single, "of %d pairs: 3 trials a side %d, single runs %d", pairs, triple, single)
}

// TestMedianVars: the table of the variance of the median of t standard
// normal values agrees with a simulation (fixed seed).
func TestMedianVars(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 100_000
	for k := 1; k < len(medianVars); k++ {
		x := make([]float64, k)
		var s, s2 float64
		for range n {
			for i := range x {
				x[i] = rng.NormFloat64()
			}
			slices.Sort(x)
			m := median(x)
			s += m
			s2 += m * m
		}
		v := s2/n - (s/n)*(s/n)
		assert.InDelta(t, medianVars[k], v, 0.02*medianVars[k]+0.005, "t=%d", k)
	}
	assert.InDelta(t, math.Pi/40, medianVar(20), 0)
}

// TestRunSDValidated: a run-to-run sd outside [0, 1) is refused.
func TestRunSDValidated(t *testing.T) {
	for _, sd := range []float64{-0.01, 1, math.NaN(), math.Inf(1)} {
		r := DefaultRule()
		r.RunSD = sd
		require.ErrorContains(t, r.Validate(), "run-to-run sd", "%v", sd)
		_, err := r.Compare(one(gpuRun(1, 50, 1)), one(gpuRun(2, 50, 1)))
		require.Error(t, err)
	}
}

// TestDriftIsWithinTheRun: the drift check compares halves of one run: no
// run-to-run component, whatever the rule's RunSD.
func TestDriftIsWithinTheRun(t *testing.T) {
	v := gpuRun(3, 50, 1)
	a, err := DefaultRule().Drift(v)
	require.NoError(t, err)
	b, err := withinRule().Drift(v)
	require.NoError(t, err)
	assert.Equal(t, b, a)
	assert.InDelta(t, 0, a.Halves.Rule.RunSD, 0)
	assert.Equal(t, 0, a.Halves.RunNoiseSides)
}
