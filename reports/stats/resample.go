package stats

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// DefaultResamples is the number of bootstrap resamples of every interval
// here. At 2,000 an interval's ends move by at most about 5 % of its width
// from one seed to another on samples of 50 (TestCompareIsReproducible
// holds them within 10 %); the seed is fixed anyway.
const DefaultResamples = 2000

// DefaultSeed seeds every bootstrap, so the same inputs always give the
// same interval (a re-rendered report never changes its mind).
const DefaultSeed uint64 = 35

// Bootstrap is how an interval is resampled: the nominal confidence, the
// number of resamples and the seed of math/rand/v2's PCG that draws them.
type Bootstrap struct {
	Confidence float64 `json:"confidence"`
	Resamples  int     `json:"resamples"`
	Seed       uint64  `json:"seed"`
}

// DefaultBootstrap is the 95 % percentile bootstrap with DefaultResamples
// and DefaultSeed.
func DefaultBootstrap() Bootstrap {
	return Bootstrap{Confidence: DefaultConfidence, Resamples: DefaultResamples, Seed: DefaultSeed}
}

func (b Bootstrap) check() error {
	if !(b.Confidence > 0 && b.Confidence < 1) {
		return fmt.Errorf("bootstrap: confidence %v, want 0 < c < 1", b.Confidence)
	}
	if b.Resamples < 100 {
		return fmt.Errorf("bootstrap: %d resamples, want at least 100", b.Resamples)
	}
	return nil
}

func (b Bootstrap) rng() *rand.Rand { return rand.New(rand.NewPCG(b.Seed, 0x747274636d717561)) }

// percentileInterval is the percentile bootstrap's interval: the
// (α/2, 1−α/2) empirical quantiles of the resampled statistics (gonum's
// stat.Quantile, Empirical: the smallest value with at least that share
// of the resamples at or below it). stats is sorted in place.
func (b Bootstrap) percentileInterval(stats []float64) (lo, hi float64) {
	slices.Sort(stats)
	half := (1 - b.Confidence) / 2
	return stat.Quantile(half, stat.Empirical, stats, nil), stat.Quantile(1-half, stat.Empirical, stats, nil)
}

// median is the sample median of sorted values (AIPerf's type-7 rule at
// p = 0.5, which for the median is the usual one: the middle value, or the
// mean of the two middle values).
func median(sorted []float64) float64 {
	n := len(sorted)
	lo, hi := (n-1)/2, n/2
	return sorted[lo] + 0.5*(sorted[hi]-sorted[lo])
}

// resampler draws bootstrap resamples. The median of a resample of a
// sorted sample is found without building or sorting the resample: draw n
// indices with replacement, count how often each is drawn, and walk the
// counts to the middle ranks — O(n) a resample instead of O(n log n).
type resampler struct {
	rng    *rand.Rand
	counts []int
	meds   []float64
}

func newResampler(b Bootstrap) *resampler { return &resampler{rng: b.rng()} }

// median is the median of one resample (with replacement) of sorted.
func (r *resampler) median(sorted []float64) float64 {
	n := len(sorted)
	if cap(r.counts) < n {
		r.counts = make([]int, n)
	}
	counts := r.counts[:n]
	clear(counts)
	for range n {
		counts[r.rng.IntN(n)]++
	}
	lo, hi := (n-1)/2, n/2
	cum := 0
	var a float64
	for i, c := range counts {
		if c == 0 {
			continue
		}
		before := cum
		cum += c
		if before <= lo && lo < cum {
			a = sorted[i]
		}
		if hi < cum {
			return a + 0.5*(sorted[i]-a)
		}
	}
	panic("stats: resampled median out of range")
}

// trialsMedian is the statistic of a set of trials (each sorted) in one
// bootstrap resample, in two stages: draw as many trials as there are
// with replacement, resample the requests of each drawn trial, and take the
// median of their medians. The first stage carries the trial-to-trial
// variation into the interval; with one trial it is the plain bootstrap.
func (r *resampler) trialsMedian(trials [][]float64) float64 {
	k := len(trials)
	if k == 1 {
		return r.median(trials[0])
	}
	if cap(r.meds) < k {
		r.meds = make([]float64, k)
	}
	meds := r.meds[:k]
	for j := range meds {
		meds[j] = r.median(trials[r.rng.IntN(k)])
	}
	slices.Sort(meds)
	return median(meds)
}

// sortedTrials checks a set of trials of times (at least one trial, each
// with at least one finite, non-negative value) and returns sorted copies.
func sortedTrials(what string, trials [][]float64) ([][]float64, int, error) {
	if len(trials) == 0 {
		return nil, 0, fmt.Errorf("%s: no trials", what)
	}
	out := make([][]float64, len(trials))
	n := 0
	for i, t := range trials {
		if len(t) == 0 {
			return nil, 0, fmt.Errorf("%s: trial %d has no values", what, i+1)
		}
		if err := checkTimes(t); err != nil {
			return nil, 0, fmt.Errorf("%s: trial %d: %w", what, i+1, err)
		}
		out[i] = slices.Sorted(slices.Values(t))
		n += len(t)
	}
	return out, n, nil
}

func checkTimes(v []float64) error {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return fmt.Errorf("value %d is %v, want a finite time ≥ 0", i+1, x)
		}
	}
	return nil
}

// trialsPoint is the median across trials of each trial's median.
func trialsPoint(sorted [][]float64) float64 {
	meds := make([]float64, len(sorted))
	for i, t := range sorted {
		meds[i] = median(t)
	}
	slices.Sort(meds)
	return median(meds)
}

var errZeroMedian = errors.New("the baseline's median is 0: no relative change")
