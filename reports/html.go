package reports

import (
	"cmp"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// maxDiffsShown bounds the mismatch diffs printed per checkpoint; the rest
// stay in joined.jsonl.
const maxDiffsShown = 20

// failureRank orders rows failure-first: broken, failed, missing, then the
// rest, qualified last.
func failureRank(status string) int {
	switch status {
	case StatusError:
		return 0
	case StatusInterrupted:
		return 1
	case StatusFailed:
		return 2
	case StatusNotRun:
		return 3
	case StatusPlanned, StatusImplemented, StatusFamilyValidated:
		return 4
	case StatusExcluded:
		return 5
	case StatusQualified:
		return 7
	}
	return 6
}

func failureFirst(rows []Row) []Row {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b Row) int {
		ca, cb := 0, 0
		if !a.Counted {
			ca = 1
		}
		if !b.Counted {
			cb = 1
		}
		return cmp.Or(cmp.Compare(failureRank(a.Status), failureRank(b.Status)), cmp.Compare(ca, cb), cmp.Compare(a.Profile, b.Profile))
	})
	return out
}

// anchor is a row's fragment id.
func anchor(profile string) string {
	return "p-" + strings.Map(func(r rune) rune {
		if r == ' ' || r == '"' || r == '\'' || r == '<' || r == '>' || r == '&' {
			return '_'
		}
		return r
	}, profile)
}

const htmlStyle = `
:root { --ok:#1b7a3a; --bad:#c62828; --warn:#a15c00; --muted:#666; --line:#d8d8d8; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color:#1d1d1d; margin: 24px 32px; max-width: 1500px; overflow-wrap: break-word; word-break: normal; hyphens: manual; }
h1 { font-size: 22px; margin: 0 0 6px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 16px; margin: 0 0 6px; }
h3.section { margin: 16px 0 2px; }
h4 { font-size: 14px; margin: 14px 0 6px; }
.summary { font-size: 15px; padding: 8px 12px; border-radius: 6px; display: inline-block; margin: 6px 0; }
.summary.ok { background: #e6f4ea; color: var(--ok); border: 1px solid #b7dfc3; }
.summary.not-ok { background: #fdecea; color: var(--bad); border: 1px solid #f5c2bd; }
table { border-collapse: collapse; font-size: 12.5px; margin: 6px 0; }
th, td { border: 1px solid var(--line); padding: 4px 7px; text-align: left; vertical-align: top; }
th { background: #f4f5f7; font-weight: 600; white-space: nowrap; }
.scroll { overflow-x: auto; max-width: 100%; }
table.results { width: 100%; }
table.results th.profile { position: sticky; left: 0; background: #fff; z-index: 1; text-align: left; font-weight: 600; white-space: normal; min-width: 9em; }
table.results td.verdict { white-space: normal; min-width: 14em; max-width: 20em; }
table.results td.links { font-size: 12px; min-width: 11em; }
table.results td.text { max-width: 16em; }
.why { display: block; font-weight: 400; color: #333; font-size: 12px; }
.why code { color: var(--bad); }
.more { color: var(--muted); font-weight: 400; font-size: 12px; }
.n { color: var(--muted); font-size: 11.5px; white-space: nowrap; }
.ci { display: block; color: var(--muted); font-size: 11.5px; white-space: nowrap; }
table.figures td.num .n { margin-left: 4px; }
.kind { display: block; color: var(--muted); font-weight: 400; font-size: 11.5px; }
a.ev { white-space: nowrap; }
.group-charts figure { width: min-content; max-width: 100%; overflow-x: auto; }
td.nowrap { white-space: nowrap; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
tr.counted-no td { background: #fafafa; }
tr.counted-no td:not(.verdict) { color: #444; }
.verdict { font-weight: 600; white-space: nowrap; }
.v-qualified, .s-aiperf-qualified { color: var(--ok); }
.v-failed, .v-error, .v-interrupted, .v-not-run, .s-failed, .s-error, .s-interrupted, .s-not-run { color: var(--bad); }
.v-excluded, .s-excluded, .s-planned, .s-implemented, .s-family-validated { color: var(--warn); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; color: #fff; margin-right: 6px; vertical-align: 1px; }
.badge.b-qualified { background: var(--ok); }
.badge.b-failed, .badge.b-error, .badge.b-interrupted, .badge.b-not-run { background: var(--bad); }
.badge.b-excluded, .badge.b-other { background: var(--warn); }
.checkpoint { border: 1px solid var(--line); border-left: 5px solid var(--line); border-radius: 6px; padding: 12px 16px; margin: 14px 0; }
.checkpoint.bad { border-left-color: var(--bad); }
.checkpoint.good { border-left-color: var(--ok); }
.checkpoint.other { border-left-color: var(--warn); }
.meta { color: var(--muted); font-size: 12.5px; margin: 0; }
.meta code { color: #333; }
ul.reasons { margin: 4px 0; padding-left: 20px; }
ul.reasons li { margin: 2px 0; }
ul.reasons code { background: #fdecea; color: var(--bad); padding: 0 4px; border-radius: 3px; }
.diff { border: 1px solid var(--line); border-radius: 4px; margin: 6px 0; }
.diff-head { background: #f4f5f7; padding: 3px 8px; font-size: 12px; }
pre { font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; margin: 0; padding: 6px 8px; overflow-x: auto; white-space: pre-wrap; overflow-wrap: break-word; }
pre.cmd { background: #f6f8fa; border: 1px solid var(--line); border-radius: 4px; margin: 4px 0; }
.diff .del { background: #ffebe9; color: #82071e; display: block; }
.diff .hunk { color: var(--muted); display: block; }
.diff .add { background: #e6ffec; color: #116329; display: block; }
.answers { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; padding: 6px 8px; }
.answer-head { color: var(--muted); font-size: 12px; }
pre.answer { background: #fafafa; border: 1px solid var(--line); border-radius: 4px; }
pre.answer del { background: #ffc9c4; color: #82071e; text-decoration: line-through; }
pre.answer ins { background: #b9efc7; color: #0b4d1e; text-decoration: none; }
.elided { color: var(--muted); }
details.finding summary { cursor: pointer; color: var(--muted); margin: 0 8px 4px; font-size: 12px; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
.plots figure { margin: 0; }
.plots figcaption { color: var(--muted); font-size: 12px; max-width: 560px; }
svg.plot { background: #fff; border: 1px solid var(--line); border-radius: 4px; }
.note { color: var(--muted); }
details.aiperf summary { cursor: pointer; color: var(--muted); margin: 4px 0; }
`

