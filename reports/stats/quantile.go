package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// DefaultConfidence is the nominal confidence of every interval here.
const DefaultConfidence = 0.95

// RankInterval is a distribution-free confidence interval for the p-quantile
// q_p of a continuous distribution from a sample of n, as ranks of the
// sorted sample: q_p lies in [X_(Lower), X_(Upper)] with probability at
// least Confidence, whatever the distribution.
//
// The number B of sample values below q_p is Binomial(n, p), and
// X_(l) ≤ q_p ≤ X_(u) exactly when l ≤ B ≤ u−1, so the coverage is
// P(l ≤ B ≤ u−1) = F(u−1) − F(l−1), F the binomial CDF. The ranks are
// equal-tailed, the rule of the published tables (Campbell and Gardner,
// BMJ 1988, for the median): Lower is the largest l with P(B ≤ l−1) ≤ α/2
// and Upper the smallest u with P(B ≥ u) ≤ α/2, α = 1 − Confidence; no rank
// can move inward without a tail exceeding α/2. When even X_(1) (or X_(n))
// leaves more than α/2 on its side — (1−p)^n > α/2 (or p^n > α/2) — that
// side is Unbounded: n is too small to bound it, and no value is made up.
// Coverage is what the ranks achieve (at least Confidence; an unbounded side
// counts as −∞ or +∞). With ties (a discrete distribution) the coverage is
// at least as high.
type RankInterval struct {
	N          int     `json:"n"`
	P          float64 `json:"p"`
	Confidence float64 `json:"confidence"`
	// Lower and Upper are 1-based ranks; 0 when that side is unbounded.
	Lower          int     `json:"lower_rank"`
	Upper          int     `json:"upper_rank"`
	LowerUnbounded bool    `json:"lower_unbounded"`
	UpperUnbounded bool    `json:"upper_unbounded"`
	Coverage       float64 `json:"coverage"`
}

