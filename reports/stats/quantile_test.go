package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"
)

// linear is numpy's "linear" percentile (Hyndman and Fan type 7), the rule
// of qual/aiperf.Percentiles, written out for these tests only: the
// product's point estimate is always the caller's PointFunc.
func linear(values []float64, qs ...int) []float64 {
	s := slices.Sorted(slices.Values(values))
	out := make([]float64, len(qs))
	for i, q := range qs {
		h := float64(q) / 100 * float64(len(s)-1)
		lo := int(h)
		hi := min(lo+1, len(s)-1)
		out[i] = s[lo] + (h-float64(lo))*(s[hi]-s[lo])
	}
	return out
}

// TestMedianRanksArePublished checks the median's interval against the
// published table of Campbell and Gardner, "Calculating confidence
// intervals for some non-parametric analyses", BMJ 296:1454 (1988), Table
// 1 (reprinted in Altman et al., Statistics with Confidence, 2000): for a
// sample of n, the 95 % interval runs from the r-th to the (n−r+1)-th
// smallest value, with the exact level given.
func TestMedianRanksArePublished(t *testing.T) {
	for _, c := range []struct {
		n, r  int
		level float64 // percent, as printed (one decimal)
	}{
		{6, 1, 96.9}, {7, 1, 98.4}, {8, 1, 99.2}, {9, 2, 96.1}, {10, 2, 97.9},
		{15, 4, 96.5}, {20, 6, 95.9}, {30, 10, 95.7}, {50, 18, 96.7}, {100, 40, 96.5},
	} {
		ri, err := OrderStatisticInterval(c.n, 0.5, 0.95)
		require.NoError(t, err)
		assert.Equal(t, c.r, ri.Lower, "n=%d lower rank", c.n)
		assert.Equal(t, c.n-c.r+1, ri.Upper, "n=%d upper rank", c.n)
		assert.InDelta(t, c.level, 100*ri.Coverage, 0.05, "n=%d level", c.n)
	}
	// Five values cannot bound the median at 95 %: each extreme leaves
	// 1/32 > 2.5 % outside.
	ri, err := OrderStatisticInterval(5, 0.5, 0.95)
	require.NoError(t, err)
	assert.True(t, ri.LowerUnbounded)
	assert.True(t, ri.UpperUnbounded)
	assert.Zero(t, ri.Lower)
	assert.Zero(t, ri.Upper)
	assert.InDelta(t, 1.0, ri.Coverage, 1e-15)
}

// exactTails is the brute-force binomial: for B ~ Binomial(n, a/d), the
// numerators of P(B ≤ k), k = 0..n, over the common denominator d^n, in
// exact integers.
func exactTails(n int, a, d int64) (cum []*big.Int, den *big.Int) {
	den = new(big.Int).Exp(big.NewInt(d), big.NewInt(int64(n)), nil)
	cum = make([]*big.Int, n+1)
	acc := new(big.Int)
	binom := big.NewInt(1)
	for k := 0; k <= n; k++ {
		if k > 0 {
			binom.Mul(binom, big.NewInt(int64(n-k+1)))
			binom.Quo(binom, big.NewInt(int64(k)))
		}
		term := new(big.Int).Mul(binom, new(big.Int).Exp(big.NewInt(a), big.NewInt(int64(k)), nil))
		term.Mul(term, new(big.Int).Exp(big.NewInt(d-a), big.NewInt(int64(n-k)), nil))
		acc.Add(acc, term)
		cum[k] = new(big.Int).Set(acc)
	}
	return cum, den
}