// breakable is foreign text escaped for HTML with a break opportunity
// after each path separator: a long path wraps at a "/", never inside a
// word (the style breaks no word that fits on a line).
func breakable(s string) string {
	return strings.ReplaceAll(html.EscapeString(s), "/", "/<wbr>")
}

// renderHTML writes the self-contained report: no script, no network, the
// plots as inline SVG; normal profiles, variants, and partial and excluded
// profiles in tables of their own, each failure-first.
func renderHTML(w io.Writer, r *GroupReport) error {
	var b strings.Builder
	sections := rowSections(r.Rows)
	writeHTMLHead(&b, r)
	b.WriteString("<h2>Results</h2>\n")
	var shown []Row
	for _, s := range sections {
		fmt.Fprintf(&b, "<h3 class=\"section\" id=\"results-%s-title\">%s</h3>\n", s.id, html.EscapeString(s.title))
		writeSummaryTable(&b, r, s)
		shown = append(shown, s.rows...)
	}
	if charts := groupCharts(shown); charts != "" {
		fmt.Fprintf(&b, "<h2>Latency and throughput across profiles</h2>\n%s", charts)
	}
	writeCoverage(&b, r)
	writeConflictsAndNotes(&b, r)
	for _, s := range sections {
		fmt.Fprintf(&b, "<h2 id=\"checkpoints-%s\">Checkpoints: %s</h2>\n", s.id, html.EscapeString(s.title))
		for i := range s.rows {
			writeCheckpoint(&b, r, &s.rows[i])
		}
	}
	b.WriteString("</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeHTMLHead writes the page's head, title, the coverage sentence, the
// baseline's and what the figures cover.
func writeHTMLHead(b *strings.Builder, r *GroupReport) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	p("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	p("<title>trtmc-qual results: %s</title>\n<style>%s</style>\n</head>\n<body>\n", e(r.Group), htmlStyle)
	p("<h1>trtmc-qual results: %s</h1>\n", e(r.Group))
	okClass := "not-ok"
	if r.Coverage.OK {
		okClass = "ok"
	}
	p("<p class=\"summary %s\" id=\"summary\">%s</p>\n", okClass, e(r.Coverage.Summary))
	if bl := r.Baseline; bl != nil {
		p("<p class=\"note\" id=\"baseline\">%s ▲/▼ mark a called change.</p>\n",
			e(baselineSentence(bl)))
		if rows := baselineRows(r.Rows); len(rows) > 0 {
			p("<ul class=\"note\" id=\"baseline-rows\">\n")
			for _, row := range rows {
				p("<li data-profile=\"%s\" data-decision=\"%s\"><strong>%s</strong> — %s</li>\n", e(row.Profile), e(row.Baseline.Decision),
					e(row.Profile), e(baselineRowText(row.Baseline)))
			}
			p("</ul>\n")
		}
	}
	p("<p class=\"note\">Normal profiles first, then variants, then partial and excluded profiles (listed, not counted as models); failures first in each. " +
		"HTTP includes transport; Task is the native Task call. Every latency figure and plot of a row covers one set: its measured requests whose answers matched; " +
		"n is shown where that is not every measured request. Images/s is AIPerf's request throughput over the measured requests sent.</p>\n")
}

// writeCoverage writes the coverage matrix.
func writeCoverage(b *strings.Builder, r *GroupReport) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("<h2>Coverage</h2>\n<div class=\"scroll\"><table class=\"coverage\" id=\"coverage\">\n<thead><tr>")
	ct := coverageTable(r.Rows, nil)
	for _, h := range ct.Header {
		p("<th>%s</th>", e(h))
	}
	p("</tr></thead>\n<tbody>\n")
	for i, cells := range ct.Rows {
		p("<tr data-profile=\"%s\">", e(r.Rows[i].Profile))
		for j, c := range cells {
			if ct.Header[j] == "status" {
				p("<td class=\"verdict s-%s\">%s</td>", e(c), e(c))
			} else {
				p("<td>%s</td>", breakable(c))
			}
		}
		p("</tr>\n")
	}
	p("</tbody>\n</table></div>\n")
}

// writeConflictsAndNotes writes the rows several roots disagree on and
// the report's notes.
func writeConflictsAndNotes(b *strings.Builder, r *GroupReport) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	if len(r.Conflicts) > 0 {
		p("<h2>Conflicts</h2>\n<p class=\"note\">Profiles with results in several result roots; the run that ended last is kept.</p>\n<ul id=\"conflicts\">\n")
		for _, c := range r.Conflicts {
			p("<li><b>%s</b>: kept %s<ul>", e(c.Profile), breakable(sideText(c.Kept)))
			for _, o := range c.Others {
				p("<li>also %s</li>", breakable(sideText(o)))
			}
			p("</ul></li>\n")
		}
		p("</ul>\n")
	}
	if len(r.Notes) > 0 {
		p("<h2>Notes</h2>\n<ul id=\"notes\">\n")
		for _, n := range r.Notes {
			p("<li>%s</li>\n", breakable(n))
		}
		p("</ul>\n")
	}
}