// OrderStatisticInterval computes the ranks of the interval for the
// p-quantile (0 < p < 1) from a sample of n ≥ 1 at the given confidence
// (0 < confidence < 1). It binary-searches the binomial CDF, so a million
// requests cost a few dozen evaluations.
func OrderStatisticInterval(n int, p, confidence float64) (RankInterval, error) {
	if n < 1 {
		return RankInterval{}, fmt.Errorf("order-statistic interval: sample size %d, want at least 1", n)
	}
	if !(p > 0 && p < 1) {
		return RankInterval{}, fmt.Errorf("order-statistic interval: quantile %v, want 0 < p < 1", p)
	}
	if !(confidence > 0 && confidence < 1) {
		return RankInterval{}, fmt.Errorf("order-statistic interval: confidence %v, want 0 < c < 1", confidence)
	}
	half := (1 - confidence) / 2
	below := distuv.Binomial{N: float64(n), P: p}     // B, values below q_p
	above := distuv.Binomial{N: float64(n), P: 1 - p} // n − B, values above
	// lowTail(l) = P(B ≤ l−1) grows with l; highTail(u) = P(B ≥ u) =
	// P(n−B ≤ n−u) shrinks with u.
	lowTail := func(l int) float64 { return below.CDF(float64(l - 1)) }
	highTail := func(u int) float64 { return above.CDF(float64(n - u)) }
	ri := RankInterval{N: n, P: p, Confidence: confidence}
	// The largest l in [1, n] with lowTail(l) ≤ half.
	if lowTail(1) > half {
		ri.LowerUnbounded = true
	} else {
		lo, hi := 1, n // lowTail(lo) ≤ half
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if lowTail(mid) <= half {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		ri.Lower = lo
	}
	// The smallest u in [1, n] with highTail(u) ≤ half.
	if highTail(n) > half {
		ri.UpperUnbounded = true
	} else {
		lo, hi := 1, n // highTail(hi) ≤ half
		for lo < hi {
			mid := (lo + hi) / 2
			if highTail(mid) <= half {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		ri.Upper = hi
	}
	covered := 1.0
	if !ri.LowerUnbounded {
		covered -= lowTail(ri.Lower)
	}
	if !ri.UpperUnbounded {
		covered -= highTail(ri.Upper)
	}
	ri.Coverage = covered
	return ri, nil
}

// PointFunc computes the percentiles qs (0..100) of values, as the row's
// figures are computed. The point estimate of a QuantileEstimate is never
// computed here: it is the caller's, so an interval always sits beside the
// very figure the row reports. The rows use AIPerf 0.13.0's definition,
// numpy's "linear" (Hyndman and Fan type 7): with the sorted sample
// x_0 ≤ … ≤ x_{n−1} and h = p(n−1), the estimate is
// x_⌊h⌋ + (h−⌊h⌋)(x_⌊h⌋+1 − x_⌊h⌋) — qual/aiperf's Percentiles (Task times)
// and LatencyPercentilesMs (HTTP times, the same rule on AIPerf's integer
// nanoseconds). That point lies at 1-based position 1+p(n−1), inside the
// 95 % interval's ranks for every percentile 1..99 and every n checked (to
// 1,000) but p1 and p99 of two values (TestPointInsideTheRanks).
type PointFunc func(values []float64, qs ...int) []float64

// Bound is one side of a quantile's interval: an order statistic of the
// sample, or Unbounded when the sample is too small to bound that side.
type Bound struct {
	Unbounded bool `json:"unbounded"`
	// Rank is the 1-based order statistic; 0 when Unbounded.
	Rank int `json:"rank,omitempty"`
	// Value is the sample's value at Rank; nil when Unbounded.
	Value *float64 `json:"value"`
}

// QuantileEstimate is one percentile of a sample with its sample count and
// its distribution-free interval.
type QuantileEstimate struct {
	Percent int     `json:"percent"`
	N       int     `json:"n"`
	Point   float64 `json:"point"`
	Lower   Bound   `json:"lower"`
	Upper   Bound   `json:"upper"`
	// Confidence is the nominal level, Coverage what the ranks achieve.
	Confidence float64 `json:"confidence"`
	Coverage   float64 `json:"coverage"`
}

// Quantiles estimates the percentiles qs (each 1..99) of values (at least
// one value, none NaN): each with its point from point, n, and its
// interval at confidence. values is not modified.
func Quantiles(values []float64, point PointFunc, confidence float64, qs ...int) ([]QuantileEstimate, error) {
	if len(values) == 0 {
		return nil, errors.New("quantiles: no values")
	}
	if slices.ContainsFunc(values, math.IsNaN) {
		return nil, errors.New("quantiles: a value is NaN")
	}
	if point == nil {
		return nil, errors.New("quantiles: no point estimate function")
	}
	sorted := slices.Sorted(slices.Values(values))
	points := point(values, qs...)
	if len(points) != len(qs) {
		return nil, fmt.Errorf("quantiles: the point function gave %d values for %d percentiles", len(points), len(qs))
	}
	out := make([]QuantileEstimate, len(qs))
	for i, q := range qs {
		if q < 1 || q > 99 {
			return nil, fmt.Errorf("quantiles: percentile %d, want 1..99", q)
		}
		ri, err := OrderStatisticInterval(len(sorted), float64(q)/100, confidence)
		if err != nil {
			return nil, err
		}
		out[i] = QuantileEstimate{Percent: q, N: len(sorted), Point: points[i],
			Lower: bound(sorted, ri.Lower, ri.LowerUnbounded), Upper: bound(sorted, ri.Upper, ri.UpperUnbounded),
			Confidence: confidence, Coverage: ri.Coverage}
	}
	return out, nil
}

func bound(sorted []float64, rank int, unbounded bool) Bound {
	if unbounded {
		return Bound{Unbounded: true}
	}
	v := sorted[rank-1]
	return Bound{Rank: rank, Value: &v}
}

// MinSampleForBounds is the smallest n for which both sides of the
// interval of the p-quantile are bounded at confidence: (1−p)^n ≤ α/2 and
// p^n ≤ α/2. For the 95 % interval: 6 for p50, 36 for p90, 72 for p95, 368
// for p99.
func MinSampleForBounds(p, confidence float64) int {
	half := (1 - confidence) / 2
	worst := max(p, 1-p)
	n := int(math.Ceil(math.Log(half) / math.Log(worst)))
	for math.Pow(worst, float64(n)) > half { // rounding of the logarithms
		n++
	}
	for n > 1 && math.Pow(worst, float64(n-1)) <= half {
		n--
	}
	return n
}
