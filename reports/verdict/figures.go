package verdict

import "strconv"

// How sure a timing figure is (issue 35): each percentile with its sample
// count and its distribution-free interval, images/s with its interval,
// the stability check within a run, and repeated trials. The figures are
// computed by reports/stats in the one join (qual/streamjoin's Apply), so
// `run` and `report --rejudge` derive the same; none of them changes a
// verdict but the trials' own counts (Judge judges every trial).

// IntervalPercents are the percentiles every latency series carries with
// an interval, in the order of Percentiles.Intervals.
var IntervalPercents = []int{50, 90, 95, 99}

// PercentileInterval is one percentile of a series with its sample count
// and its distribution-free confidence interval from order statistics
// (exact binomial ranks, reports/stats.Quantiles): whatever the shape of
// the distribution, the true percentile of the run's conditions lies in
// [Lower, Upper] with probability at least Confidence (Coverage is what
// the ranks achieve). A side n cannot bound is unbounded: its value is
// null and its flag set, never a made-up value.
type PercentileInterval struct {
	Percent int `json:"percent"`
	N       int `json:"n"`
	// Point is the row's figure (AIPerf 0.13.0's rule), the same value as
	// the series' p50/p90/p95/p99 field.
	Point float64 `json:"point"`
	// Lower and Upper are the sample's values at LowerRank and UpperRank
	// (1-based order statistics); null when unbounded.
	Lower          *float64 `json:"lower"`
	Upper          *float64 `json:"upper"`
	LowerRank      int      `json:"lower_rank,omitempty"`
	UpperRank      int      `json:"upper_rank,omitempty"`
	LowerUnbounded bool     `json:"lower_unbounded"`
	UpperUnbounded bool     `json:"upper_unbounded"`
	Confidence     float64  `json:"confidence"`
	Coverage       float64  `json:"coverage"`
}

// Interval returns the interval of the percentile pct of the series, or
// nil when it has none (a row of an earlier version, a series with gaps,
// a row of repeated trials: each trial has its own).
func (p Percentiles) Interval(pct int) *PercentileInterval {
	for i := range p.Intervals {
		if p.Intervals[i].Percent == pct {
			return &p.Intervals[i]
		}
	}
	return nil
}

// Percentile returns the figure pct (50, 90, 95, 99) of the series, or nil.
func (p Percentiles) Percentile(pct int) *float64 {
	switch pct {
	case 50:
		return p.P50
	case 90:
		return p.P90
	case 95:
		return p.P95
	case 99:
		return p.P99
	}
	return nil
}

// Spread returns the across-trials spread of the figure named fig ("p50",
// ...), or nil.
func (p Percentiles) Spread(fig string) *TrialSpread {
	for i := range p.AcrossTrials {
		if p.AcrossTrials[i].Figure == fig {
			return &p.AcrossTrials[i]
		}
	}
	return nil
}

// DriftCheck is the stability check of one series within one run: its
// first half's median against its last half's, in the order the requests
// were sent, by the baseline rule (reports/stats.Rule.Drift). A called
// change marks the series Unstable — a note for the reader (the join adds
// one to the row), never a verdict: these are integration measurements,
// not performance gates.
type DriftCheck struct {
	// Check names the check ("halves_median"), Method the rule's interval.
	Check  string `json:"check"`
	Method string `json:"method"`
	N      int    `json:"n"`
	// Checked is false when N is too small to check (fewer than 20
	// requests); nothing below is set then.
	Checked bool `json:"checked"`
	// FirstMedian and LastMedian are the halves' medians in ms; Change the
	// relative change of the last against the first, [Lower, Upper] its
	// interval at Confidence, relative too.
	FirstMedian *float64 `json:"first_median,omitempty"`
	LastMedian  *float64 `json:"last_median,omitempty"`
	Change      *float64 `json:"change,omitempty"`
	Lower       *float64 `json:"lower,omitempty"`
	Upper       *float64 `json:"upper,omitempty"`
	Confidence  float64  `json:"confidence,omitempty"`
	MinEffect   float64  `json:"min_effect,omitempty"`
	Unstable    bool     `json:"unstable"`
}