func badgeClass(status string) (badge, box string) {
	switch status {
	case StatusQualified:
		return "b-qualified", "good"
	case StatusFailed, StatusError, StatusInterrupted, StatusNotRun:
		return "b-" + status, "bad"
	case StatusExcluded:
		return "b-excluded", "other"
	}
	return "b-other", "other"
}

// writeCheckpoint writes one row's section: its head, then what its
// result holds (reasons, and for a measured row its checks, mismatches,
// other requests and latency plots), then how to reproduce it.
func writeCheckpoint(b *strings.Builder, r *GroupReport, row *Row) {
	writeCheckpointHead(b, r, row)
	switch res := row.Result; {
	case res == nil:
	case res.Verdict == verdict.VerdictExcluded:
		writeReproduce(b, row, r.mapper)
	default:
		writeReasons(b, res.Reasons)
		// Nothing measured, or nothing trusted: no figure, diff or plot.
		if res.Measured() {
			writeMeasured(b, row, res)
		}
		writeReproduce(b, row, r.mapper)
	}
	b.WriteString("</section>\n")
}

// writeCheckpointHead opens the row's section: its verdict badge, what it
// is and ran on, its counts, evidence links and note.
func writeCheckpointHead(b *strings.Builder, r *GroupReport, row *Row) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	badge, box := badgeClass(row.Status)
	p("<section class=\"checkpoint %s\" id=\"%s\" data-status=\"%s\">\n", box, e(anchor(row.Profile)), e(row.Status))
	p("<h3><span class=\"badge %s\">%s</span>%s</h3>\n", badge, breakable(verdictCell(row)), e(row.Profile))
	p("<p class=\"meta\">%s</p>\n", strings.Join(checkpointMeta(row), " · "))
	if c := countsMeta(row); c != "" {
		p("<p class=\"meta counts\">%s</p>\n", e(c))
	}
	if len(row.files) > 0 {
		p("<p class=\"meta links\">evidence: %s</p>\n", evidenceCell(r, row))
	}
	if row.Note != "" {
		p("<p class=\"note\">%s</p>\n", breakable(row.Note))
	}
}

