package reports

import (
	"fmt"
	"html"
	"net/url"
	"os"
	"path/filepath"
	"strings"

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

func writeSummaryTable(b *strings.Builder, r *GroupReport, rows []Row) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("<div class=\"scroll\"><table class=\"results\" id=\"results\">\n<thead><tr>")
	for _, h := range summaryHeader {
		p("<th>%s</th>", e(h))
	}
	p("</tr></thead>\n<tbody>\n")
	for i := range rows {
		row := &rows[i]
		counted := "counted-yes"
		if !row.Counted {
			counted = "counted-no"
		}
		p("<tr class=\"%s\" data-profile=\"%s\" data-status=\"%s\">", counted, e(row.Profile), e(row.Status))
		kind := ""
		if row.Kind != "" && row.Kind != "normal" {
			kind = "<span class=\"kind\">" + e(row.Kind) + "</span>"
		}
		p("<th scope=\"row\" class=\"profile\"><a href=\"#%s\">%s</a>%s</th>", e(anchor(row.Profile)), e(row.Profile), kind)
		p("<td class=\"verdict v-%s\">%s</td>", e(row.Verdict), e(verdictCell(row)))
		cells := summaryCells(row)
		for j, c := range cells {
			class := "num"
			if j == 0 || j == len(cells)-1 {
				class = "text"
			}
			p("<td class=\"%s\">%s</td>", class, e(c))
		}
		p("<td class=\"links\">%s</td>", evidenceCell(r, row))
		p("</tr>\n")
	}
	p("</tbody>\n</table></div>\n")
}

// summaryCells are the cells between verdict and evidence.
func summaryCells(row *Row) []string {
	r := row.Result
	if r == nil || !r.Measured() {
		hw := Missing
		if r != nil {
			hw = hardwareCell(r.Provenance)
		}
		return []string{Missing, Missing, Missing, Missing, Missing, hw}
	}
	var http, task *Delta
	if row.Baseline != nil {
		http, task = row.Baseline.HTTPP50, row.Baseline.TaskP50
	}
	return []string{
		correctnessCell(r.Correctness),
		fmt.Sprintf("%d/%d", r.Requests.Matched, r.Requests.Expected),
		p50Cell(r.LatencyMS.HTTP, http), taskCell(r.LatencyMS, task),
		fmtRate(r.ImagesPerSec), hardwareCell(r.Provenance),
	}
}

