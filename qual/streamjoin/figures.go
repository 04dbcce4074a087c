package streamjoin

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports/stats"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// How sure the row's figures are (issue 35), computed here, in the one
// join's Apply, so `run` and `report --rejudge` derive the same: each
// percentile with its n and its distribution-free interval, the drift
// check of each series, images/s from the requests' cycles with its
// interval, and the summary over repeated trials.

// seriesFigures are a latency series' percentiles over the set of n
// requests (their starts in starts, for the drift check), with the
// figures' intervals: a series with gaps (fewer values than requests) is
// not summarised at all, so no figure stands for a different set than the
// row states.
func seriesFigures(vals []float64, starts []int64, n int, missing string, point stats.PointFunc) verdict.Percentiles {
	p := verdict.Percentiles{Count: len(vals)}
	if len(vals) < n {
		p.MissingExample = missing
		return p
	}
	if len(vals) == 0 {
		return p
	}
	qs, err := stats.Quantiles(vals, point, stats.DefaultConfidence, verdict.IntervalPercents...)
	if err != nil {
		// Only a NaN gets here, and the join keeps none: the figures are
		// withheld rather than made up.
		p.MissingExample = missing
		return p
	}
	figs := make([]*float64, len(qs))
	for i, q := range qs {
		v := q.Point
		figs[i] = &v
		p.Intervals = append(p.Intervals, interval(q))
	}
	p.P50, p.P90, p.P95, p.P99 = figs[0], figs[1], figs[2], figs[3]
	p.Drift = drift(vals, starts)
	return p
}

func interval(q stats.QuantileEstimate) verdict.PercentileInterval {
	return verdict.PercentileInterval{Percent: q.Percent, N: q.N, Point: q.Point,
		Lower: q.Lower.Value, Upper: q.Upper.Value, LowerRank: q.Lower.Rank, UpperRank: q.Upper.Rank,
		LowerUnbounded: q.Lower.Unbounded, UpperUnbounded: q.Upper.Unbounded,
		Confidence: q.Confidence, Coverage: q.Coverage}
}

// drift is the stability check of a series in the order its requests
// started (the join keeps them in id order). nil when the starts are not
// all known.
func drift(vals []float64, starts []int64) *verdict.DriftCheck {
	if len(starts) != len(vals) {
		return nil
	}
	idx := make([]int, len(vals))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(starts[a], starts[b]) })
	inOrder := make([]float64, len(vals))
	for k, i := range idx {
		inOrder[k] = vals[i]
	}
	rule := stats.DefaultRule()
	d, err := rule.Drift(inOrder)
	out := &verdict.DriftCheck{Check: stats.DriftCheck, Method: rule.Method, N: len(vals)}
	if err != nil || !d.Checked {
		// A half with a time of 0 has no relative change: not checked.
		return out
	}
	c := d.Halves
	out.Method = c.Method
	out.Checked, out.Unstable = true, d.Unstable
	out.FirstMedian, out.LastMedian = f64(c.BaseMedian), f64(c.CurrentMedian)
	out.Change, out.Lower, out.Upper = f64(c.RelChange), f64(c.RelLower), f64(c.RelUpper)
	out.Confidence, out.MinEffect = rule.Confidence, rule.MinEffect
	return out
}

func f64(v float64) *float64 { return &v }

// driftNote is the row's note for an unstable series ("" when stable or
// not checked). It words the change as stats.Drift.String does: the
// halves' medians, then the rule's estimated shift — for one run's halves
// the Hodges–Lehmann shift, not the ratio of the medians beside it.
func driftNote(series string, d *verdict.DriftCheck) string {
	if d == nil || !d.Unstable {
		return ""
	}
	return fmt.Sprintf("%s timing unstable within the run: medians %.3g → %.3g ms (first half → last half of the measured requests); "+
		"estimated shift %+.0f %%, %.0f %% interval %+.0f %% to %+.0f %% (check %s): a note on the timing, not a verdict",
		series, *d.FirstMedian, *d.LastMedian, 100**d.Change, 100*d.Confidence, 100**d.Lower, 100**d.Upper, d.Check)
}

