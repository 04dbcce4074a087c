package reports

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/stats"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// WithIntervals gives every measured row of g what issue 35's join
// records (the fixtures predate it): each series' p50/p90/p95/p99 with its
// n and distribution-free 95 % interval over the row's set, computed by
// reports/stats from the row's joined requests, the recorded figures as
// the points; and images/s estimated from the measured requests' cycles.
func WithIntervals(t *testing.T, g *GroupReport) {
	t.Helper()
	for i := range g.Rows {
		row := &g.Rows[i]
		r := row.Result
		if r == nil || !r.Measured() || len(row.joined) == 0 {
			continue
		}
		var http, task, dur []float64
		var starts []int64
		for _, l := range orderedRequests(row.joined) {
			if inLatencySet(l) && l.HTTPMS != nil && l.TaskMS != nil {
				http, task = append(http, *l.HTTPMS), append(task, *l.TaskMS)
			}
			if l.Phase == verdict.PhaseMeasured && l.HTTPMS != nil {
				starts, dur = append(starts, l.StartNS), append(dur, *l.HTTPMS)
			}
		}
		r.LatencyMS.HTTP.Intervals = intervalsOf(t, http)
		r.LatencyMS.Task.Intervals = intervalsOf(t, task)
		cycles, err := stats.Cycles(starts, dur)
		require.NoError(t, err)
		rate, err := stats.DefaultBootstrap().ImagesPerSecond(cycles, 1)
		require.NoError(t, err)
		iv := &verdict.RateInterval{N: len(cycles), Images: float64(len(cycles)), Point: rate.Point, Lower: rate.Lower,
			UpperUnbounded: rate.UpperUnbounded, Confidence: rate.Confidence, Method: rate.Method, Resamples: rate.Resamples, Seed: rate.Seed}
		if !rate.UpperUnbounded {
			iv.Upper = &rate.Upper
		}
		r.ImagesPerSecInterval = iv
	}
}

// linear is AIPerf 0.13.0's percentile (numpy's linear), the rows' rule.
func linear(values []float64, qs ...int) []float64 {
	s := slices.Sorted(slices.Values(values))
	out := make([]float64, len(qs))
	for i, q := range qs {
		h := float64(q) / 100 * float64(len(s)-1)
		lo := int(math.Floor(h))
		hi := min(lo+1, len(s)-1)
		out[i] = s[lo] + (h-float64(lo))*(s[hi]-s[lo])
	}
	return out
}

func intervalsOf(t *testing.T, values []float64) []verdict.PercentileInterval {
	t.Helper()
	if len(values) == 0 {
		return nil
	}
	qs, err := stats.Quantiles(values, linear, stats.DefaultConfidence, verdict.IntervalPercents...)
	require.NoError(t, err)
	out := make([]verdict.PercentileInterval, len(qs))
	for i, q := range qs {
		out[i] = verdict.PercentileInterval{Percent: q.Percent, N: q.N, Point: q.Point, Lower: q.Lower.Value, Upper: q.Upper.Value,
			LowerRank: q.Lower.Rank, UpperRank: q.Upper.Rank, LowerUnbounded: q.Lower.Unbounded, UpperUnbounded: q.Upper.Unbounded,
			Confidence: q.Confidence, Coverage: q.Coverage}
	}
	return out
}

// The compact interval text says an unbounded side, never a value.
func TestIntervalTextSaysUnbounded(t *testing.T) {
	lo, hi := 18.712, 19.318
	assert.Equal(t, "18.71–19.32", intervalText(&verdict.PercentileInterval{Lower: &lo, Upper: &hi}))
	assert.Equal(t, "≥ 18.71", intervalText(&verdict.PercentileInterval{Lower: &lo, UpperUnbounded: true}))
	assert.Equal(t, "≤ 19.32", intervalText(&verdict.PercentileInterval{Upper: &hi, LowerUnbounded: true}))
	assert.Equal(t, "unbounded", intervalText(&verdict.PercentileInterval{LowerUnbounded: true, UpperUnbounded: true}))
	assert.Equal(t, Missing, intervalText(nil))
}

