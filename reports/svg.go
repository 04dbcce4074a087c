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

func legend(b *svgBuf, items [][2]string) {
	x := marginL + 4
	for _, it := range items {
		b.f(`<rect x="%s" y="8" width="12" height="12" fill="%s"/><text x="%s" y="18" font-size="12" fill="#333">%s</text>`,
			num(x), it[1], num(x+16), html.EscapeString(it[0]))
		x += 16 + 7*float64(len(it[0])) + 18
	}
	b.f("\n")
}

// timelineSVG plots every request's HTTP and Task time in start order, the
// warmup requests shaded and the requests that did not match marked.
func timelineSVG(profile string, lines []verdict.JoinedLine) string {
	reqs := orderedRequests(lines)
	n := len(reqs)
	maxV := 0.0
	nHTTP, nTask := 0, 0
	for _, l := range reqs {
		if l.HTTPMS != nil {
			maxV = max(maxV, *l.HTTPMS)
			nHTTP++
		}
		if l.TaskMS != nil {
			maxV = max(maxV, *l.TaskMS)
			nTask++
		}
	}
	top, step := niceCeil(maxV)
	xOf := func(i int) float64 {
		if n <= 1 {
			return marginL + innerW/2
		}
		return marginL + float64(i)/float64(n-1)*innerW
	}
	yOf := func(v float64) float64 { return marginT + innerH - v/top*innerH }

	var b svgBuf
	svgOpen(&b, "plot-timeline", "request latency over the run: "+profile,
		fmt.Sprintf(` data-requests="%d" data-http-points="%d" data-task-points="%d"`, n, nHTTP, nTask))
	b.f("<title>Request latency over the run (%s)</title>\n", html.EscapeString(profile))
	// Warmup band: the contiguous span of warmup requests at the start.
	first, last := -1, -1
	for i, l := range reqs {
		if l.Phase == verdict.PhaseWarmup {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first >= 0 {
		half := 0.0
		if n > 1 {
			half = innerW / float64(n-1) / 2
		}
		x0, x1 := max(xOf(first)-half, marginL), min(xOf(last)+half, marginL+innerW)
		b.f(`<rect class="warmup-band" x="%s" y="%s" width="%s" height="%s" fill="%s"/>`, num(x0), num(marginT), num(x1-x0), num(innerH), colorW)
		b.f(`<text x="%s" y="%s" font-size="11" fill="#777">warmup</text>`, num(x0+3), num(marginT+12))
		b.f("\n")
	}
	yAxis(&b, top, step, "ms")
	// x ticks: first, quarters, last (1-based request numbers).
	var ticks []int
	for _, q := range []int{0, 1, 2, 3, 4} {
		i := q * (n - 1) / 4
		if n > 0 && (len(ticks) == 0 || ticks[len(ticks)-1] != i) {
			ticks = append(ticks, i)
		}
	}
	for _, i := range ticks {
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="middle" font-size="11" fill="#555">%d</text>`, num(xOf(i)), num(marginT+innerH+15), i+1)
	}
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle" font-size="11" fill="#333">request, in start order</text>`,
		num(marginL+innerW/2), num(plotH-6))
	b.f("\n")
	series := func(class, color string, val func(verdict.JoinedLine) *float64) {
		var pts []string
		for i, l := range reqs {
			if v := val(l); v != nil {
				pts = append(pts, num(xOf(i))+","+num(yOf(*v)))
			}
		}
		if len(pts) > 1 {
			b.f(`<polyline class="line %s" fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, class, color, strings.Join(pts, " "))
			b.f("\n")
		}
		if n > maxMarkedPoints {
			return
		}
		for i, l := range reqs {
			if v := val(l); v != nil {
				b.f(`<circle class="pt %s" cx="%s" cy="%s" r="2.5" fill="%s"><title>%s (%s, %s): %s %s ms</title></circle>`,
					class, num(xOf(i)), num(yOf(*v)), color, html.EscapeString(l.RequestID), l.Phase, l.Status, class, fmtMS(v))
				b.f("\n")
			}
		}
	}
	series("http", colorHTTP, func(l verdict.JoinedLine) *float64 { return l.HTTPMS })
	series("task", colorTask, func(l verdict.JoinedLine) *float64 { return l.TaskMS })
	bad := 0
	for i, l := range reqs {
		if l.Status == verdict.JoinMatched {
			continue
		}
		bad++
		x, y := xOf(i), marginT+innerH
		b.f(`<path class="mark-bad" d="M%s %sl-5 9h10z" fill="%s"><title>%s (%s): %s</title></path>`,
			num(x), num(y-9), colorBad, html.EscapeString(l.RequestID), l.Phase, l.Status)
		b.f("\n")
	}
	items := [][2]string{{"HTTP", colorHTTP}, {"Task", colorTask}}
	if bad > 0 {
		items = append(items, [2]string{"not matched", colorBad})
	}
	legend(&b, items)
	b.f("</svg>")
	return b.String()
}

// distributionSVG draws the measured requests' HTTP and Task times as
// empirical cumulative distributions on one axis, p50 and p95 marked.
func distributionSVG(profile string, lines []verdict.JoinedLine) string {
	var httpV, taskV []float64
	for _, l := range lines {
		if l.Phase != verdict.PhaseMeasured {
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
	lo, hi, step := niceRange(minV, maxV)
	xOf := func(v float64) float64 { return marginL + (v-lo)/(hi-lo)*innerW }
	yOf := func(f float64) float64 { return marginT + innerH - f*innerH }

	var b svgBuf
	svgOpen(&b, "plot-distribution", "latency distribution of measured requests: "+profile,
		fmt.Sprintf(` data-http-points="%d" data-task-points="%d"`, len(httpV), len(taskV)))
	b.f("<title>Latency distribution, measured requests (%s)</title>\n", html.EscapeString(profile))
	for _, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
		y := yOf(q)
		b.f(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd" stroke-width="1"/>`, num(marginL), num(y), num(marginL+innerW), num(y))
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="end" font-size="11" fill="#555">%s</text>`, num(marginL-6), num(y+4), strconv.FormatFloat(q, 'f', -1, 64))
		b.f("\n")
	}
	for _, q := range []float64{0.5, 0.95} {
		y := yOf(q)
		b.f(`<line class="quantile" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#999" stroke-width="1" stroke-dasharray="4 3"/>`, num(marginL), num(y), num(marginL+innerW), num(y))
		b.f(`<text class="tick" x="%s" y="%s" font-size="11" fill="#555">p%d</text>`, num(marginL+innerW+4), num(y+4), int(q*100))
		b.f("\n")
	}
	b.f(`<text class="axis-label" x="14" y="%s" font-size="11" fill="#333" transform="rotate(-90 14 %s)" text-anchor="middle">fraction of requests ≤ x</text>`,
		num(marginT+innerH/2), num(marginT+innerH/2))
	for k := 0; lo+float64(k)*step <= hi+step/2; k++ {
		v := lo + float64(k)*step
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="middle" font-size="11" fill="#555">%s</text>`, num(xOf(v)), num(marginT+innerH+15), fmtTick(v, step))
	}
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle" font-size="11" fill="#333">ms</text>`, num(marginL+innerW/2), num(plotH-6))
	b.f("\n")
	ecdf := func(class, color string, vals []float64) {
		if len(vals) == 0 {
			return
		}
		var d strings.Builder
		fmt.Fprintf(&d, "M%s %s", num(xOf(vals[0])), num(yOf(0)))
		for i, v := range vals {
			fmt.Fprintf(&d, "V%sH%s", num(yOf(float64(i+1)/float64(len(vals)))), num(xOf(v)))
			if i+1 < len(vals) {
				fmt.Fprintf(&d, "H%s", num(xOf(vals[i+1])))
			}
		}
		b.f(`<path class="ecdf %s" d="%s" fill="none" stroke="%s" stroke-width="1.8"/>`, class, d.String(), color)
		b.f("\n")
		for _, q := range []float64{0.5, 0.95} {
			v := nearestRank(vals, q)
			b.f(`<circle class="q %s" cx="%s" cy="%s" r="3.5" fill="%s"><title>%s p%d ≈ %s ms (nearest rank)</title></circle>`,
				class, num(xOf(v)), num(yOf(q)), color, class, int(q*100), strconv.FormatFloat(v, 'f', 2, 64))
		}
		b.f("\n")
	}
	ecdf("http", colorHTTP, httpV)
	ecdf("task", colorTask, taskV)
	legend(&b, [][2]string{{fmt.Sprintf("HTTP (%d)", len(httpV)), colorHTTP}, {fmt.Sprintf("Task (%d)", len(taskV)), colorTask}})
	b.f("</svg>")
	return b.String()
}

// nearestRank is the nearest-rank percentile of sorted values (only for
// the plot's markers; the table shows the result's recorded percentiles).
func nearestRank(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