// checkpointMeta is the row's identity line, escaped: checkpoint, kind,
// family, precision, parallelism, bundle and, with a result, its source
// commit, AIPerf, evidence, run times and GPUs.
func checkpointMeta(row *Row) []string {
	e := html.EscapeString
	meta := []string{
		"checkpoint <code>" + breakable(orMissing(row.Checkpoint)) + "</code>",
		"kind " + e(row.Kind),
	}
	if row.VariantOf != "" {
		meta = append(meta, "variant of "+e(row.VariantOf))
	}
	meta = append(meta, "family "+e(orMissing(row.Family)), "precision "+e(orMissing(row.Precision)),
		"parallelism "+e(orMissing(row.Parallelism)), "bundle <code>"+e(orMissing(short(row.BundleSHA256)))+"</code>")
	res := row.Result
	if res == nil {
		return meta
	}
	meta = append(meta, "source commit <code>"+e(orMissing(short(res.Provenance.SourceCommit)))+"</code>",
		"AIPerf "+e(aiperfCell(res.Provenance)), "evidence <code>"+breakable(row.Evidence)+"</code>")
	if !res.StartedAt.IsZero() {
		meta = append(meta, "ran "+e(res.StartedAt.UTC().Format("2006-01-02 15:04:05Z"))+" – "+e(res.EndedAt.UTC().Format("15:04:05Z")))
	}
	for _, g := range gpuMeta(res.Provenance) {
		meta = append(meta, e(g))
	}
	return meta
}

func writeReasons(b *strings.Builder, reasons []verdict.Reason) {
	if len(reasons) == 0 {
		return
	}
	e := html.EscapeString
	b.WriteString("<h4>Reasons</h4>\n<ul class=\"reasons\">\n")
	for _, rs := range reasons {
		fmt.Fprintf(b, "<li><code>%s/%s</code> %s</li>\n", e(rs.Stage), e(string(rs.Code)), breakable(rs.Message))
	}
	b.WriteString("</ul>\n")
}