// With intervals, the failed row's cells give them compactly, its card
// every percentile with n, and its plots and bars the whiskers — over the
// row's one set (n=46), a side n cannot bound drawn as an arrow.
func TestIntervalsInCellsCardAndWhiskers(t *testing.T) {
	g, err := Load([]string{RootA}, "vlm")
	require.NoError(t, err)
	WithIntervals(t, g)
	base := RowOf(t, g, "ref-vlm-base")
	h := base.Result.LatencyMS.HTTP
	p50, p95, p99 := h.Interval(50), h.Interval(95), h.Interval(99)
	require.NotNil(t, p50)
	assert.Equal(t, 46, p50.N, "the set's n")
	require.NotNil(t, p50.Lower)
	require.NotNil(t, p50.Upper)
	assert.True(t, p95.UpperUnbounded, "p95 of 46: the top of the sample cannot bound it")
	assert.True(t, p99.UpperUnbounded)

	cells := summaryCells(&base)
	assert.Contains(t, cells[2], "95 % CI "+fmtMS(p50.Lower)+"–"+fmtMS(p50.Upper)+" / ≥ "+fmtMS(p95.Lower))
	assert.Contains(t, cells[4], "95 % CI ", "images/s")

	var card strings.Builder
	writeFiguresTable(&card, base.Result)
	assert.Equal(t, 8, strings.Count(card.String(), "n=46"), "four percentiles of two series, each with n")
	assert.Contains(t, card.String(), "<th scope=\"row\">p99</th>")

	dist := distributionSVG(base.Profile, base.joined, base.Result.LatencyMS)
	assert.Equal(t, 4, strings.Count(dist, `<g class="ci p`), "p50 and p95 of HTTP and Task")
	assert.Equal(t, 2, strings.Count(dist, `<path class="unbounded"`), "the p95s' upper sides")
	assert.Contains(t, dist, "http p50 "+fmtMS(&p50.Point)+" ms, 95 % CI")

	chart := groupCharts(g.Rows)
	measured := 0
	for _, r := range g.Rows {
		if r.Result != nil && r.Result.Measured() && len(r.joined) > 0 {
			measured++
		}
	}
	assert.Equal(t, 4*measured, len(regexp.MustCompile(`<g class="ci p(50|95) (http|task)"`).FindAllString(chart, -1)))
	assert.Equal(t, measured, strings.Count(chart, `<g class="ci rate"`))
	assert.Contains(t, chart, `data-series="ci"`, "the legend has the whisker")
}

// WithDrift gives every measured row's series the stability check the join
// records, from its joined requests in the order they started.
func WithDrift(t *testing.T, g *GroupReport) {
	t.Helper()
	rule := stats.DefaultRule()
	for i := range g.Rows {
		row := &g.Rows[i]
		r := row.Result
		if r == nil || !r.Measured() || len(row.joined) == 0 {
			continue
		}
		var http, task []float64
		for _, l := range orderedRequests(row.joined) {
			if inLatencySet(l) && l.HTTPMS != nil && l.TaskMS != nil {
				http, task = append(http, *l.HTTPMS), append(task, *l.TaskMS)
			}
		}
		for _, s := range []struct {
			vals []float64
			p    *verdict.Percentiles
		}{{http, &r.LatencyMS.HTTP}, {task, &r.LatencyMS.Task}} {
			d, err := rule.Drift(s.vals)
			require.NoError(t, err)
			dc := &verdict.DriftCheck{Check: d.Check, Method: rule.Method, N: d.N, Checked: d.Checked, Unstable: d.Unstable}
			if d.Checked {
				c := d.Halves
				dc.Change, dc.Lower, dc.Upper = &c.RelChange, &c.RelLower, &c.RelUpper
			}
			s.p.Drift = dc
		}
	}
}

// The collapsed intervals table and the CSV columns give each figure with
// its interval over the row's one set; a side n cannot bound is said, and
// is an empty CSV cell, never a value (TestGoldenIntervalsText has the
// whole text).
func TestIntervalsText(t *testing.T) {
	g, err := Load([]string{RootA}, "vlm")
	require.NoError(t, err)
	WithIntervals(t, g)
	WithDrift(t, g)
	base := RowOf(t, g, "ref-vlm-base")
	p95 := base.Result.LatencyMS.HTTP.Interval(95)
	require.NotNil(t, p95)
	row := intervalsTable([]Row{base}, nil).Rows[0]
	assert.Equal(t, []string{"ref-vlm-base", "HTTP", "46"}, row[:3])
	assert.Equal(t, fmtMS(&p95.Point)+" (≥ "+fmtMS(p95.Lower)+")", row[5], "p95 of 46: only its lower side")
	assert.Regexp(t, `^(stable|unstable): last half [-+]\d+% \[`, row[7])
	v := csvValues(&base)
	assert.Equal(t, fmtPlain(p95.Lower), v["http_p95_lower_ms"])
	assert.Empty(t, v["http_p95_upper_ms"], "an unbounded side is an empty cell, never a value")
	assert.Equal(t, "46", v["http_n"])
	assert.Equal(t, "1", v["trials"])
}

// A row of repeated trials shows the median across trials with their
// range where a single run shows its interval.
func TestIntervalsTextTrials(t *testing.T) {
	g, err := Load([]string{RootA}, "vlm")
	require.NoError(t, err)
	row := RowOf(t, g, "ref-vlm-small")
	p := &row.Result.LatencyMS.HTTP
	s, err := stats.SummariseTrials([]float64{*p.P50 * 0.9, *p.P50, *p.P50 * 1.2})
	require.NoError(t, err)
	p.Intervals = nil
	p.AcrossTrials = []verdict.TrialSpread{{Figure: "p50", Trials: s.Trials, Median: s.Median, Min: s.Min, Max: s.Max, CV: s.CV}}
	cells := intervalsTable([]Row{row}, nil).Rows[0]
	assert.Equal(t, "3 trials", cells[2])
	assert.Equal(t, fmtMS(&s.Median)+" (3 trials: "+fmtMS(&s.Min)+"–"+fmtMS(&s.Max)+")", cells[3])
}
