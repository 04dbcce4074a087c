package reports

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Plot geometry, in SVG user units.
const (
	plotW, plotH                           = 560.0, 250.0
	marginL, marginR, marginT, marginB     = 56.0, 34.0, 30.0, 40.0
	innerW, innerH                         = plotW - marginL - marginR, plotH - marginT - marginB
	maxMarkedPoints                        = 600 // beyond this only the lines are drawn
	colorHTTP, colorTask, colorBad, colorW = "#1f6fb4", "#d9620b", "#c62828", "#ececec"
)

// num formats an SVG coordinate with one decimal, deterministically.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// niceCeil returns a round upper bound for an axis and its tick step.
func niceCeil(v float64) (top, step float64) {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1, 0.2
	}
	raw := v / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		step = m * mag
		if step >= raw {
			break
		}
	}
	top = math.Ceil(v/step) * step
	return top, step
}

// niceRange returns a round axis [lo, hi] around [min, max] and its step,
// starting at zero when min is within 40% of the span from zero.
func niceRange(minV, maxV float64) (lo, hi, step float64) {
	if maxV <= 0 || minV < 0 || minV > maxV {
		hi, step = niceCeil(maxV)
		return 0, hi, step
	}
	if minV < 0.4*maxV {
		hi, step = niceCeil(maxV)
		return 0, hi, step
	}
	_, step = niceCeil(maxV - minV)
	lo = math.Floor(minV/step) * step
	hi = math.Ceil(maxV/step) * step
	if hi == lo {
		hi = lo + step
	}
	return lo, hi, step
}