// hardwareCell is the GPUs a row ran on (count × name, driver), its
// hardware scope, or the host when it ran on CPU.
func hardwareCell(p verdict.Provenance) string {
	if len(p.GPUs) > 0 {
		s := gpusCell(p)
		if d := gpuField(p.GPUs, func(g verdict.GPU) string { return g.Driver }); len(d) == 1 && d[0] != "" {
			s += " · driver " + d[0]
		}
		return s
	}
	if p.HardwareScope != "" {
		return p.HardwareScope
	}
	if p.Host == verdict.MaskHost {
		return "CPU" // published: the host is not named
	}
	if p.Host != "" {
		return "CPU (" + p.Host + ")"
	}
	return Missing
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

// chartRow is one profile's measured figures.
type chartRow struct {
	profile          string
	httpP50, httpP95 *float64
	taskP50, taskP95 *float64
	imagesPerSec     *float64
}

func chartRows(rows []Row) []chartRow {
	var out []chartRow
	for i := range rows {
		r := rows[i].Result
		if r == nil || !r.Measured() {
			continue
		}
		l := r.LatencyMS
		out = append(out, chartRow{rows[i].Profile, l.HTTP.P50, l.HTTP.P95, l.Task.P50, l.Task.P95, r.ImagesPerSec})
	}
	return out
}

// groupCharts draws the group's profiles side by side: HTTP and Task p50
// (solid) to p95 (light) per profile, and images/s. Inline SVG, no script.
func groupCharts(rows []Row) string {
	cr := chartRows(rows)
	if len(cr) == 0 {
		return ""
	}
	h := chartTop + chartRowH*float64(len(cr)) + chartBottom
	var b svgBuf
	b.f("<div class=\"plots group-charts\">\n<figure>")
	maxLat := 0.0
	for _, c := range cr {
		for _, v := range []*float64{c.httpP50, c.httpP95, c.taskP50, c.taskP95} {
			if v != nil {
				maxLat = max(maxLat, *v)
			}
		}
	}
	top, step := niceCeil(maxLat)
	openChart(&b, "chart-latency", "HTTP and Task p50/p95 per profile", latChartW, h)
	xAxis(&b, latChartW, h, top, step, "ms")
	for i, c := range cr {
		y := chartTop + chartRowH*float64(i)
		rowLabel(&b, y, c.profile)
		bar := func(dy float64, class, color string, p50, p95 *float64) {
			x0 := chartLabelW
			w := latChartW - chartLabelW - 30
			if p95 != nil {
				b.f(`<rect class="bar p95 %s" x="%s" y="%s" width="%s" height="11" fill="%s" fill-opacity="0.35"><title>%s %s p95 %s ms</title></rect>`,
					class, num(x0), num(y+dy), num(*p95/top*w), color, html.EscapeString(c.profile), class, fmtMS(p95))
			}
			if p50 != nil {
				b.f(`<rect class="bar p50 %s" x="%s" y="%s" width="%s" height="11" fill="%s"><title>%s %s p50 %s ms</title></rect>`,
					class, num(x0), num(y+dy), num(*p50/top*w), color, html.EscapeString(c.profile), class, fmtMS(p50))
			}
			b.f("\n")
		}
		bar(5, "http", colorHTTP, c.httpP50, c.httpP95)
		bar(18, "task", colorTask, c.taskP50, c.taskP95)
	}
	chartLegend(&b, [][2]string{{"HTTP p50", colorHTTP}, {"Task p50", colorTask}, {"to p95 (light)", "#bbbbbb"}})
	b.f("</svg><figcaption>HTTP (client) and Task (native call) latency of the measured requests per profile: solid to p50, light to p95.</figcaption></figure>\n<figure>")

	maxRate := 0.0
	for _, c := range cr {
		if c.imagesPerSec != nil {
			maxRate = max(maxRate, *c.imagesPerSec)
		}
	}
	top, step = niceCeil(maxRate)
	openChart(&b, "chart-throughput", "images per second per profile", rateChartW, h)
	xAxis(&b, rateChartW, h, top, step, "images/s")
	for i, c := range cr {
		y := chartTop + chartRowH*float64(i)
		rowLabel(&b, y, c.profile)
		if c.imagesPerSec != nil {
			w := rateChartW - chartLabelW - 30
			b.f(`<rect class="bar rate" x="%s" y="%s" width="%s" height="16" fill="#5b8c3a"><title>%s %s images/s</title></rect>`,
				num(chartLabelW), num(y+8), num(*c.imagesPerSec/top*w), html.EscapeString(c.profile), fmtRate(c.imagesPerSec))
			b.f("\n")
		}
	}
	b.f("</svg><figcaption>Images per second (AIPerf's request throughput, one image a request).</figcaption></figure>\n</div>\n")
	return b.String()
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

func rowLabel(b *svgBuf, y float64, profile string) {
	label := profile
	if r := []rune(label); len(r) > 26 {
		label = string(r[:25]) + "…"
	}
	b.f(`<text class="row-label" x="%s" y="%s" text-anchor="end" font-size="12" fill="#222"><title>%s</title>%s</text>`,
		num(chartLabelW-8), num(y+chartRowH/2+3), html.EscapeString(profile), html.EscapeString(label))
}

func chartLegend(b *svgBuf, items [][2]string) {
	x := chartLabelW
	for _, it := range items {
		b.f(`<rect x="%s" y="8" width="12" height="12" fill="%s"/><text x="%s" y="18" font-size="12" fill="#333">%s</text>`,
			num(x), it[1], num(x+16), html.EscapeString(it[0]))
		x += 16 + 7*float64(len([]rune(it[0]))) + 18
	}
	b.f("\n")
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