// TestRanksAgainstBruteForce checks every n up to 260 and several p against
// an exact integer computation of the binomial tails, choosing the ranks by
// scanning every candidate: the largest l with P(B ≤ l−1) ≤ 2.5 %, the
// smallest u with P(B ≥ u) ≤ 2.5 %, unbounded where none exists, and the
// coverage to 1e-9.
func TestRanksAgainstBruteForce(t *testing.T) {
	ps := []struct{ a, d int64 }{{1, 100}, {1, 20}, {1, 10}, {1, 4}, {1, 3}, {1, 2}, {3, 4}, {9, 10}, {19, 20}, {99, 100}}
	ns := []int{}
	for n := 1; n <= 260; n++ {
		ns = append(ns, n)
	}
	ns = append(ns, 367, 368, 400, 1000)
	for _, p := range ps {
		for _, n := range ns {
			cum, den := exactTails(n, p.a, p.d)
			// tail ≤ 1/40  ⟺  40·tail_numerator ≤ d^n
			within := func(num *big.Int) bool { return new(big.Int).Mul(num, big.NewInt(40)).Cmp(den) <= 0 }
			lowNum := func(l int) *big.Int { // P(B ≤ l−1)
				if l == 0 {
					return new(big.Int)
				}
				return cum[l-1]
			}
			highNum := func(u int) *big.Int { // P(B ≥ u) = 1 − P(B ≤ u−1)
				return new(big.Int).Sub(den, lowNum(u))
			}
			wantL, wantU := 0, 0
			for l := 1; l <= n; l++ {
				if within(lowNum(l)) {
					wantL = l
				}
			}
			for u := n; u >= 1; u-- {
				if within(highNum(u)) {
					wantU = u
				}
			}
			inside := new(big.Int).Set(den)
			if wantL > 0 {
				inside.Sub(inside, lowNum(wantL))
			}
			if wantU > 0 {
				inside.Sub(inside, highNum(wantU))
			}
			cov, _ := new(big.Rat).SetFrac(inside, den).Float64()

			pf := float64(p.a) / float64(p.d)
			ri, err := OrderStatisticInterval(n, pf, 0.95)
			require.NoError(t, err)
			assert.Equal(t, wantL, ri.Lower, "n=%d p=%v lower", n, pf)
			assert.Equal(t, wantU, ri.Upper, "n=%d p=%v upper", n, pf)
			assert.Equal(t, wantL == 0, ri.LowerUnbounded, "n=%d p=%v", n, pf)
			assert.Equal(t, wantU == 0, ri.UpperUnbounded, "n=%d p=%v", n, pf)
			assert.InDelta(t, cov, ri.Coverage, 1e-9, "n=%d p=%v coverage", n, pf)
		}
	}
}

// TestRankProperties: the coverage reaches the confidence; the ranks never
// move down as n grows, and a side once bounded stays bounded, both sides
// from MinSampleForBounds on; and the ranks are tight: one step inward would
// leave more than α/2 in a tail.
func TestRankProperties(t *testing.T) {
	for _, conf := range []float64{0.9, 0.95, 0.99} {
		half := (1 - conf) / 2
		for _, p := range []float64{0.01, 0.1, 0.25, 0.5, 0.9, 0.95, 0.99} {
			var prev RankInterval
			for n := 1; n <= 600; n++ {
				ri, err := OrderStatisticInterval(n, p, conf)
				require.NoError(t, err)
				assert.GreaterOrEqual(t, ri.Coverage, conf-1e-12, "n=%d p=%v", n, p)
				if !ri.LowerUnbounded {
					assert.Greater(t, distuv.Binomial{N: float64(n), P: p}.CDF(float64(ri.Lower)), half, "n=%d p=%v lower not tight", n, p)
				}
				if !ri.UpperUnbounded {
					assert.Greater(t, 1-distuv.Binomial{N: float64(n), P: p}.CDF(float64(ri.Upper-2)), half, "n=%d p=%v upper not tight", n, p)
				}
				if n > 1 {
					assert.False(t, prev.LowerUnbounded == false && ri.LowerUnbounded, "n=%d p=%v lower lost its bound", n, p)
					assert.False(t, prev.UpperUnbounded == false && ri.UpperUnbounded, "n=%d p=%v upper lost its bound", n, p)
					assert.GreaterOrEqual(t, ri.Lower, prev.Lower, "n=%d p=%v", n, p)
					if !prev.UpperUnbounded {
						assert.GreaterOrEqual(t, ri.Upper, prev.Upper, "n=%d p=%v", n, p)
					}
				}
				assert.Equal(t, !ri.LowerUnbounded && !ri.UpperUnbounded, n >= MinSampleForBounds(p, conf), "n=%d p=%v", n, p)
				prev = ri
			}
		}
	}
	assert.Equal(t, []int{6, 36, 72, 368}, []int{MinSampleForBounds(0.5, 0.95), MinSampleForBounds(0.9, 0.95),
		MinSampleForBounds(0.95, 0.95), MinSampleForBounds(0.99, 0.95)})
}