func fmtTick(v, step float64) string {
	decimals := 0
	for decimals < 6 && math.Abs(step*math.Pow(10, float64(decimals))-math.Round(step*math.Pow(10, float64(decimals)))) > 1e-9 {
		decimals++
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// orderedRequests sorts joined lines by start time (request id on a tie).
func orderedRequests(lines []verdict.JoinedLine) []verdict.JoinedLine {
	out := slices.Clone(lines)
	slices.SortStableFunc(out, func(a, b verdict.JoinedLine) int {
		return cmp.Or(cmp.Compare(a.StartNS, b.StartNS), cmp.Compare(a.RequestID, b.RequestID))
	})
	return out
}

type svgBuf struct{ strings.Builder }

func (b *svgBuf) f(format string, args ...any) { fmt.Fprintf(&b.Builder, format, args...) }

func svgOpen(b *svgBuf, class, label string, attrs string) {
	b.f(`<svg class="plot %s" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="%s"%s>`,
		class, num(plotW), num(plotH), num(plotW), num(plotH), html.EscapeString(label), attrs)
	b.f("\n")
}

func yAxis(b *svgBuf, top, step float64, label string) {
	for k := 0; float64(k)*step <= top+step/2; k++ {
		v := float64(k) * step
		y := marginT + innerH - v/top*innerH
		b.f(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd" stroke-width="1"/>`, num(marginL), num(y), num(marginL+innerW), num(y))
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="end" font-size="11" fill="#555">%s</text>`, num(marginL-6), num(y+4), fmtTick(v, step))
		b.f("\n")
	}
	b.f(`<text class="axis-label" x="14" y="%s" font-size="11" fill="#333" transform="rotate(-90 14 %s)" text-anchor="middle">%s</text>`,
		num(marginT+innerH/2), num(marginT+innerH/2), html.EscapeString(label))
	b.f("\n")
}

// legendItem is one swatch of a plot's legend: its words, its fill and
// the fill opacity of what it stands for ("" for opaque), the series it
// stands for (data-series: what a reader, or a test, finds it by), and
// its shape: "" a filled square (bars, points, lines), "whisker" a capped
// line (an interval).
type legendItem struct {
	label, color, series, opacity, shape string
}

// legendAt draws a legend from x, each swatch drawn as the marks it
// stands for.
func legendAt(b *svgBuf, x float64, items []legendItem) {
	for _, it := range items {
		if it.shape == "whisker" {
			b.f(`<path class="swatch whisker" data-series="%s" d="M%s 11v6M%s 14h12M%s 11v6" stroke="%s" stroke-width="1.2" fill="none"/>`,
				it.series, num(x), num(x), num(x+12), it.color)
		} else {
			op := ""
			if it.opacity != "" {
				op = ` fill-opacity="` + it.opacity + `"`
			}
			b.f(`<rect class="swatch" data-series="%s" x="%s" y="8" width="12" height="12" fill="%s"%s/>`, it.series, num(x), it.color, op)
		}
		b.f(`<text x="%s" y="18" font-size="12" fill="#333">%s</text>`, num(x+16), html.EscapeString(it.label))
		x += 16 + 7*float64(len([]rune(it.label))) + 18
	}
	b.f("\n")
}

// colorOut fills a timeline's requests outside the row's set.
const colorOut = "#b0b0b0"

// timelineSVG plots every request's HTTP and Task time in start order: the
// row's set (inLatencySet) as lines and coloured points, the requests
// outside it (warmup, not matched) as grey points, the warmup shaded and
// the requests that did not match marked.
func timelineSVG(profile string, lines []verdict.JoinedLine) string {
	t := newTimeline(lines)
	var b svgBuf
	svgOpen(&b, "plot-timeline", "request latency over the run: "+profile,
		fmt.Sprintf(` data-requests="%d" data-set="%d" data-http-points="%d" data-task-points="%d"`, len(t.reqs), t.inSet, t.nHTTP, t.nTask))
	b.f("<title>Request latency over the run (%s)</title>\n", html.EscapeString(profile))
	t.warmupBand(&b)
	yAxis(&b, t.top, t.step, "ms")
	t.xTicks(&b)
	t.series(&b, "http", colorHTTP, func(l verdict.JoinedLine) *float64 { return l.HTTPMS })
	t.series(&b, "task", colorTask, func(l verdict.JoinedLine) *float64 { return l.TaskMS })
	items := []legendItem{{fmt.Sprintf("HTTP (n=%d)", t.nHTTP), colorHTTP, "http", "", ""}, {fmt.Sprintf("Task (n=%d)", t.nTask), colorTask, "task", "", ""}}
	if t.inSet < len(t.reqs) {
		items = append(items, legendItem{"outside the set", colorOut, "out", "", ""})
	}
	if t.badMarks(&b) > 0 {
		items = append(items, legendItem{"not matched", colorBad, "bad", "", ""})
	}
	legendAt(&b, marginL+4, items)
	b.f("</svg>")
	return b.String()
}

// timeline is a timeline plot's requests in start order, its y axis, and
// how many requests and points of each series are in the row's set.
type timeline struct {
	reqs                []verdict.JoinedLine
	top, step           float64
	inSet, nHTTP, nTask int
}

func newTimeline(lines []verdict.JoinedLine) *timeline {
	t := &timeline{reqs: orderedRequests(lines)}
	maxV := 0.0
	for _, l := range t.reqs {
		for _, v := range []*float64{l.HTTPMS, l.TaskMS} {
			if v != nil {
				maxV = max(maxV, *v)
			}
		}
		if inLatencySet(l) {
			t.inSet++
			t.nHTTP += btoi(l.HTTPMS != nil)
			t.nTask += btoi(l.TaskMS != nil)
		}
	}
	t.top, t.step = niceCeil(maxV)
	return t
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (t *timeline) x(i int) float64 {
	if len(t.reqs) <= 1 {
		return marginL + innerW/2
	}
	return marginL + float64(i)/float64(len(t.reqs)-1)*innerW
}

func (t *timeline) y(v float64) float64 { return marginT + innerH - v/t.top*innerH }

// warmupBand shades the contiguous span of warmup requests.
func (t *timeline) warmupBand(b *svgBuf) {
	first, last := -1, -1
	for i, l := range t.reqs {
		if l.Phase == verdict.PhaseWarmup {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return
	}
	half := 0.0
	if n := len(t.reqs); n > 1 {
		half = innerW / float64(n-1) / 2
	}
	x0, x1 := max(t.x(first)-half, marginL), min(t.x(last)+half, marginL+innerW)
	b.f(`<rect class="warmup-band" x="%s" y="%s" width="%s" height="%s" fill="%s"/>`, num(x0), num(marginT), num(x1-x0), num(innerH), colorW)
	b.f(`<text x="%s" y="%s" font-size="11" fill="#777">warmup</text>`, num(x0+3), num(marginT+12))
	b.f("\n")
}

// xTicks labels the first, quarter and last requests (1-based).
func (t *timeline) xTicks(b *svgBuf) {
	n := len(t.reqs)
	var ticks []int
	for _, q := range []int{0, 1, 2, 3, 4} {
		i := q * (n - 1) / 4
		if n > 0 && (len(ticks) == 0 || ticks[len(ticks)-1] != i) {
			ticks = append(ticks, i)
		}
	}
	for _, i := range ticks {
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="middle" font-size="11" fill="#555">%d</text>`, num(t.x(i)), num(marginT+innerH+15), i+1)
	}
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle" font-size="11" fill="#333">request, in start order</text>`,
		num(marginL+innerW/2), num(plotH-6))
	b.f("\n")
}

// series draws one latency series: a line through the set's points, the
// set's points in color, and the other requests' points in grey.
func (t *timeline) series(b *svgBuf, class, color string, val func(verdict.JoinedLine) *float64) {
	var pts []string
	for i, l := range t.reqs {
		if v := val(l); v != nil && inLatencySet(l) {
			pts = append(pts, num(t.x(i))+","+num(t.y(*v)))
		}
	}
	if len(pts) > 1 {
		b.f(`<polyline class="line %s" fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, class, color, strings.Join(pts, " "))
		b.f("\n")
	}
	if len(t.reqs) > maxMarkedPoints {
		return
	}
	for i, l := range t.reqs {
		v := val(l)
		if v == nil {
			continue
		}
		cls, fill := class, color
		if !inLatencySet(l) {
			cls, fill = class+" out", colorOut
		}
		b.f(`<circle class="pt %s" cx="%s" cy="%s" r="2.5" fill="%s"><title>%s (%s, %s): %s %s ms</title></circle>`,
			cls, num(t.x(i)), num(t.y(*v)), fill, html.EscapeString(l.RequestID), html.EscapeString(l.Phase), html.EscapeString(l.Status), class, fmtMS(v))
		b.f("\n")
	}
}

// badMarks marks the requests that did not match; it returns how many.
func (t *timeline) badMarks(b *svgBuf) int {
	bad := 0
	for i, l := range t.reqs {
		if l.Status == verdict.JoinMatched {
			continue
		}
		bad++
		b.f(`<path class="mark-bad" d="M%s %sl-5 9h10z" fill="%s"><title>%s (%s): %s</title></path>`,
			num(t.x(i)), num(marginT+innerH-9), colorBad, html.EscapeString(l.RequestID), html.EscapeString(l.Phase), html.EscapeString(l.Status))
		b.f("\n")
	}
	return bad
}

// distributionSVG draws the HTTP and Task times of the row's set as
// empirical cumulative distributions on one axis, p50 and p95 marked at
// the row's recorded figures with their 95 % intervals as whiskers (at the
// nearest rank, without whiskers, for a row that records none).
func distributionSVG(profile string, lines []verdict.JoinedLine, lat verdict.Latency) string {
	var httpV, taskV []float64
	for _, l := range lines {
		if !inLatencySet(l) {
			continue
		}
		if l.HTTPMS != nil {
			httpV = append(httpV, *l.HTTPMS)
		}
		if l.TaskMS != nil {
			taskV = append(taskV, *l.TaskMS)
		}
	}
	slices.Sort(httpV)
	slices.Sort(taskV)
	minV, maxV := math.Inf(1), 0.0
	for _, vals := range [][]float64{httpV, taskV} {
		if len(vals) > 0 {
			minV, maxV = min(minV, vals[0]), max(maxV, vals[len(vals)-1])
		}
	}
	d := &distPlot{}
	d.lo, d.hi, d.step = niceRange(minV, maxV)
	var b svgBuf
	svgOpen(&b, "plot-distribution", "latency distribution of the measured requests that matched: "+profile,
		fmt.Sprintf(` data-http-points="%d" data-task-points="%d"`, len(httpV), len(taskV)))
	b.f("<title>Latency distribution, measured requests that matched (%s)</title>\n", html.EscapeString(profile))
	d.axes(&b)
	whiskers := d.ecdf(&b, "http", colorHTTP, httpV, lat.HTTP)
	whiskers = d.ecdf(&b, "task", colorTask, taskV, lat.Task) || whiskers
	items := []legendItem{{fmt.Sprintf("HTTP (n=%d)", len(httpV)), colorHTTP, "http", "", ""}, {fmt.Sprintf("Task (n=%d)", len(taskV)), colorTask, "task", "", ""}}
	if whiskers {
		items = append(items, legendItem{"95 % CI", "#222", "ci", "", "whisker"})
	}
	legendAt(&b, marginL+4, items)
	b.f("</svg>")
	return b.String()
}

// distPlot is a distribution plot's x axis: [lo, hi] ms in steps.
type distPlot struct{ lo, hi, step float64 }

func (d *distPlot) x(v float64) float64 { return marginL + (v-d.lo)/(d.hi-d.lo)*innerW }

func (d *distPlot) y(f float64) float64 { return marginT + innerH - f*innerH }

// axes draws the grid, the p50 and p95 guides and both axes.
func (d *distPlot) axes(b *svgBuf) {
	for _, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
		y := d.y(q)
		b.f(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd" stroke-width="1"/>`, num(marginL), num(y), num(marginL+innerW), num(y))
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="end" font-size="11" fill="#555">%s</text>`, num(marginL-6), num(y+4), strconv.FormatFloat(q, 'f', -1, 64))
		b.f("\n")
	}
	for _, q := range []float64{0.5, 0.95} {
		y := d.y(q)
		b.f(`<line class="quantile" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#999" stroke-width="1" stroke-dasharray="4 3"/>`, num(marginL), num(y), num(marginL+innerW), num(y))
		b.f(`<text class="tick" x="%s" y="%s" font-size="11" fill="#555">p%d</text>`, num(marginL+innerW+4), num(y+4), int(q*100))
		b.f("\n")
	}
	b.f(`<text class="axis-label" x="14" y="%s" font-size="11" fill="#333" transform="rotate(-90 14 %s)" text-anchor="middle">fraction of requests ≤ x</text>`,
		num(marginT+innerH/2), num(marginT+innerH/2))
	for k := 0; d.lo+float64(k)*d.step <= d.hi+d.step/2; k++ {
		v := d.lo + float64(k)*d.step
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="middle" font-size="11" fill="#555">%s</text>`, num(d.x(v)), num(marginT+innerH+15), fmtTick(v, d.step))
	}
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle" font-size="11" fill="#333">ms</text>`, num(marginL+innerW/2), num(plotH-6))
	b.f("\n")
}

// ecdf draws one series' empirical distribution and its p50 and p95
// markers; it reports whether it drew an interval's whisker.
func (d *distPlot) ecdf(b *svgBuf, class, color string, vals []float64, s verdict.Percentiles) bool {
	if len(vals) == 0 {
		return false
	}
	var path strings.Builder
	fmt.Fprintf(&path, "M%s %s", num(d.x(vals[0])), num(d.y(0)))
	for i, v := range vals {
		fmt.Fprintf(&path, "V%sH%s", num(d.y(float64(i+1)/float64(len(vals)))), num(d.x(v)))
		if i+1 < len(vals) {
			fmt.Fprintf(&path, "H%s", num(d.x(vals[i+1])))
		}
	}
	b.f(`<path class="ecdf %s" d="%s" fill="none" stroke="%s" stroke-width="1.8"/>`, class, path.String(), color)
	b.f("\n")
	whiskers := false
	for _, pct := range []int{50, 95} {
		q := float64(pct) / 100
		v := nearestRank(vals, q)
		title := fmt.Sprintf("%s p%d ≈ %s ms (nearest rank)", class, pct, fmtMS(&v))
		if iv := s.Interval(pct); iv != nil {
			v, title = iv.Point, intervalTitle(class, iv)
			whisker(b, fmt.Sprintf("p%d %s", pct, class), d.y(q), marginL, marginL+innerW, d.x, iv.Point, iv.Lower, iv.Upper, title)
			whiskers = true
		}
		b.f(`<circle class="q %s" cx="%s" cy="%s" r="3.5" fill="%s"><title>%s</title></circle>`, class, num(d.x(v)), num(d.y(q)), color, html.EscapeString(title))
	}
	b.f("\n")
	return whiskers
}

// nearestRank is the nearest-rank percentile of sorted values (only for
// the plot's markers; the table shows the result's recorded percentiles).
func nearestRank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
