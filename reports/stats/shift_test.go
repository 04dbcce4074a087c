package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/combin"
)

// bruteMannWhitney enumerates every choice of which m of the m+n ranks are
// the first sample's and counts U = #pairs (x, y) with y > x.
func bruteMannWhitney(m, n int) []float64 {
	counts := make([]float64, m*n+1)
	total := 0.0
	for _, xs := range combin.Combinations(m+n, m) {
		isX := make([]bool, m+n)
		for _, r := range xs {
			isX[r] = true
		}
		u, xsBelow := 0, 0
		for r := range m + n {
			if isX[r] {
				xsBelow++
			} else {
				u += xsBelow // every x below this y
			}
		}
		counts[u]++
		total++
	}
	cdf := make([]float64, len(counts))
	acc := 0.0
	for u, c := range counts {
		acc += c
		cdf[u] = acc / total
	}
	return cdf
}

// TestMannWhitneyCDFAgainstEnumeration: the generating function's
// distribution is the enumerated one for every m, n up to 8 and 10.
func TestMannWhitneyCDFAgainstEnumeration(t *testing.T) {
	for m := 1; m <= 8; m++ {
		for n := 1; n <= 10; n++ {
			got, want := mannWhitneyCDF(m, n), bruteMannWhitney(m, n)
			require.Len(t, got, len(want))
			for u := range want {
				assert.InDelta(t, want[u], got[u], 1e-12, "m %d n %d u %d", m, n, u)
			}
		}
	}
}

// dpMannWhitney is the textbook recurrence in counts, f(m, n, u) =
// f(m−1, n, u−n) + f(m, n−1, u), for sizes enumeration cannot reach.
func dpMannWhitney(m, n int) []float64 {
	f := make([][][]float64, m+1)
	for i := range f {
		f[i] = make([][]float64, n+1)
		for j := range f[i] {
			f[i][j] = make([]float64, i*j+1)
			if i == 0 || j == 0 {
				f[i][j][0] = 1
				continue
			}
			for u := range f[i][j] {
				if u-j >= 0 && u-j < len(f[i-1][j]) {
					f[i][j][u] += f[i-1][j][u-j]
				}
				if u < len(f[i][j-1]) {
					f[i][j][u] += f[i][j-1][u]
				}
			}
		}
	}
	c := f[m][n]
	total := 0.0
	for _, v := range c {
		total += v
	}
	cdf := make([]float64, len(c))
	acc := 0.0
	for u, v := range c {
		acc += v
		cdf[u] = acc / total
	}
	return cdf
}

// TestMannWhitneyCDFAgainstRecurrence at the sizes rows have (50 a side,
// unequal sides, and the largest exact sizes), and the rank of
// 50 against 50: the largest k with P(U ≤ k−1) ≤ 2.5 % by the recurrence
// (966: the interval is [D₍₉₆₆₎, D₍₁₅₃₅₎] of the 2,500 differences).
func TestMannWhitneyCDFAgainstRecurrence(t *testing.T) {
	for _, mn := range [][2]int{{50, 50}, {25, 25}, {30, 45}, {12, 50}, {70, 70}, {50, 100}} {
		got, want := mannWhitneyCDF(mn[0], mn[1]), dpMannWhitney(mn[0], mn[1])
		for u := range want {
			require.InDelta(t, want[u], got[u], 1e-10, "m %d n %d u %d", mn[0], mn[1], u)
		}
	}
	dp := dpMannWhitney(50, 50)
	want := int64(sortSearch(len(dp), func(u int) bool { return dp[u] > 0.025 }))
	k, cov := mannWhitneyRank(50, 50, 0.95)
	assert.Equal(t, want, k)
	assert.InDelta(t, 1-2*dp[want-1], cov, 1e-12)
	assert.GreaterOrEqual(t, cov, 0.95)
}