// TestPointInsideTheRanks: the type-7 point of the rows sits at 1-based
// position 1+p(n−1), between X_(⌊pos⌋) and X_(⌈pos⌉); for every percentile
// 1..99 and every n up to 1,000 both lie within the 95 % interval's ranks,
// so the row's figure is inside its interval — with one exception: p1 and
// p99 of two values, where the interval is [X_(1), X_(2)]'s one end alone
// and the point falls 1 % short of it.
func TestPointInsideTheRanks(t *testing.T) {
	var outside []string
	for q := 1; q <= 99; q++ {
		p := float64(q) / 100
		for n := 1; n <= 1000; n++ {
			ri, err := OrderStatisticInterval(n, p, 0.95)
			require.NoError(t, err)
			pos := 1 + p*float64(n-1)
			if (!ri.LowerUnbounded && float64(ri.Lower) > math.Floor(pos)) || (!ri.UpperUnbounded && float64(ri.Upper) < math.Ceil(pos)) {
				outside = append(outside, fmt.Sprintf("p%d n=%d", q, n))
			}
		}
	}
	assert.Equal(t, []string{"p1 n=2", "p99 n=2"}, outside)
}

func TestOrderStatisticIntervalRefusesNonsense(t *testing.T) {
	for _, c := range []struct {
		n       int
		p, conf float64
	}{{0, 0.5, 0.95}, {-3, 0.5, 0.95}, {10, 0, 0.95}, {10, 1, 0.95}, {10, math.NaN(), 0.95}, {10, 0.5, 1}, {10, 0.5, 0}, {10, 0.5, math.NaN()}} {
		_, err := OrderStatisticInterval(c.n, c.p, c.conf)
		assert.Error(t, err, "%+v", c)
	}
}

// TestQuantilesOfFifty: 50 requests bound p50 and p90 on both sides, p95
// and p99 only from below — the interval says so instead of inventing an
// upper end. The point is the PointFunc's, and lies inside.
func TestQuantilesOfFifty(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := make([]float64, 50)
	for i := range v {
		v[i] = 1 + rng.ExpFloat64()
	}
	orig := slices.Clone(v)
	qs, err := Quantiles(v, linear, 0.95, 50, 90, 95, 99)
	require.NoError(t, err)
	assert.Equal(t, orig, v, "values unchanged")
	s := slices.Sorted(slices.Values(v))
	want := []struct {
		lower, upper int // 0: unbounded
	}{{18, 33}, {41, 50}, {44, 0}, {48, 0}}
	for i, q := range qs {
		assert.Equal(t, 50, q.N)
		assert.Equal(t, linear(v, q.Percent)[0], q.Point)
		assert.Equal(t, want[i].lower, q.Lower.Rank, "p%d", q.Percent)
		require.NotNil(t, q.Lower.Value)
		assert.Equal(t, s[want[i].lower-1], *q.Lower.Value)
		assert.LessOrEqual(t, *q.Lower.Value, q.Point)
		if want[i].upper == 0 {
			assert.True(t, q.Upper.Unbounded, "p%d", q.Percent)
			assert.Nil(t, q.Upper.Value)
			assert.Zero(t, q.Upper.Rank)
		} else {
			require.NotNil(t, q.Upper.Value)
			assert.Equal(t, s[want[i].upper-1], *q.Upper.Value)
			assert.GreaterOrEqual(t, *q.Upper.Value, q.Point)
		}
		assert.GreaterOrEqual(t, q.Coverage, 0.95)
	}
	b, err := json.Marshal(qs[2].Upper)
	require.NoError(t, err)
	assert.JSONEq(t, `{"unbounded":true,"value":null}`, string(b))
}

// TestQuantilesOfTinySamples: up to five requests bound no percentile from
// 50 up from above (p^n > 2.5 %), and bound one from below only where
// (1−p)^n ≤ 2.5 % — never the median; every other side is unbounded, with
// no value.
func TestQuantilesOfTinySamples(t *testing.T) {
	for n := 1; n <= 5; n++ {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i + 1)
		}
		qs, err := Quantiles(v, linear, 0.95, 50, 90, 95, 99)
		require.NoError(t, err)
		for _, q := range qs {
			p := float64(q.Percent) / 100
			assert.True(t, q.Upper.Unbounded, "n=%d p%d", n, q.Percent)
			assert.Nil(t, q.Upper.Value)
			assert.Equal(t, math.Pow(1-p, float64(n)) > 0.025, q.Lower.Unbounded, "n=%d p%d", n, q.Percent)
			assert.Equal(t, q.Lower.Unbounded, q.Lower.Value == nil)
		}
	}
}

