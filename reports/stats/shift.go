package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// The baseline rule's methods (Rule.Method): how the interval of a change
// is made.
const (
	// MethodHodgesLehmannLog: the Hodges–Lehmann shift of the logarithms of
	// the times — the median of every log(current) − log(baseline), so a
	// relative change — with its exact distribution-free interval from
	// the Mann–Whitney distribution (Lehmann, Nonparametrics, 1975, §2.6;
	// Bauer, JASA 1972). The default: on the distributions of `make bench`
	// part 6 it calls a 20 % change more often than the bootstrap of the
	// medians at no more false calls (docs/performance.md).
	MethodHodgesLehmannLog = "hodges_lehmann_log_shift"
	// MethodBootstrapMedians: the percentile bootstrap of the difference
	// of medians (the first rule; kept to compare).
	MethodBootstrapMedians = "bootstrap_difference_of_medians"
)

// exactMWLimit is the largest m·n whose Mann–Whitney null distribution is
// computed exactly (a polynomial of m·n+1 coefficients, built in m·n·min(m,
// n) steps, in floating point: beyond about 70 a side its subtractions
// lose digits). Above it the normal approximation with continuity
// correction gives the ranks: from 60 a side on they are the exact
// distribution's or one apart (TestMannWhitneyNormalApproximation).
const exactMWLimit = 5_000

// mannWhitneyCDF is the null distribution of the Mann–Whitney statistic U
// (the number of pairs with y > x) for samples of m and n without ties:
// cdf[u] = P(U ≤ u), u = 0 … m·n. The number of arrangements with U = u is
// the coefficient of q^u in the Gaussian binomial [m+n choose m]_q =
// ∏_{i=1..s} (1 − q^{l+i}) / (1 − q^i), s = min(m, n), l = max(m, n): each
// factor is a multiplication by (1 − q^{l+i}) and a division by
// (1 − q^i), a running sum. The coefficients are kept as shares of their
// total at the end (below exactMWLimit none overflows: C(150, 75) is
// about 10^44).
func mannWhitneyCDF(m, n int) []float64 {
	s, l := min(m, n), max(m, n)
	c := make([]float64, m*n+1)
	c[0] = 1
	deg := 0
	for i := 1; i <= s; i++ {
		// × (1 − q^{l+i}), up to the quotient's degree: the product's top
		// i coefficients only cancel in the division.
		shift := l + i
		deg += l
		for u := deg; u >= shift; u-- {
			c[u] -= c[u-shift]
		}
		// ÷ (1 − q^i): c[u] += c[u−i], ascending
		for u := i; u <= deg; u++ {
			c[u] += c[u-i]
		}
	}
	var sum float64
	for _, v := range c {
		sum += v
	}
	for u := range c {
		c[u] /= sum
	}
	for u := 1; u < len(c); u++ {
		c[u] += c[u-1]
	}
	return c
}

// mannWhitneyRank is the rank k (1-based) of the pairwise differences
// whose k-th smallest and k-th largest bound the shift at confidence: the
// largest k with P(U ≤ k−1) ≤ α/2, and the coverage 1 − 2·P(U ≤ k−1) the
// pair achieves. k is 0 when even the extreme differences leave more than
// α/2 outside: too few values to bound the shift.
func mannWhitneyRank(m, n int, confidence float64) (k int64, coverage float64) {
	half := (1 - confidence) / 2
	mn := int64(m) * int64(n)
	if mn <= exactMWLimit {
		cdf := mannWhitneyCDF(m, n)
		// cdf is non-decreasing: the largest k with cdf[k−1] ≤ half.
		j := sortSearch(len(cdf), func(u int) bool { return cdf[u] > half })
		if j == 0 {
			return 0, 0
		}
		return int64(j), 1 - 2*cdf[j-1]
	}
	mean := float64(mn) / 2
	sd := math.Sqrt(float64(mn) * float64(m+n+1) / 12)
	z := distuv.UnitNormal.Quantile(1 - half)
	// P(U ≤ k−1) ≈ Φ((k − 1 + 0.5 − mean)/sd) ≤ half.
	k = int64(math.Floor(mean - z*sd + 0.5))
	if k < 1 {
		return 0, 0
	}
	p := distuv.UnitNormal.CDF((float64(k-1) + 0.5 - mean) / sd)
	return k, 1 - 2*p
}

