package stats

import (
	"errors"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// TrialSummary is one figure over repeated trials: the median across the
// trials (the headline), their range, and the trial-to-trial variation.
type TrialSummary struct {
	Trials int     `json:"trials"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// CV is the coefficient of variation, the sample standard deviation
	// (n − 1) over the mean; nil with fewer than two trials or a mean of 0.
	CV *float64 `json:"cv"`
}

// SummariseTrials summarises one figure of each trial (at least one value,
// none NaN or infinite).
func SummariseTrials(values []float64) (TrialSummary, error) {
	if len(values) == 0 {
		return TrialSummary{}, errors.New("trials: no values")
	}
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return TrialSummary{}, errors.New("trials: a value is not a finite number")
		}
	}
	s := slices.Sorted(slices.Values(values))
	t := TrialSummary{Trials: len(s), Median: median(s), Min: s[0], Max: s[len(s)-1]}
	if len(s) >= 2 {
		mean, sd := stat.MeanStdDev(s, nil)
		if mean != 0 {
			cv := sd / math.Abs(mean)
			t.CV = &cv
		}
	}
	return t, nil
}

// Spread is the range as a share of the median, (Max − Min) / Median: how
// far apart the trials are (0 for one trial; +Inf for a median of 0 with a
// range).
func (t TrialSummary) Spread() float64 {
	if t.Max == t.Min {
		return 0
	}
	return (t.Max - t.Min) / math.Abs(t.Median)
}