// writeMeasured writes what a measured row holds: its correctness and GPU
// checks, its mismatches, the other requests that did not match, and its
// latency figures and plots over the row's one set (inLatencySet).
func writeMeasured(b *strings.Builder, row *Row, res *verdict.Result) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	if res.Correctness != nil && res.Correctness.Ran {
		p("<h4>Correctness</h4>\n<p class=\"correctness\">%s</p>\n", breakable(correctnessCell(res.Correctness)))
	}
	writeGPUChecks(b, res.GPUChecks)
	var diffs, problems []verdict.JoinedLine
	for _, l := range orderedRequests(row.joined) {
		switch {
		case l.Status == verdict.JoinMismatched:
			diffs = append(diffs, l)
		case l.Status != verdict.JoinMatched:
			problems = append(problems, l)
		}
	}
	writeMismatches(b, row, diffs)
	writeProblems(b, problems)
	n, full := setSize(res)
	p("<h4>Latency</h4>\n<p class=\"set\" data-n=\"%d\" data-full=\"%d\">%s</p>\n", n, full, e(setSentence(res)))
	writeFiguresTable(b, res)
	if s := SplitText(res.LatencyMS, n); s != "" {
		p("<p class=\"split\">%s</p>\n", e(s))
	}
	if len(row.joined) == 0 {
		p("<p class=\"note\">No per-request evidence (%s): nothing to plot.</p>\n", breakable(orMissing(row.joinedNote)))
		return
	}
	p("<div class=\"plots\">\n<figure>%s<figcaption>Every request in start order: the lines and coloured points are HTTP (client) and Task (native call) time of the row's set; "+
		"grey points are the requests outside it (warmup, or not matched; ▲ marks a request that did not match). Warmup shaded.</figcaption></figure>\n", timelineSVG(row.Profile, row.joined))
	p("<figure>%s<figcaption>The row's set: share of requests at or below each latency, HTTP beside Task. Recorded p50/p95 over the same set: HTTP %s ms, Task %s ms%s.</figcaption></figure>\n</div>\n",
		distributionSVG(row.Profile, row.joined, res.LatencyMS), e(p50Cell(res.LatencyMS.HTTP, nil)), e(taskCell(res.LatencyMS, nil)), e(nSuffix(res)))
}

// writeGPUChecks writes the row's GPU hygiene checks.
func writeGPUChecks(b *strings.Builder, checks []verdict.GPUCheck) {
	if len(checks) == 0 {
		return
	}
	e := html.EscapeString
	b.WriteString("<h4>GPU checks</h4>\n<ul class=\"gpu-checks\">\n")
	for _, c := range checks {
		mark := "✓"
		if !c.Passed {
			mark = "✗"
		}
		fmt.Fprintf(b, "<li><code>%s</code> %s %s</li>\n", e(c.Name), mark, breakable(gpuCheckDetail(c)))
	}
	b.WriteString("</ul>\n")
}

// writeMismatches writes the first maxDiffsShown mismatches: each one's
// native and HTTP answers side by side with the words that differ marked,
// and the comparator's finding.
func writeMismatches(b *strings.Builder, row *Row, diffs []verdict.JoinedLine) {
	if len(diffs) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("<h4>Mismatches (%d)</h4>\n", len(diffs))
	if note := row.mismatches.note; note != "" {
		p("<p class=\"note mismatch-note\">The answers are not shown: %s. Each request shows the comparator's finding.</p>\n", breakable(note))
	} else {
		p("<p class=\"note\">The native answer beside the HTTP answer, from the sealed %s: what only the native answer has is struck out in red, what only the HTTP answer has is marked in green.</p>\n", MismatchesFile)
	}
	for i, l := range diffs {
		if i == maxDiffsShown {
			p("<p class=\"note\">%d more in %s/%s (both full answers and the diff).</p>\n", len(diffs)-maxDiffsShown, breakable(row.Evidence), MismatchesFile)
			break
		}
		writeMismatch(b, row, l)
	}
}

