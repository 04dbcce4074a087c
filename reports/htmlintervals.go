package reports

import (
	"fmt"
	"html"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// The HTML report's uncertainty (issue 35): every timing figure of a row
// with its n and its 95 % interval — compact text in the results table,
// a table of every percentile on the row's card, whiskers on the bars of
// the group charts and on the p50/p95 markers of the distribution plot.
// A side n is too small to bound is said ("≥ 19.84", "unbounded"), never
// drawn as if it were a value: its whisker runs to the plot's edge and
// ends in an arrow.

// boundText is an interval as compact text: "18.71–19.32", "≥ 19.84"
// (upper side unbounded), "≤ 19.32" (lower side unbounded), "unbounded".
func boundText(lower, upper *float64) string {
	switch {
	case lower != nil && upper != nil:
		return fmtMS(lower) + "–" + fmtMS(upper)
	case lower != nil:
		return "≥ " + fmtMS(lower)
	case upper != nil:
		return "≤ " + fmtMS(upper)
	}
	return "unbounded"
}

// intervalText is a percentile's 95 % interval as compact text (Missing
// without one).
func intervalText(iv *verdict.PercentileInterval) string {
	if iv == nil {
		return Missing
	}
	return boundText(iv.Lower, iv.Upper)
}

// rateIntervalText is the images/s interval as compact text.
func rateIntervalText(iv *verdict.RateInterval) string {
	lo := iv.Lower
	return boundText(&lo, iv.Upper)
}

// ciTitle explains a table cell's interval line.
const ciTitle = "distribution-free 95 % confidence interval of p50 / p95 over the row's set (exact binomial order statistics); ≥ or ≤: the sample is too small to bound that side"

// intervalCell is the compact interval line of a latency cell: the 95 %
// intervals of p50 / p95, or, for a row of repeated trials, the range of
// each across the trials; "" when the row has neither.
func intervalCell(p verdict.Percentiles) string {
	a, b := p.Interval(50), p.Interval(95)
	if a != nil || b != nil {
		return fmt.Sprintf(`<span class="ci" title="%s">95 %% CI %s / %s</span>`, ciTitle, html.EscapeString(intervalText(a)), html.EscapeString(intervalText(b)))
	}
	if s50, s95 := p.Spread("p50"), p.Spread("p95"); s50 != nil || s95 != nil {
		return fmt.Sprintf(`<span class="ci" title="range of p50 / p95 across the trials">%s: %s / %s</span>`,
			trialsWord(s50, s95), spreadText(s50), spreadText(s95))
	}
	return ""
}

// rateCell is the images/s cell's interval line.
func rateCell(r *verdict.Result) string {
	switch {
	case r.ImagesPerSecInterval != nil:
		iv := r.ImagesPerSecInterval
		return fmt.Sprintf(`<span class="ci" title="95 %% interval of images/s estimated from the %d measured requests' cycles (%s; its point %s)">95 %% CI %s</span>`,
			iv.N, html.EscapeString(iv.Method), fmtRate(&iv.Point), html.EscapeString(rateIntervalText(iv)))
	case r.ImagesPerSecAcrossTrials != nil:
		s := r.ImagesPerSecAcrossTrials
		return fmt.Sprintf(`<span class="ci" title="range of images/s across the trials">%s: %s</span>`, trialsWord(s, nil), spreadText(s))
	}
	return ""
}

func trialsWord(a, b *verdict.TrialSpread) string {
	for _, s := range []*verdict.TrialSpread{a, b} {
		if s != nil {
			return fmt.Sprintf("%d trials", s.Trials)
		}
	}
	return "trials"
}

// spreadText is a figure's range across trials ("18.10–19.90").
func spreadText(s *verdict.TrialSpread) string {
	if s == nil {
		return Missing
	}
	return boundText(&s.Min, &s.Max)
}

// writeFiguresTable writes a row's card table of every timing figure:
// p50, p90, p95 and p99 of HTTP and Task, each with its 95 % interval and
// n, then images/s, and the stability check of each series.
func writeFiguresTable(b *strings.Builder, res *verdict.Result) {
	l := res.LatencyMS
	if l.HTTP.Intervals == nil && l.Task.Intervals == nil && l.HTTP.AcrossTrials == nil && res.ImagesPerSecInterval == nil {
		return
	}
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("<table class=\"figures\">\n<thead><tr><th>ms</th><th>HTTP</th><th>95 %% CI</th><th>Task</th><th>95 %% CI</th></tr></thead>\n<tbody>\n")
	for _, pct := range verdict.IntervalPercents {
		p("<tr><th scope=\"row\">p%d</th>", pct)
		for _, s := range []verdict.Percentiles{l.HTTP, l.Task} {
			iv := s.Interval(pct)
			ci := e(intervalText(iv))
			if iv != nil {
				ci += fmt.Sprintf(" <span class=\"n\">n=%d</span>", iv.N)
			} else if sp := s.Spread(fmt.Sprintf("p%d", pct)); sp != nil {
				ci = e(fmt.Sprintf("%d trials: %s", sp.Trials, spreadText(sp)))
			}
			fig := s.Percentile(pct)
			if fig == nil && iv != nil {
				fig = &iv.Point // the same figure (verdict.PercentileInterval)
			}
			p("<td class=\"num\">%s</td><td class=\"num\">%s</td>", e(fmtMS(fig)), ci)
		}
		p("</tr>\n")
	}
	p("</tbody>\n</table>\n")
	if iv := res.ImagesPerSecInterval; iv != nil {
		p("<p class=\"figures-rate\">Images/s %s (AIPerf); estimated from the %d measured requests' cycles %s, 95 %% CI %s (%s).</p>\n",
			e(fmtRate(res.ImagesPerSec)), iv.N, e(fmtRate(&iv.Point)), e(rateIntervalText(iv)), e(iv.Method))
	}
	for _, s := range []struct {
		name string
		d    *verdict.DriftCheck
	}{{"HTTP", l.HTTP.Drift}, {"Task", l.Task.Drift}} {
		if s.d != nil && s.d.Unstable {
			p("<p class=\"note unstable\">%s time unstable within the run: the last half's median %s ms against the first half's %s ms (a note, never a verdict).</p>\n",
				s.name, e(fmtMS(s.d.LastMedian)), e(fmtMS(s.d.FirstMedian)))
		}
	}
}

// unboundedStub is how far (px) a whisker's unbounded side runs past the
// figure before its arrow: far enough to read, never a made-up bound.
const unboundedStub = 14.0

// whisker draws a 95 % interval as a horizontal whisker at y, solid from
// x(lo) to x(hi) and capped at each bounded end; an unbounded side is a
// dashed stub from the figure (point) ending in an arrow, kept inside
// [x0, x1].
func whisker(b *svgBuf, class string, y, x0, x1 float64, x func(float64) float64, point float64, lo, hi *float64, title string) {
	a, z := x(point), x(point)
	if lo != nil {
		a = x(*lo)
	}
	if hi != nil {
		z = x(*hi)
	}
	b.f(`<g class="ci %s"><title>%s</title><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#222" stroke-width="1.2"/>`,
		class, html.EscapeString(title), num(a), num(y), num(z), num(y))
	for _, end := range []struct {
		at      float64
		bounded bool
		dir     float64
	}{{a, lo != nil, -1}, {z, hi != nil, 1}} {
		if end.bounded {
			b.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#222" stroke-width="1.2"/>`, num(end.at), num(y-3), num(end.at), num(y+3))
			continue
		}
		tip := min(max(end.at+end.dir*unboundedStub, x0), x1)
		b.f(`<line class="unbounded" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#222" stroke-width="1.2" stroke-dasharray="2 2"/>`,
			num(end.at), num(y), num(tip), num(y))
		b.f(`<path class="unbounded" d="M%s %sl%s -3v6z" fill="#222"/>`, num(tip), num(y), num(-end.dir*5))
	}
	b.f("</g>")
}

// intervalTitle is a whisker's tooltip.
func intervalTitle(what string, iv *verdict.PercentileInterval) string {
	return fmt.Sprintf("%s p%d %s ms, 95 %% CI %s (n=%d)", what, iv.Percent, fmtMS(&iv.Point), intervalText(iv), iv.N)
}