// RateInterval is images/s over the measured requests of a run at
// concurrency 1, estimated from the requests' cycles (from each request's
// start to the next one's; reports/stats.Bootstrap.ImagesPerSecond), with
// its interval. Point is images over the span of the requests, 1–3 %
// above AIPerf's request_throughput (the row's ImagesPerSec), whose
// duration also holds AIPerf's own phase start and end.
type RateInterval struct {
	N      int     `json:"n"`
	Images float64 `json:"images"`
	Point  float64 `json:"point"`
	Lower  float64 `json:"lower"`
	// Upper is null when the mean cycle's interval reaches zero.
	Upper          *float64 `json:"upper"`
	UpperUnbounded bool     `json:"upper_unbounded"`
	Confidence     float64  `json:"confidence"`
	// Method is the interval's: the studentized bootstrap of the cycles,
	// or, above a cap on the requests, the t interval of their mean (the
	// bootstrap's cost grows with the requests, its advantage shrinks).
	Method    string `json:"method"`
	Resamples int    `json:"resamples,omitempty"`
	Seed      uint64 `json:"seed,omitempty"`
}

// TrialSpread is one figure over repeated trials: the median across the
// trials (the row's headline), their range and the trial-to-trial
// variation (coefficient of variation: sample standard deviation over the
// mean; null for fewer than two trials).
type TrialSpread struct {
	Figure string   `json:"figure"`
	Trials int      `json:"trials"`
	Median float64  `json:"median"`
	Min    float64  `json:"min"`
	Max    float64  `json:"max"`
	CV     *float64 `json:"cv"`
}

// TrialDir is the directory of trial k's AIPerf artifacts and TrialJoined
// its joined.jsonl, relative to the row's directory, in a row of repeated
// trials (a row of one trial keeps aiperf/ and joined.jsonl).
func TrialDir(k int) string { return "aiperf/trial-" + strconv.Itoa(k) }

// TrialJoined is trial k's joined.jsonl (TrialMismatches its
// mismatches.jsonl), relative to the row's directory.
func TrialJoined(k int) string { return "trial-" + strconv.Itoa(k) + "/joined.jsonl" }

// TrialMismatches is trial k's mismatches.jsonl.
func TrialMismatches(k int) string { return "trial-" + strconv.Itoa(k) + "/mismatches.jsonl" }

// Trial is one of a row's repeated trials (`run --trials N`, the
// workload's trials, N ≥ 2): a complete, joined warmup + measured run of
// AIPerf against the same server, every request accounted for by id. The
// row qualifies only when every trial does (Judge judges each one's
// counts and latency; a reason names its trial).
type Trial struct {
	Trial int `json:"trial"`
	// AIPerfDir and Joined are the trial's AIPerf artifacts and its
	// joined.jsonl, relative to the row's directory.
	AIPerfDir       string            `json:"aiperf_dir"`
	Joined          string            `json:"joined"`
	Requests        Counts            `json:"requests"`
	RequestsByPhase map[string]Counts `json:"requests_by_phase"`
	Examples        []RequestExample  `json:"examples,omitempty"`
	HTTPErrors      []HTTPError       `json:"http_errors,omitempty"`
	// LatencyMS is the trial's own: each percentile with its interval and
	// the drift check.
	LatencyMS Latency `json:"latency_ms"`
	// ImagesPerSec is AIPerf's request_throughput of the trial;
	// ImagesPerSecInterval the estimate from its cycles.
	ImagesPerSec         *float64      `json:"images_per_sec"`
	ImagesPerSecInterval *RateInterval `json:"images_per_sec_interval,omitempty"`
	OutputTokens         *int          `json:"output_tokens,omitempty"`
	Boxes                *int          `json:"boxes,omitempty"`
	Notes                []string      `json:"notes,omitempty"`
}

// TrialCount is the number of trials the row ran: 1 unless its workload
// asked for more.
func (w Workload) TrialCount() int {
	if w.Trials < 1 {
		return 1
	}
	return w.Trials
}