// writeMismatch writes one mismatch: both answers when the sealed file
// holds them, and the comparator's finding (collapsed when the answers
// show the difference).
func writeMismatch(b *strings.Builder, row *Row, l verdict.JoinedLine) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("<div class=\"diff\" data-request=\"%s\"><div class=\"diff-head\"><code>%s</code> · entry %s · %s</div>\n",
		e(l.RequestID), e(l.RequestID), e(orMissing(l.EntryID)), e(l.Phase))
	s, ok := row.mismatches.byID[l.RequestID]
	differs := false
	if ok {
		ops := wordOps(s.Native, s.HTTP)
		keep := keptOps(ops)
		for _, o := range ops {
			differs = differs || o.kind != ' '
		}
		p("<div class=\"answers\"><div class=\"answer native\"><div class=\"answer-head\">native answer</div><pre class=\"answer\">")
		writeAnswerSide(b, ops, keep, '-', "del", s.NativeClipped)
		p("</pre></div><div class=\"answer http\"><div class=\"answer-head\">HTTP answer</div><pre class=\"answer\">")
		writeAnswerSide(b, ops, keep, '+', "ins", s.HTTPClipped)
		p("</pre></div></div>\n")
	} else if row.mismatches.note == "" {
		p("<p class=\"note\">Not in %s: its answers are not shown.</p>\n", MismatchesFile)
	}
	if differs {
		p("<details class=\"finding\"><summary>the comparator's finding</summary>")
	} else if ok {
		p("<p class=\"note\">The two answers read the same; the comparator's finding says what differs.</p>\n")
	}
	writeFinding(b, l)
	if differs {
		p("</details>")
	}
	p("</div>\n")
}

// writeFinding writes the comparator's diff of a mismatch (joined.jsonl),
// coloured by line.
func writeFinding(b *strings.Builder, l verdict.JoinedLine) {
	e := html.EscapeString
	diff := l.Diff
	if diff == "" {
		diff = orMissing(l.Problem)
	}
	b.WriteString("<pre class=\"finding\">")
	for _, dl := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
		switch {
		case strings.HasPrefix(dl, "---"), strings.HasPrefix(dl, "+++"), strings.HasPrefix(dl, "@@"):
			fmt.Fprintf(b, "<span class=\"hunk\">%s</span>", e(dl))
		case strings.HasPrefix(dl, "-"):
			fmt.Fprintf(b, "<span class=\"del\">%s</span>", e(dl))
		case strings.HasPrefix(dl, "+"):
			fmt.Fprintf(b, "<span class=\"add\">%s</span>", e(dl))
		default:
			fmt.Fprintf(b, "%s\n", e(dl))
		}
	}
	b.WriteString("</pre>")
}

// writeProblems writes the table of the other requests that did not match.
func writeProblems(b *strings.Builder, problems []verdict.JoinedLine) {
	if len(problems) == 0 {
		return
	}
	e := html.EscapeString
	fmt.Fprintf(b, "<h4>Other requests that did not match (%d)</h4>\n<table class=\"problems\">\n<thead><tr><th>request</th><th>entry</th><th>phase</th><th>status</th><th>problem</th></tr></thead>\n<tbody>\n", len(problems))
	for _, l := range problems {
		fmt.Fprintf(b, "<tr><td><code>%s</code></td><td>%s</td><td>%s</td><td class=\"verdict v-failed\">%s</td><td>%s</td></tr>\n",
			e(l.RequestID), e(orMissing(l.EntryID)), e(l.Phase), e(l.Status), breakable(orMissing(l.Problem)))
	}
	b.WriteString("</tbody>\n</table>\n")
}

func writeReproduce(b *strings.Builder, row *Row, s Mapper) {
	e := html.EscapeString
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	rp := row.Reproduce
	if rp == nil {
		return
	}
	p("<h4>Reproduce</h4>\n")
	if used := usedRoots(s, []Row{*row}); len(used) > 0 {
		p("<p class=\"note\">%s</p>\n", e(rootsNote(used, s)))
	}
	if rp.Command != "" {
		p("<pre class=\"cmd\">%s</pre>\n", breakable(rp.Command))
	} else {
		p("<p class=\"note\">No trtmc-qual command recorded.</p>\n")
	}
	if len(rp.AIPerfArgv) > 0 {
		p("<details class=\"aiperf\"><summary>AIPerf argv as recorded</summary>\n<pre class=\"cmd aiperf\">%s</pre></details>\n", breakable(shellLines(rp.AIPerfArgv, s)))
	}
}
