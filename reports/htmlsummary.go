package reports

import (
	"fmt"
	"html"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// evidenceLink is one file of a row's evidence the HTML report links to.
type evidenceLink struct {
	Label string
	Path  string // relative to the row's evidence directory, slash-separated
	Group string // result, logs, aiperf, joined
}

// evidenceLinks are the files linked per row, in this order, when present.
var evidenceLinks = []evidenceLink{
	{"result.json", ResultFile, "result"},
	{"server.log", "server.log", "logs"},
	{"correctness.log", "correctness.log", "logs"},
	{"native.log", "native.log", "logs"},
	{"aiperf.stderr.log", "aiperf/aiperf.stderr.log", "logs"},
	{"summary", "aiperf/profile_export_aiperf.json", "aiperf"},
	{"records", "aiperf/profile_export.jsonl", "aiperf"},
	{"raw", "aiperf/profile_export_raw.jsonl", "aiperf"},
	{"joined.jsonl", JoinedFile, "joined"},
	{"mismatches.jsonl", MismatchesFile, "joined"},
}

// presentEvidence lists which of evidenceLinks exist (regular files) in
// dir, for the HTML report's links.
func presentEvidence(dir string) []evidenceLink {
	var out []evidenceLink
	for _, l := range evidenceLinks {
		if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(l.Path))); err == nil && fi.Mode().IsRegular() {
			out = append(out, l)
		}
	}
	return out
}