func sortSearch(n int, f func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if !f(mid) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// pairCount is the number of pairs (i, j) with b[j] − a[i] ≤ d, a and b
// sorted: a two-pointer walk, O(len(a) + len(b)). The differences are
// computed as the comparisons elsewhere compute them, so the count is
// consistent with them.
func pairCount(a, b []float64, d float64) int64 {
	var n int64
	i := 0 // the first i with b[j] − a[i] ≤ d (rises with j)
	for _, bj := range b {
		for i < len(a) && bj-a[i] > d {
			i++
		}
		n += int64(len(a) - i)
	}
	return n
}

// kthDifference is the k-th smallest (1-based) of the len(a)·len(b)
// differences b[j] − a[i], a and b sorted, without building them: bisect
// on the value, counting pairs at or below it, until few candidates are
// left between the bounds, then select among those. O((m + n) · 64) at
// worst, whatever m·n is.
func kthDifference(a, b []float64, k int64) float64 {
	lo := math.Nextafter(b[0]-a[len(a)-1], math.Inf(-1)) // count(lo) = 0 < k
	hi := b[len(b)-1] - a[0]                             // count(hi) = m·n ≥ k
	cLo := int64(0)
	cHi := int64(len(a)) * int64(len(b))
	limit := int64(4 * (len(a) + len(b)))
	for cHi-cLo > limit {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			return hi // adjacent values: every candidate is hi
		}
		if c := pairCount(a, b, mid); c >= k {
			hi, cHi = mid, c
		} else {
			lo, cLo = mid, c
		}
	}
	// The candidates: differences in (lo, hi].
	cand := make([]float64, 0, cHi-cLo)
	i0, i1 := 0, 0
	for _, bj := range b {
		for i0 < len(a) && bj-a[i0] > hi { // first i with bj − a[i] ≤ hi
			i0++
		}
		for i1 < len(a) && bj-a[i1] > lo { // first i with bj − a[i] ≤ lo
			i1++
		}
		for i := i0; i < i1; i++ {
			cand = append(cand, bj-a[i])
		}
	}
	slices.Sort(cand)
	return cand[k-cLo-1]
}

// Shift is the Hodges–Lehmann estimate of the shift from a to b (the
// median of every b[j] − a[i]) with its exact distribution-free interval
// at confidence: [the k-th smallest, the k-th largest] difference, k from
// the Mann–Whitney distribution. For b a shifted by Δ (b ~ a + Δ), the
// interval holds Δ with probability Coverage ≥ confidence, whatever the
// distribution (continuous; with ties, at least as often).
type Shift struct {
	M, N        int
	Point       float64
	Lower       float64
	Upper       float64
	Rank        int64
	Coverage    float64
	Approximate bool // the ranks from the normal approximation (m·n above exactMWLimit)
}

// HodgesLehmann estimates the shift from a to b, both sorted, at
// confidence.
func HodgesLehmann(a, b []float64, confidence float64) (Shift, error) {
	m, n := len(a), len(b)
	if m == 0 || n == 0 {
		return Shift{}, errors.New("hodges–lehmann: a side has no values")
	}
	if !slices.IsSorted(a) || !slices.IsSorted(b) {
		return Shift{}, errors.New("hodges–lehmann: a side is not sorted")
	}
	k, cov := mannWhitneyRank(m, n, confidence)
	if k == 0 {
		return Shift{}, fmt.Errorf("hodges–lehmann: %d and %d values cannot bound a shift at %.0f %%", m, n, 100*confidence)
	}
	mn := int64(m) * int64(n)
	s := Shift{M: m, N: n, Rank: k, Coverage: cov, Approximate: mn > exactMWLimit}
	if mn%2 == 1 {
		s.Point = kthDifference(a, b, (mn+1)/2)
	} else {
		s.Point = (kthDifference(a, b, mn/2) + kthDifference(a, b, mn/2+1)) / 2
	}
	s.Lower, s.Upper = kthDifference(a, b, k), kthDifference(a, b, mn+1-k)
	return s, nil
}

// logSorted returns the natural logarithms of sorted times (all > 0).
func logSorted(sorted []float64) ([]float64, error) {
	out := make([]float64, len(sorted))
	for i, v := range sorted {
		if !(v > 0) {
			return nil, fmt.Errorf("value %v: a relative change needs times > 0", v)
		}
		out[i] = math.Log(v)
	}
	return out, nil
}