// rate is images/s from the measured requests' cycles with its interval,
// at concurrency 1 only (cycles mean nothing when requests overlap); nil
// when it cannot be estimated (fewer than two requests, overlapping ones,
// too few distinct cycles).
func (res *Result) rate(concurrency int) *verdict.RateInterval {
	if concurrency != 1 || len(res.CycleStart) < 2 {
		return nil
	}
	cycles, err := stats.Cycles(res.CycleStart, res.CycleMS)
	if err != nil {
		return nil
	}
	r, err := stats.DefaultBootstrap().ImagesPerSecond(cycles, 1)
	if err != nil {
		return nil
	}
	out := &verdict.RateInterval{N: r.N, Images: r.Images, Point: r.Point, Lower: r.Lower, UpperUnbounded: r.UpperUnbounded,
		Confidence: r.Confidence, Method: r.Method}
	if r.Method == stats.RateMethod {
		out.Resamples, out.Seed = r.Resamples, r.Seed
	}
	if !r.UpperUnbounded {
		out.Upper = f64(r.Upper)
	}
	return out
}

// latency is the row's latency of the one stated set, with its figures.
func (res *Result) latency() verdict.Latency {
	l := verdict.Latency{Set: verdict.LatencySetMeasuredMatched,
		HTTP:       seriesFigures(res.MeasuredHTTP, res.MeasuredHTTPStart, res.MeasuredMatched, res.HTTPMissing, aiperf.LatencyPercentilesMs),
		Task:       seriesFigures(res.MeasuredTask, res.MeasuredTaskStart, res.MeasuredMatched, res.TaskMissing, aiperf.Percentiles),
		TaskSource: res.TaskSource, TaskScope: res.TaskScope, TaskAgreement: res.Agreement,
		HTTPSplit: res.httpSplit()}
	return l
}