// TestMannWhitneyNormalApproximation: where the exact distribution stops,
// the normal approximation's rank is the exact one (the recurrence's) or
// one apart.
func TestMannWhitneyNormalApproximation(t *testing.T) {
	for _, mn := range [][2]int{{60, 60}, {100, 100}, {50, 200}, {101, 100}} {
		cdf := dpMannWhitney(mn[0], mn[1])
		exact := int64(sortSearch(len(cdf), func(u int) bool { return cdf[u] > 0.025 }))
		mean := float64(mn[0]*mn[1]) / 2
		sd := math.Sqrt(float64(mn[0]*mn[1]) * float64(mn[0]+mn[1]+1) / 12)
		approx := int64(math.Floor(mean - 1.959963984540054*sd + 0.5))
		assert.InDelta(t, exact, approx, 1, "m %d n %d", mn[0], mn[1])
	}
}

// TestKthDifferenceAgainstAllPairs: the bisection's k-th difference is the
// k-th of every pairwise difference, for every k, with ties and without.
func TestKthDifferenceAgainstAllPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for trial := range 30 {
		m, n := 1+rng.IntN(40), 1+rng.IntN(60)
		a, b := make([]float64, m), make([]float64, n)
		for i := range a {
			a[i] = math.Round(rng.ExpFloat64()*float64(1+trial%3*50)) / 10 // ties on some trials
		}
		for j := range b {
			b[j] = math.Round(rng.ExpFloat64()*float64(1+trial%3*50)) / 10
		}
		slices.Sort(a)
		slices.Sort(b)
		var all []float64
		for _, y := range b {
			for _, x := range a {
				all = append(all, y-x)
			}
		}
		slices.Sort(all)
		for k := int64(1); k <= int64(len(all)); k++ {
			require.Equal(t, all[k-1], kthDifference(a, b, k), "trial %d k %d", trial, k)
		}
	}
}

// TestHodgesLehmannCoversAShift: b is a shifted by exactly Δ (the same
// draws): the point is Δ and the interval holds it; on independent draws
// of a shifted distribution the interval holds Δ in at least 95 % of
// 400 pairs (fixed seed).
func TestHodgesLehmannCoversAShift(t *testing.T) {
	a := slices.Sorted(slices.Values(latencies(1, 50, 0)))
	b := make([]float64, len(a))
	for i, v := range a {
		b[i] = v + 0.7
	}
	s, err := HodgesLehmann(a, b, 0.95)
	require.NoError(t, err)
	assert.InDelta(t, 0.7, s.Point, 1e-12)
	assert.LessOrEqual(t, s.Lower, 0.7)
	assert.GreaterOrEqual(t, s.Upper, 0.7)
	held := 0
	for i := range uint64(400) {
		x := slices.Sorted(slices.Values(latencies(10+2*i, 50, 0)))
		y := slices.Sorted(slices.Values(latencies(11+2*i, 50, 0.7)))
		s, err := HodgesLehmann(x, y, 0.95)
		require.NoError(t, err)
		if s.Lower <= 0.7 && 0.7 <= s.Upper {
			held++
		}
	}
	assert.GreaterOrEqual(t, held, 372, "of 400 (95 %% less three standard errors)")
}

// TestHodgesLehmannTooFew: two values against two cannot bound a shift at
// 95 % (the smallest two-sided tail is 2/6); nothing is made up.
func TestHodgesLehmannTooFew(t *testing.T) {
	_, err := HodgesLehmann([]float64{1, 2}, []float64{3, 4}, 0.95)
	require.ErrorContains(t, err, "cannot bound")
}

// TestShiftOfManyRequests: above MaxShiftSample requests a side the rule
// looks at a seeded random sample of each: the same answer every time,
// and an interval that still holds a true 20 % shift of the logarithms.
func TestShiftOfManyRequests(t *testing.T) {
	base := latencies(21, 3*MaxShiftSample, 0)
	cur := make([]float64, len(base))
	for i, v := range latencies(22, len(base), 0) {
		cur[i] = 1.2 * v
	}
	r := withinRule()
	a, err := r.Compare(one(base), one(cur))
	require.NoError(t, err)
	b, err := r.Compare(one(base), one(cur))
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.LessOrEqual(t, a.RelLower, 0.2)
	assert.GreaterOrEqual(t, a.RelUpper, 0.2)
	assert.Equal(t, 3*MaxShiftSample, a.BaseN, "the counts are the rows'")
	assert.Equal(t, Regressed, a.Decision)
}