// evidenceHref is the relative URL of a row's evidence file: from
// r.LinkDir when it is set (the directory the page is written to), else
// from the row's group directory (where `run` writes results.html), so
// the page works from the evidence folder or an archive of it.
func evidenceHref(r *GroupReport, row *Row, file string) string {
	rel := row.Profile + "/" + file
	if r.LinkDir != "" && row.dir != "" {
		base, err1 := filepath.Abs(r.LinkDir)
		target, err2 := filepath.Abs(filepath.Join(row.dir, filepath.FromSlash(file)))
		if err1 == nil && err2 == nil {
			if p, err := filepath.Rel(base, target); err == nil {
				rel = filepath.ToSlash(p)
			}
		}
	}
	parts := strings.Split(rel, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// summaryHeader is the HTML report's compact results table: what people
// compare at a glance; the rest of a row is on its card.
var summaryHeader = []string{"profile", "verdict", "correctness", "matched", "HTTP p50/p95 ms", "Task p50/p95 ms", "images/s", "GPU / hardware", "evidence"}

// rowSection is one of the HTML report's tables: normal profiles, which
// count as models; variants; partial and excluded profiles.
type rowSection struct {
	id, title string
	rows      []Row
}

// rowSections splits the rows into the report's tables, failures first in
// each: normal profiles in scope, then variants, then partial profiles and
// every excluded profile (neither is a model in scope). Empty tables are
// left out.
func rowSections(rows []Row) []rowSection {
	secs := []rowSection{
		{id: "normal", title: "Normal profiles (counted as models)"},
		{id: "variant", title: "Variants (listed, not counted)"},
		{id: "other", title: "Partial and excluded profiles (listed, not counted)"},
	}
	for _, row := range failureFirst(rows) {
		i := 2
		switch {
		case row.Status == StatusExcluded:
		case row.Kind == verdict.KindNormal:
			i = 0
		case row.Kind == verdict.KindVariant:
			i = 1
		}
		secs[i].rows = append(secs[i].rows, row)
	}
	return slices.DeleteFunc(secs, func(s rowSection) bool { return len(s.rows) == 0 })
}

func writeSummaryTable(b *strings.Builder, r *GroupReport, sec rowSection) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("<div class=\"scroll\"><table class=\"results\" id=\"results-%s\">\n<thead><tr>", sec.id)
	for _, h := range summaryHeader {
		p("<th>%s</th>", e(h))
	}
	p("</tr></thead>\n<tbody>\n")
	for i := range sec.rows {
		row := &sec.rows[i]
		counted := "counted-yes"
		if !row.Counted || row.Status == StatusExcluded {
			counted = "counted-no" // greyed: not a model in scope
		}
		p("<tr class=\"%s\" data-profile=\"%s\" data-status=\"%s\">", counted, e(row.Profile), e(row.Status))
		kind := ""
		if row.Kind != "" && row.Kind != "normal" {
			kind = "<span class=\"kind\">" + e(row.Kind) + "</span>"
		}
		p("<th scope=\"row\" class=\"profile\"><a href=\"#%s\">%s</a>%s</th>", e(anchor(row.Profile)), e(row.Profile), kind)
		p("<td class=\"verdict v-%s\">%s</td>", e(row.Verdict), verdictHTML(row))
		cells := summaryCells(row)
		for j, c := range cells {
			class := "num"
			if j == 0 || j == len(cells)-1 {
				class = "text"
			}
			p("<td class=\"%s\">%s</td>", class, c)
		}
		p("<td class=\"links\">%s</td>", evidenceCell(r, row))
		p("</tr>\n")
	}
	p("</tbody>\n</table></div>\n")
}

// maxReasonRunes caps the words of the first reason in a verdict cell; the
// whole reason is on the row's card.
const maxReasonRunes = 90

// verdictHTML is the results table's verdict cell: the verdict and, for a
// row that is not qualified, its first (most severe) reason — code and
// message, cut to maxReasonRunes — and how many more there are.
func verdictHTML(row *Row) string {
	e := html.EscapeString
	out := e(verdictCell(row))
	r := row.Result
	if r == nil || len(r.Reasons) == 0 || r.Verdict == verdict.VerdictQualified || r.Verdict == verdict.VerdictExcluded {
		return out
	}
	first := r.Reasons[0]
	out += fmt.Sprintf("<span class=\"why\"><code>%s</code> %s</span>", e(string(first.Code)), breakable(clipWords(first.Message, maxReasonRunes)))
	if more := len(r.Reasons) - 1; more > 0 {
		out += fmt.Sprintf(" <span class=\"more\">+%d more %s</span>", more, text.Plural(more, "reason", "reasons"))
	}
	return out
}

// clipWords cuts s to at most n runes at a space, with "…".
func clipWords(s string, n int) string {
	s = text.OneLine(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	cut := string(r[:n])
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}

// summaryCells are the cells between verdict and evidence, as HTML.
func summaryCells(row *Row) []string {
	e := html.EscapeString
	r := row.Result
	if r == nil || !r.Measured() {
		hw := Missing
		if r != nil {
			hw = hardwareCell(r.Provenance)
		}
		return []string{Missing, Missing, Missing, Missing, Missing, e(hw)}
	}
	var http, task *Delta
	if row.Baseline != nil {
		http, task = row.Baseline.HTTPP50, row.Baseline.TaskP50
	}
	return []string{
		breakable(correctnessCell(r.Correctness)), matchedCell(r),
		e(p50Cell(r.LatencyMS.HTTP, http)) + nCell(r, r.LatencyMS.HTTP) + intervalCell(r.LatencyMS.HTTP),
		e(taskCell(r.LatencyMS, task)) + nCell(r, r.LatencyMS.Task) + intervalCell(r.LatencyMS.Task),
		e(fmtRate(r.ImagesPerSec)) + rateNCell(r) + rateCell(r), e(hardwareCell(r.Provenance)),
	}
}

// setSize is the size of a row's set — its measured requests whose answers
// matched, the set its latency percentiles are over
// (verdict.LatencySetMeasuredMatched) — and the full measured count (the
// workload's measured requests).
func setSize(r *verdict.Result) (n, full int) {
	m := r.RequestsByPhase[verdict.PhaseMeasured]
	full = m.Expected
	if full == 0 {
		full = r.Workload.Measured
	}
	return m.Matched, full
}

// inLatencySet reports whether a request is in its row's set.
func inLatencySet(l verdict.JoinedLine) bool {
	return l.Phase == verdict.PhaseMeasured && l.Status == verdict.JoinMatched
}

// nSuffix is " (n=46 of 50)" when the row's set is not every measured
// request, else "".
func nSuffix(r *verdict.Result) string {
	if n, full := setSize(r); n != full {
		return fmt.Sprintf(" (n=%d of %d)", n, full)
	}
	return ""
}

// nCell is nSuffix as a note in the cell of a series' figures (none
// where the figures are withheld).
func nCell(r *verdict.Result, p verdict.Percentiles) string {
	if n, full := setSize(r); n != full && (p.P50 != nil || p.P95 != nil) {
		return fmt.Sprintf(" <span class=\"n\">n=%d of %d</span>", n, full)
	}
	return ""
}

// rateNCell says over how many requests images/s is when AIPerf did not
// send every measured request.
func rateNCell(r *verdict.Result) string {
	m := r.RequestsByPhase[verdict.PhaseMeasured]
	if _, full := setSize(r); m.Sent != full && r.ImagesPerSec != nil {
		return fmt.Sprintf(" <span class=\"n\">%d of %d sent</span>", m.Sent, full)
	}
	return ""
}

// setSentence states a row's set on its card.
func setSentence(r *verdict.Result) string {
	n, full := setSize(r)
	if n == 0 {
		return fmt.Sprintf("No latency figure: none of the %d measured requests has matched answers (the set every latency figure of a row covers).", full)
	}
	set := fmt.Sprintf("all %d measured requests, every answer matched", n)
	if n != full {
		set = fmt.Sprintf("the %d of %d measured requests whose answers matched (n=%d)", n, full, n)
	}
	return "Every latency figure and plot of this row covers one set: " + set + ". Images/s is AIPerf's request throughput over the " +
		fmt.Sprint(r.RequestsByPhase[verdict.PhaseMeasured].Sent) + " measured requests sent (a rate over the run, not a figure per request)."
}

// matchedCell is the measured requests that matched of those expected,
// and the warmup's when not every warmup request matched.
func matchedCell(r *verdict.Result) string {
	n, full := setSize(r)
	s := fmt.Sprintf("%d/%d", n, full)
	if w := r.RequestsByPhase[verdict.PhaseWarmup]; w.Sent > 0 && w.Matched != w.Expected {
		s += fmt.Sprintf(" <span class=\"n\">warmup %d/%d</span>", w.Matched, w.Expected)
	}
	return s
}

// hardwareCell is the GPUs a row ran on (count × name, driver), its
// hardware scope, or "CPU" (one spelling, whatever the scope's) when it
// ran on CPU, with the host where it is not masked.
func hardwareCell(p verdict.Provenance) string {
	if len(p.GPUs) > 0 {
		s := gpusCell(p)
		if d := gpuField(p.GPUs, func(g verdict.GPU) string { return g.Driver }); len(d) == 1 && d[0] != "" {
			s += " · driver " + d[0]
		}
		return s
	}
	if p.HardwareScope != "" && !strings.EqualFold(p.HardwareScope, "cpu") {
		return p.HardwareScope
	}
	if p.Host != "" && p.Host != verdict.MaskHost {
		return "CPU (" + p.Host + ")"
	}
	if p.Host == "" && p.HardwareScope == "" {
		return Missing
	}
	return "CPU" // published: the host is not named
}

func evidenceCell(r *GroupReport, row *Row) string {
	if len(row.files) == 0 {
		return Missing
	}
	e := html.EscapeString
	var parts []string
	group := ""
	for _, l := range row.files {
		s := fmt.Sprintf("<a class=\"ev ev-%s\" href=\"%s\">%s</a>", e(l.Group), e(evidenceHref(r, row, l.Path)), e(l.Label))
		if l.Group != group && group != "" {
			s = "<br>" + s
		}
		group = l.Group
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// Group chart geometry.
const (
	chartLabelW = 190.0
	chartRowH   = 34.0
	chartTop    = 34.0
	chartBottom = 34.0
	latChartW   = 780.0
	rateChartW  = 420.0
)

// chartRow is one profile's measured figures, over its set (n of full).
type chartRow struct {
	profile      string
	n, full      int
	http, task   verdict.Percentiles
	imagesPerSec *float64
	rate         *verdict.RateInterval
}

func chartRows(rows []Row) []chartRow {
	var out []chartRow
	for i := range rows {
		r := rows[i].Result
		if r == nil || !r.Measured() {
			continue
		}
		n, full := setSize(r)
		out = append(out, chartRow{rows[i].Profile, n, full, r.LatencyMS.HTTP, r.LatencyMS.Task, r.ImagesPerSec, r.ImagesPerSecInterval})
	}
	return out
}

// The group latency chart's bars: p50 solid, p50 to p95 light (the
// legend's swatches are drawn the same way).
const p95Opacity = "0.35"

// groupCharts draws the group's profiles side by side: HTTP and Task p50
// (solid) to p95 (light) per profile, each with its 95 % interval as a
// whisker, and images/s with its own. Inline SVG, no script.
func groupCharts(rows []Row) string {
	cr := chartRows(rows)
	if len(cr) == 0 {
		return ""
	}
	var b svgBuf
	b.f("<div class=\"plots group-charts\">\n<figure>")
	latencyChart(&b, cr)
	b.f("</svg><figcaption>HTTP (client) and Task (native call) latency per profile over its set, the measured requests whose answers matched (n where that is not every measured request): solid to p50, light from p50 to p95; a whisker is a figure's 95 %% interval (an arrow: unbounded at this n).</figcaption></figure>\n<figure>")
	rateChart(&b, cr)
	b.f("</svg><figcaption>Images per second (AIPerf's request throughput over the measured requests sent, one image a request); a whisker is the 95 %% interval estimated from the requests' cycles.</figcaption></figure>\n</div>\n")
	return b.String()
}

// latencyTop is the largest figure or bounded interval end of the rows.
func latencyTop(cr []chartRow) float64 {
	top := 0.0
	for _, c := range cr {
		for _, s := range []verdict.Percentiles{c.http, c.task} {
			for _, v := range []*float64{s.P50, s.P95} {
				if v != nil {
					top = max(top, *v)
				}
			}
			for _, pct := range []int{50, 95} {
				if iv := s.Interval(pct); iv != nil && iv.Upper != nil {
					top = max(top, *iv.Upper)
				}
			}
		}
	}
	return top
}

// latencyChart draws the p50 and p95 bars of every profile, each with
// its interval's whisker (the caller closes the svg).
func latencyChart(b *svgBuf, cr []chartRow) {
	h := chartTop + chartRowH*float64(len(cr)) + chartBottom
	top, step := niceCeil(latencyTop(cr))
	openChart(b, "chart-latency", "HTTP and Task p50/p95 per profile", latChartW, h)
	xAxis(b, latChartW, h, top, step, "ms")
	w := latChartW - chartLabelW - 30
	x := func(v float64) float64 { return chartLabelW + v/top*w }
	whiskers := false
	for i, c := range cr {
		y := chartTop + chartRowH*float64(i)
		rowLabel(b, y, c)
		bar := func(dy float64, class, color string, s verdict.Percentiles) {
			if s.P95 != nil {
				b.f(`<rect class="bar p95 %s" x="%s" y="%s" width="%s" height="11" fill="%s" fill-opacity="%s"><title>%s %s p95 %s ms</title></rect>`,
					class, num(chartLabelW), num(y+dy), num(*s.P95/top*w), color, p95Opacity, html.EscapeString(c.profile), class, fmtMS(s.P95))
			}
			if s.P50 != nil {
				b.f(`<rect class="bar p50 %s" x="%s" y="%s" width="%s" height="11" fill="%s"><title>%s %s p50 %s ms</title></rect>`,
					class, num(chartLabelW), num(y+dy), num(*s.P50/top*w), color, html.EscapeString(c.profile), class, fmtMS(s.P50))
			}
			for k, pct := range []int{50, 95} {
				if iv := s.Interval(pct); iv != nil {
					whisker(b, fmt.Sprintf("p%d %s", pct, class), y+dy+3.5+4*float64(k), chartLabelW, chartLabelW+w, x, iv.Point, iv.Lower, iv.Upper,
						c.profile+" "+intervalTitle(class, iv))
					whiskers = true
				}
			}
			b.f("\n")
		}
		bar(5, "http", colorHTTP, c.http)
		bar(18, "task", colorTask, c.task)
	}
	items := []legendItem{
		{"HTTP p50", colorHTTP, "http-p50", "", ""}, {"to p95", colorHTTP, "http-p95", p95Opacity, ""},
		{"Task p50", colorTask, "task-p50", "", ""}, {"to p95", colorTask, "task-p95", p95Opacity, ""},
	}
	if whiskers {
		items = append(items, legendItem{"95 % CI", "#222", "ci", "", "whisker"})
	}
	legendAt(b, chartLabelW, items)
}

// rateChart draws every profile's images/s, with its interval's whisker
// (the caller closes the svg).
func rateChart(b *svgBuf, cr []chartRow) {
	h := chartTop + chartRowH*float64(len(cr)) + chartBottom
	maxRate := 0.0
	for _, c := range cr {
		if c.imagesPerSec != nil {
			maxRate = max(maxRate, *c.imagesPerSec)
		}
		if c.rate != nil && c.rate.Upper != nil {
			maxRate = max(maxRate, *c.rate.Upper)
		}
	}
	top, step := niceCeil(maxRate)
	openChart(b, "chart-throughput", "images per second per profile", rateChartW, h)
	xAxis(b, rateChartW, h, top, step, "images/s")
	w := rateChartW - chartLabelW - 30
	for i, c := range cr {
		y := chartTop + chartRowH*float64(i)
		rowLabel(b, y, chartRow{profile: c.profile})
		if c.imagesPerSec != nil {
			b.f(`<rect class="bar rate" x="%s" y="%s" width="%s" height="16" fill="#5b8c3a"><title>%s %s images/s</title></rect>`,
				num(chartLabelW), num(y+8), num(*c.imagesPerSec/top*w), html.EscapeString(c.profile), fmtRate(c.imagesPerSec))
		}
		if iv := c.rate; iv != nil {
			lo := iv.Lower
			whisker(b, "rate", y+16, chartLabelW, chartLabelW+w, func(v float64) float64 { return chartLabelW + v/top*w }, iv.Point, &lo, iv.Upper,
				fmt.Sprintf("%s images/s %s, 95 %% CI %s (n=%d)", c.profile, fmtRate(&iv.Point), rateIntervalText(iv), iv.N))
		}
		b.f("\n")
	}
}

func openChart(b *svgBuf, class, label string, w, h float64) {
	b.f(`<svg class="plot %s" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="%s">`,
		class, num(w), num(h), num(w), num(h), html.EscapeString(label))
	b.f("\n")
}

func xAxis(b *svgBuf, w, h, top, step float64, label string) {
	inner := w - chartLabelW - 30
	for k := 0; float64(k)*step <= top+step/2; k++ {
		v := float64(k) * step
		x := chartLabelW + v/top*inner
		b.f(`<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd" stroke-width="1"/>`, num(x), num(chartTop-4), num(x), num(h-chartBottom+2))
		b.f(`<text class="tick" x="%s" y="%s" text-anchor="middle" font-size="11" fill="#555">%s</text>`, num(x), num(h-chartBottom+16), fmtTick(v, step))
	}
	b.f(`<text class="axis-label" x="%s" y="%s" text-anchor="middle" font-size="11" fill="#333">%s</text>`, num(chartLabelW+inner/2), num(h-4), html.EscapeString(label))
	b.f("\n")
}

// rowLabel is a chart row's profile (cut to 26 characters; the whole id
// is its tooltip) and, when its set is not every measured request, n.
func rowLabel(b *svgBuf, y float64, c chartRow) {
	label := c.profile
	if r := []rune(label); len(r) > 26 {
		label = string(r[:25]) + "…"
	}
	n, base := "", y+chartRowH/2+3
	if c.n != c.full {
		n, base = fmt.Sprintf(`<tspan class="n" x="%s" dy="12" font-size="10.5" fill="#666">n=%d of %d</tspan>`, num(chartLabelW-8), c.n, c.full), base-5
	}
	b.f(`<text class="row-label" x="%s" y="%s" text-anchor="end" font-size="12" fill="#222"><title>%s</title>%s%s</text>`,
		num(chartLabelW-8), num(base), html.EscapeString(c.profile), html.EscapeString(label), n)
}

// countsMeta is the request accounting shown on a row's card (the
// compact table leaves it out).
func countsMeta(row *Row) string {
	r := row.Result
	if r == nil || !r.Measured() {
		return ""
	}
	return strings.Join([]string{
		"warmup " + phaseCell(r, verdict.PhaseWarmup), "measured " + phaseCell(r, verdict.PhaseMeasured),
		fmt.Sprintf("matched %d/%d", r.Requests.Matched, r.Requests.Expected),
		"errors " + errorsCell(r.Requests), "missing joins " + missingCell(r.Requests),
		"output " + outputCell(r),
	}, " · ")
}