// notes are the join's notes and those of the drift checks.
func (res *Result) notes(l verdict.Latency) []string {
	out := slices.Clone(res.Notes)
	for _, s := range []struct {
		name string
		d    *verdict.DriftCheck
	}{{"HTTP", l.HTTP.Drift}, {"Task", l.Task.Drift}} {
		if n := driftNote(s.name, s.d); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// outputs are the output tokens (vision-language) or boxes (detection)
// over the measured matched requests.
func (res *Result) outputs(endpointType string) (tokens, boxes *int) {
	if typ, ok := endpoint.Lookup(endpointType); ok && typ.Counts() == endpoint.Tokens {
		n := res.OutputTokens
		return &n, nil
	}
	n := res.Boxes
	return nil, &n
}

func (res *Result) total() Counts {
	var total Counts
	for _, c := range res.ByPhase {
		total = total.Add(c)
	}
	return total
}

// Trial is the join of one of a row's repeated trials (1-based k) as the
// row records it: its counts, examples, latency with its figures and
// notes; its AIPerf throughput is the caller's (AIPerf's summary).
func (res *Result) Trial(k int, r *verdict.Result) verdict.Trial {
	t := verdict.Trial{Trial: k, AIPerfDir: verdict.TrialDir(k), Joined: verdict.TrialJoined(k),
		Requests: res.total(), RequestsByPhase: maps.Clone(res.ByPhase),
		Examples: res.Examples, HTTPErrors: res.HTTPErrors, LatencyMS: res.latency(),
		ImagesPerSecInterval: res.rate(r.Workload.Concurrency)}
	t.Notes = res.notes(t.LatencyMS)
	t.OutputTokens, t.Boxes = res.outputs(r.Answers.EndpointType)
	return t
}

// ApplyTrials writes the joins of a row's repeated trials into it: each
// trial (Trial, with its AIPerf throughput from rates), and the row's own
// figures over them — counts, output tokens or boxes and image sizes
// summed, each percentile and images/s the median across the trials with
// their range and variation (AcrossTrials), the notes of each trial
// (naming it). The unclaimed ids are the row's, the same in every trial's
// join (another trial's ids are none of them): the first trial's.
func ApplyTrials(r *verdict.Result, joins []*Result, rates []*float64) {
	r.Trials = make([]verdict.Trial, len(joins))
	r.RequestsByPhase, r.Requests, r.Examples, r.HTTPErrors, r.ImageSizes = map[string]verdict.Counts{}, verdict.Counts{}, nil, nil, nil
	r.Notes = nil
	var tokens, boxes *int
	sizes := map[[2]int]int{}
	for i, res := range joins {
		t := res.Trial(i+1, r)
		t.ImagesPerSec = rates[i]
		r.Trials[i] = t
		for ph, c := range t.RequestsByPhase {
			r.RequestsByPhase[ph] = r.RequestsByPhase[ph].Add(c)
		}
		r.Requests = r.Requests.Add(t.Requests)
		tokens, boxes = addInt(tokens, t.OutputTokens), addInt(boxes, t.Boxes)
		for _, s := range res.ImageSizes {
			sizes[[2]int{s.Width, s.Height}] += s.Count
		}
		for _, n := range t.Notes {
			r.Notes = append(r.Notes, fmt.Sprintf("trial %d of %d: %s", i+1, len(joins), n))
		}
	}
	r.OutputTokens, r.Boxes = tokens, boxes
	for wh, n := range sizes {
		r.ImageSizes = append(r.ImageSizes, verdict.ImageSize{Width: wh[0], Height: wh[1], Count: n})
	}
	slices.SortFunc(r.ImageSizes, func(a, b verdict.ImageSize) int {
		return cmp.Or(cmp.Compare(a.Width, b.Width), cmp.Compare(a.Height, b.Height))
	})
	if len(joins) > 0 {
		r.Unclaimed = joins[0].Unclaimed
	}
	r.LatencyMS = acrossLatency(r.Trials)
	r.ImagesPerSec, r.ImagesPerSecAcrossTrials = across("images_per_sec", r.Trials, func(t *verdict.Trial) *float64 { return t.ImagesPerSec })
	r.ImagesPerSecInterval = nil
}

func addInt(sum, v *int) *int {
	if v == nil {
		return sum
	}
	s := *v
	if sum != nil {
		s += *sum
	}
	return &s
}

// acrossLatency is the row's latency over its trials: the set and the
// Task source of the trials (the first's), each series' count summed and
// each percentile the median across the trials, with its spread; a
// series that is not complete in every trial has no figure. The HTTP
// split and the Task agreement are each trial's own.
func acrossLatency(trials []verdict.Trial) verdict.Latency {
	if len(trials) == 0 {
		return verdict.Latency{}
	}
	first := trials[0].LatencyMS
	l := verdict.Latency{Set: first.Set, TaskSource: first.TaskSource, TaskScope: first.TaskScope}
	for _, s := range []struct {
		out *verdict.Percentiles
		of  func(*verdict.Trial) *verdict.Percentiles
	}{
		{&l.HTTP, func(t *verdict.Trial) *verdict.Percentiles { return &t.LatencyMS.HTTP }},
		{&l.Task, func(t *verdict.Trial) *verdict.Percentiles { return &t.LatencyMS.Task }},
	} {
		for i := range trials {
			p := s.of(&trials[i])
			s.out.Count += p.Count
			if s.out.MissingExample == "" {
				s.out.MissingExample = p.MissingExample
			}
		}
		figs := make([]*float64, len(verdict.IntervalPercents))
		for k, pct := range verdict.IntervalPercents {
			var spread *verdict.TrialSpread
			figs[k], spread = across(fmt.Sprintf("p%d", pct), trials, func(t *verdict.Trial) *float64 { return s.of(t).Percentile(pct) })
			if spread != nil {
				s.out.AcrossTrials = append(s.out.AcrossTrials, *spread)
			}
		}
		s.out.P50, s.out.P90, s.out.P95, s.out.P99 = figs[0], figs[1], figs[2], figs[3]
	}
	return l
}

// across is one figure over the trials: the median across them and its
// spread; nil when a trial lacks it.
func across(name string, trials []verdict.Trial, of func(*verdict.Trial) *float64) (*float64, *verdict.TrialSpread) {
	vals := make([]float64, 0, len(trials))
	for i := range trials {
		v := of(&trials[i])
		if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
			return nil, nil
		}
		vals = append(vals, *v)
	}
	s, err := stats.SummariseTrials(vals)
	if err != nil {
		return nil, nil
	}
	return f64(s.Median), &verdict.TrialSpread{Figure: name, Trials: s.Trials, Median: s.Median, Min: s.Min, Max: s.Max, CV: s.CV}
}