func TestQuantilesRefuseBadInput(t *testing.T) {
	_, err := Quantiles(nil, linear, 0.95, 50)
	assert.Error(t, err)
	_, err = Quantiles([]float64{1, math.NaN()}, linear, 0.95, 50)
	assert.Error(t, err)
	_, err = Quantiles([]float64{1, 2}, nil, 0.95, 50)
	assert.Error(t, err)
	for _, q := range []int{0, 100, -5} {
		_, err = Quantiles([]float64{1, 2}, linear, 0.95, q)
		assert.Error(t, err, "p%d", q)
	}
	short := func([]float64, ...int) []float64 { return []float64{1} }
	_, err = Quantiles([]float64{1, 2}, short, 0.95, 50, 95)
	assert.Error(t, err)
}

// TestQuantileCoverageOnSamples draws 4,000 samples of 50 from a skewed
// latency distribution (lognormal, fixed seed) and counts how often each
// bounded interval holds the true quantile: at least the nominal 95 %
// less sampling error (3 standard errors of a 95 % proportion of 4,000 is
// 1 percentage point), and close to the achieved coverage.
func TestQuantileCoverageOnSamples(t *testing.T) {
	dist := distuv.LogNormal{Mu: math.Log(2), Sigma: 0.6, Src: rand.NewPCG(35, 1)}
	const reps, n = 4000, 50
	hit := map[int]int{}
	v := make([]float64, n)
	for range reps {
		for i := range v {
			v[i] = dist.Rand()
		}
		qs, err := Quantiles(v, linear, 0.95, 50, 90)
		require.NoError(t, err)
		for _, q := range qs {
			truth := dist.Quantile(float64(q.Percent) / 100)
			if *q.Lower.Value <= truth && truth <= *q.Upper.Value {
				hit[q.Percent]++
			}
		}
	}
	for _, p := range []int{50, 90} {
		ri, err := OrderStatisticInterval(n, float64(p)/100, 0.95)
		require.NoError(t, err)
		got := float64(hit[p]) / reps
		assert.GreaterOrEqual(t, got, 0.94, "p%d coverage", p)
		assert.InDelta(t, ri.Coverage, got, 0.012, "p%d coverage against the achieved %.4f", p, ri.Coverage)
	}
}

// FuzzOrderStatisticInterval: for any n and p the ranks satisfy the rule
// (each tail within α/2, tight, l < u) and the coverage is what they
// achieve.
func FuzzOrderStatisticInterval(f *testing.F) {
	f.Add(50, 0.95)
	f.Add(1, 0.5)
	f.Add(100000, 0.99)
	f.Fuzz(func(t *testing.T, n int, p float64) {
		if n < 1 || n > 200000 || !(p > 0 && p < 1) {
			return
		}
		ri, err := OrderStatisticInterval(n, p, 0.95)
		require.NoError(t, err)
		b := distuv.Binomial{N: float64(n), P: p}
		const half = 0.025 + 1e-9
		low, high := 0.0, 0.0
		if !ri.LowerUnbounded {
			low = b.CDF(float64(ri.Lower - 1))
			require.LessOrEqual(t, low, half)
			require.True(t, ri.Lower == n || b.CDF(float64(ri.Lower)) > 0.025-1e-9)
		} else {
			require.Greater(t, b.CDF(0), 0.025-1e-9)
		}
		if !ri.UpperUnbounded {
			high = 1 - b.CDF(float64(ri.Upper-1))
			require.LessOrEqual(t, high, half)
			if !ri.LowerUnbounded {
				require.Less(t, ri.Lower, ri.Upper)
			}
		} else {
			require.Greater(t, 1-b.CDF(float64(n-1)), 0.025-1e-9)
		}
		require.InDelta(t, 1-low-high, ri.Coverage, 1e-9)
	})
}
