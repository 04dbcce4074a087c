// Package stats is the statistics of the rows' timing figures: how sure a
// figure is, whether a run drifted, how trials summarise, and when two runs
// differ by more than the noise. It is a leaf: the standard library and
// gonum only, so the row model, the renderers and the tools can all use it
// without reaching into each other.
//
//   - quantile.go: the distribution-free 95 % interval of a percentile from
//     order statistics (exact binomial ranks, the achieved coverage, a side
//     without a bound marked Unbounded, never invented), and Quantiles, which
//     pairs it with the point estimate of the caller's PointFunc — the same
//     function that made the row's figure, so the two can never disagree.
//   - resample.go: the seeded bootstrap machinery (medians of resamples
//     found by counting draws over the sorted sample, not by sorting each
//     resample; trials resampled in two stages).
//   - throughput.go: images/s at concurrency 1 from the requests' cycle
//     times, with its bootstrap-t interval (the t interval above 10,000
//     requests).
//   - compare.go: the baseline rule (Rule, Compare): the interval of the
//     change — the Hodges–Lehmann shift of the log times with its exact
//     Mann–Whitney interval for one run against one (the default, chosen
//     by make bench part 6: more power at no more false calls), the
//     two-stage bootstrap of the difference of medians when a side has
//     trials —, the relative change, and the decision — improved,
//     regressed, no change, or inconclusive.
//   - shift.go: the Hodges–Lehmann shift and its interval: the
//     Mann–Whitney null distribution (exact up to 5,000 pairs, the normal
//     approximation above) and the k-th of the m·n pairwise differences
//     found by bisection and counting, without building them.
//   - stability.go: the drift check within one run (first half against last
//     half, the baseline rule on the two halves).
//   - trials.go: the median across trials with its range and coefficient of
//     variation.
//   - fields.go: the named differences of two sets of key/value pairs, for
//     saying why two rows are not comparable.
//
// Distributions come from gonum.org/v1/gonum/stat/distuv (the binomial's
// CDF for the order-statistic ranks), moments and empirical quantiles from
// gonum.org/v1/gonum/stat; resampling draws indices from math/rand/v2's PCG
// with a fixed seed, so every interval is reproducible from its inputs.
package stats
