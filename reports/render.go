package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/markdown"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// GroupFormats returns the formats Render accepts for a group report, for
// flag help and validation.
func GroupFormats() []string {
	return []string{FormatMarkdown, FormatCSV, FormatJSON, FormatHTML, FormatTable, FormatTSV, FormatSummary}
}

// Render writes the group report in one format: md (the document release
// engineers paste into a pull request), csv (one flat row per profile),
// json (authoritative, schema trtmc-qual/group-report/v1), html (the
// self-contained failure-first report), table (boxed, for a terminal) or
// tsv (the results table without a header). The output depends only on r.
func Render(w io.Writer, r *GroupReport, format string) error {
	if err := CheckFormat(format, GroupFormats()...); err != nil {
		return err
	}
	var buf bytes.Buffer
	var err error
	if publicFormat(format) {
		if r, err = r.published(); err != nil {
			return fmt.Errorf("render %s: %w", format, err)
		}
	}
	switch format {
	case FormatMarkdown:
		err = renderMarkdown(&buf, r)
	case FormatCSV:
		err = csvTable(r).Write(&buf, FormatCSV)
	case FormatJSON:
		err = renderJSON(&buf, r)
	case FormatHTML:
		err = renderHTML(&buf, r)
	case FormatTable:
		err = renderTerminal(&buf, r)
	case FormatTSV:
		err = resultsTable(r.Rows, true, nil).Write(&buf, FormatTSV)
	case FormatSummary:
		err = renderSummary(&buf, r)
	}
	if err != nil {
		return fmt.Errorf("render %s: %w", format, err)
	}
	out := buf.Bytes()
	if format != FormatJSON {
		// Read by people, on terminals and in browsers: no control,
		// bidirectional or invisible character from the evidence goes
		// out raw. JSON is data; its encoder escapes control characters.
		out = []byte(text.Printable(string(out)))
	}
	_, err = w.Write(out)
	return err
}

// publicFormat: the formats written for others to read (see Public).
func publicFormat(format string) bool {
	return format == FormatMarkdown || format == FormatHTML || format == FormatSummary
}

func renderJSON(w io.Writer, r *GroupReport) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// resultHeader is the group table's header (the seeds' timing table).
func resultHeader() []string {
	return []string{"profile", "checkpoint", "family", "precision", "bundle", "correctness",
		"warmup", "measured", "matched", "errors", "missing joins", "HTTP p50/p95 ms", "Task p50/p95 ms",
		"images/s", "output", "AIPerf", "GPUs", "GPU UUIDs", "driver / CUDA", "source commit", "verdict"}
}

// resultsTable is the group table over rows; withKind adds a kind column
// after the profile; esc escapes cells (Markdown) when not nil.
func resultsTable(rows []Row, withKind bool, esc func(string) string) Table {
	t := Table{Header: resultHeader()}
	if withKind {
		t.Header = append([]string{"profile", "kind"}, t.Header[1:]...)
	}
	for i := range rows {
		cells := resultCells(&rows[i])
		if withKind {
			cells = append([]string{cells[0], rows[i].Kind}, cells[1:]...)
		}
		if esc != nil {
			for j := range cells {
				cells[j] = esc(cells[j])
			}
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

func resultCells(row *Row) []string {
	bundle := orMissing(short(row.BundleSHA256))
	r := row.Result
	if r == nil || !r.Measured() {
		// Nothing was measured: every measurement cell is missing.
		cells := []string{row.Profile, orMissing(row.Checkpoint), orMissing(row.Family), orMissing(row.Precision), bundle}
		for range len(resultHeader()) - len(cells) - 1 {
			cells = append(cells, Missing)
		}
		return append(cells, verdictCell(row))
	}
	var http, task *Delta
	if row.Baseline != nil {
		http, task = row.Baseline.HTTPP50, row.Baseline.TaskP50
	}
	return []string{
		row.Profile, orMissing(row.Checkpoint), orMissing(row.Family), orMissing(row.Precision), bundle,
		correctnessCell(r.Correctness),
		phaseCell(r, verdict.PhaseWarmup), phaseCell(r, verdict.PhaseMeasured),
		fmt.Sprintf("%d/%d", r.Requests.Matched, r.Requests.Expected),
		errorsCell(r.Requests), missingCell(r.Requests),
		p50Cell(r.LatencyMS.HTTP, http), taskCell(r.LatencyMS, task),
		fmtRate(r.ImagesPerSec), outputCell(r), aiperfCell(r.Provenance),
		gpusCell(r.Provenance), gpuUUIDsCell(r.Provenance), driverCell(r.Provenance),
		orMissing(short(r.Provenance.SourceCommit)), verdictCell(row),
	}
}

// coverageTable is the coverage matrix over rows.
func coverageTable(rows []Row, esc func(string) string) Table {
	t := Table{Header: []string{"profile", "kind", "counted", "variant of", "checkpoint", "precision",
		"parallelism", "inventory", "status", "note"}}
	for _, r := range rows {
		counted := "no"
		if r.Counted {
			counted = "yes"
		}
		cells := []string{r.Profile, r.Kind, counted, orMissing(r.VariantOf), orMissing(r.Checkpoint),
			orMissing(r.Precision), orMissing(r.Parallelism), orMissing(r.InventoryStatus), r.Status, orMissing(r.Note)}
		if esc != nil {
			for j := range cells {
				cells[j] = esc(cells[j])
			}
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

// csvHeader is the CSV format's header.
func csvHeader() []string {
	return append([]string{"profile", "kind", "counted", "variant_of", "checkpoint", "revision", "family",
		"precision", "parallelism", "bundle_sha256", "correctness", "gates",
		"warmup_sent", "warmup_expected", "measured_sent", "measured_expected",
		"expected", "sent", "matched", "mismatched", "errored", "duplicates", "meaningless",
		"missing_native", "missing_http", "missing_server_record", "echo_missing", "echo_mismatched",
		"http_p50_ms", "http_p95_ms", "task_p50_ms", "task_p95_ms",
		"http_mean_ms", "task_mean_ms", "client_mean_ms", "sending_mean_ms", "waiting_mean_ms", "receiving_mean_ms", "outside_task_mean_ms",
		"images_per_sec",
		"output_tokens", "boxes", "aiperf_version",
		"hardware_scope", "hardware_mismatch", "gpu_count", "gpu_names", "gpu_uuids", "gpu_driver", "cuda_version",
		"gpu_memory_total_mib", "gpu_clock_sm_mhz", "gpu_clock_max_sm_mhz", "gpu_power_limit_w", "gpu_mig_mode",
		"gpu_checks",
		"source_commit", "verdict", "original_verdict",
		"status", "note", "reasons", "command", "aiperf_argv"}, intervalCSVHeader()...)
}

// csvTable is one flat, machine-readable row per profile. Numbers have
// fixed decimals; a value that was not measured is an empty cell.
func csvTable(r *GroupReport) Table {
	t := Table{Header: csvHeader()}
	if r.Baseline != nil {
		t.Header = append(t.Header, baselineCSVHeader()...)
	}
	for i := range r.Rows {
		v := csvValues(&r.Rows[i])
		cells := make([]string, len(t.Header))
		for j, h := range t.Header {
			cells[j] = v[h]
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

func csvValues(row *Row) map[string]string {
	v := map[string]string{
		"profile": row.Profile, "kind": row.Kind, "counted": strconv.FormatBool(row.Counted),
		"variant_of": row.VariantOf, "checkpoint": row.Checkpoint, "family": row.Family,
		"precision": row.Precision, "parallelism": row.Parallelism, "bundle_sha256": row.BundleSHA256,
		"verdict": row.Verdict, "status": row.Status, "note": row.Note,
	}
	baselineCSV(v, row.Baseline)
	res := row.Result
	if res == nil {
		return v
	}
	v["revision"], v["command"] = res.Revision, ReproduceCommand(res)
	if res.Rejudged != nil {
		v["original_verdict"] = res.Rejudged.OriginalVerdict
	}
	v["reasons"] = reasonsPlain(res.Reasons)
	if !res.Measured() {
		return v // nothing was measured
	}
	for _, p := range []string{verdict.PhaseWarmup, verdict.PhaseMeasured} {
		if c, ok := res.RequestsByPhase[p]; ok {
			v[p+"_sent"], v[p+"_expected"] = strconv.Itoa(c.Sent), strconv.Itoa(c.Expected)
		}
	}
	c := res.Requests
	for k, n := range map[string]int{"expected": c.Expected, "sent": c.Sent, "matched": c.Matched,
		"mismatched": c.Mismatched, "errored": c.Errored, "duplicates": c.Duplicates, "meaningless": c.Meaningless,
		"missing_native": c.MissingNative, "missing_http": c.MissingHTTP, "missing_server_record": c.MissingServerRecord,
		"echo_missing": c.EchoMissing, "echo_mismatched": c.EchoMismatched} {
		v[k] = strconv.Itoa(n)
	}
	v["correctness"], v["gates"] = correctnessWord(res.Correctness), gatesPlain(res.Correctness)
	v["http_p50_ms"], v["http_p95_ms"] = fmtPlain(res.LatencyMS.HTTP.P50), fmtPlain(res.LatencyMS.HTTP.P95)
	v["task_p50_ms"], v["task_p95_ms"] = fmtPlain(res.LatencyMS.Task.P50), fmtPlain(res.LatencyMS.Task.P95)
	if s := res.LatencyMS.HTTPSplit; s != nil {
		v["http_mean_ms"], v["task_mean_ms"] = fmtPlain(s.HTTPMean), fmtPlain(s.TaskMean)
		v["client_mean_ms"], v["sending_mean_ms"] = fmtPlain(s.Client.Mean), fmtPlain(s.Sending.Mean)
		v["waiting_mean_ms"], v["receiving_mean_ms"] = fmtPlain(s.Waiting.Mean), fmtPlain(s.Receiving.Mean)
		v["outside_task_mean_ms"] = fmtPlain(s.OutsideTask.Mean)
	}
	v["images_per_sec"] = fmtPlain(res.ImagesPerSec)
	intervalCSV(v, res)
	v["output_tokens"], v["boxes"] = optInt(res.OutputTokens), optInt(res.Boxes)
	v["aiperf_version"], v["source_commit"] = res.Provenance.AIPerfVersion, res.Provenance.SourceCommit
	gpuCSV(v, res)
	if row.Reproduce != nil {
		v["aiperf_argv"] = ShellQuote(row.Reproduce.AIPerfArgv)
	}
	return v
}

func optInt(v *int) string {
	if v == nil {
		return ""
	}
	return strconv.Itoa(*v)
}

func reasonsPlain(rs []verdict.Reason) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s/%s: %s", r.Stage, r.Code, r.Message)
	}
	return strings.Join(parts, "; ")
}

// splitRows separates counted (normal) rows from variants and partials.
func splitRows(rows []Row) (counted, other []Row) {
	for _, r := range rows {
		if r.Counted {
			counted = append(counted, r)
		} else {
			other = append(other, r)
		}
	}
	return counted, other
}

// mdEscape is foreign text in Markdown: a table cell, a list item, a
// heading. Nothing in it becomes markup, and it stays on its line and in
// its cell (markdown.Text).
func mdEscape(s string) string { return markdown.Text(s) }

func renderMarkdown(w io.Writer, r *GroupReport) error {
	p := &printer{w: w}
	p.f("# trtmc-qual results: %s\n\n", mdEscape(r.Group))
	p.f("**%s.**\n\n", mdEscape(r.Coverage.Summary))
	if b := r.Baseline; b != nil {
		p.f("%s ▲/▼ in the tables mark a called change.\n\n", mdEscape(baselineSentence(b)))
	}
	counted, other := splitRows(r.Rows)
	p.f("## Results\n\n")
	p.f("Normal full-model profiles, the ones that count as models. HTTP includes transport; Task is the native Task call. Warmup and measured are sent/expected requests; latency and images/s are over measured requests only.\n\n")
	p.table(resultsTable(counted, false, mdEscape), "_No normal profiles._\n")
	if len(other) > 0 {
		p.f("\n## Variants and partial profiles (not counted)\n\n")
		p.table(resultsTable(other, true, mdEscape), "")
	}
	writeIntervalsDetails(p, r.Rows)
	if split := httpSplitRows(r.Rows); len(split) > 0 {
		p.f("\n## HTTP minus Task\n\n")
		p.f("Each measured matched request's HTTP time split at AIPerf's HTTP trace: the client's own time before the first byte, sending (a new connection's set-up included), waiting (the server, the Task call inside it, and the network) and receiving.\n\n")
		for _, row := range split {
			p.f("- **%s** — %s\n", mdEscape(row.Profile), mdEscape(SplitText(row.Result.LatencyMS, row.Result.RequestsByPhase[verdict.PhaseMeasured].Matched)))
		}
	}
	if rows := baselineRows(r.Rows); len(rows) > 0 {
		p.f("\n## Baseline\n\n")
		p.f("Each series' change against the baseline run's: the rule's estimate and its 95 %% interval, the medians and the requests on each side.\n\n")
		for _, row := range rows {
			p.f("- **%s** — %s\n", mdEscape(row.Profile), mdEscape(baselineRowText(row.Baseline)))
		}
	}
	p.f("\n## Coverage\n\n")
	p.table(coverageTable(r.Rows, mdEscape), "_No profiles._\n")
	if reasons := reasonRows(r.Rows); len(reasons) > 0 {
		p.f("\n## Reasons\n\n")
		writeReasonList(p, reasons)
	}
	if len(r.Conflicts) > 0 {
		p.f("\n## Conflicts\n\nProfiles with results in several result roots; the run that ended last is kept.\n\n")
		for _, c := range r.Conflicts {
			p.f("- **%s**: kept %s\n", mdEscape(c.Profile), mdEscape(sideText(c.Kept)))
			for _, o := range c.Others {
				p.f("  - also %s\n", mdEscape(sideText(o)))
			}
		}
	}
	if len(r.Notes) > 0 {
		p.f("\n## Notes\n\n")
		writeNotes(p, r.Notes)
	}
	if repro := reproRows(r.Rows); len(repro) > 0 {
		p.f("\n## Reproduce\n")
		if used := usedRoots(r.mapper, repro); len(used) > 0 {
			p.f("\n%s\n", rootsNote(used, r.mapper))
		}
		for _, row := range repro {
			p.f("\n### %s\n\n", mdEscape(row.Profile))
			writeRowCommands(p, &row, r.mapper, true)
		}
	}
	return p.err
}

// httpSplitRows are the measured rows with an HTTP split to show.
func httpSplitRows(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if r.Result == nil || !r.Result.Measured() || r.Result.LatencyMS.HTTPSplit == nil {
			continue
		}
		if r.Result.LatencyMS.HTTPSplit.Count > 0 || r.Result.RequestsByPhase[verdict.PhaseMeasured].Matched > 0 {
			out = append(out, r)
		}
	}
	return out
}

// writeReasonList lists each row's reasons, every foreign word escaped.
func writeReasonList(p *printer, rows []Row) {
	for _, row := range rows {
		p.f("- **%s** — %s\n", mdEscape(row.Profile), mdEscape(verdictCell(&row)))
		for _, rs := range row.Result.Reasons {
			p.f("  - %s/%s: %s\n", mdEscape(rs.Stage), mdEscape(string(rs.Code)), mdEscape(text.OneLine(rs.Message)))
		}
	}
}

// writeNotes lists the report's notes as text.
func writeNotes(p *printer, notes []string) {
	for _, n := range notes {
		p.f("- %s\n", mdEscape(text.OneLine(n)))
	}
}

// reasonRows are the rows with a result that is not qualified.
func reasonRows(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if r.Result != nil && r.Result.Verdict != verdict.VerdictQualified && len(r.Result.Reasons) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// writeRowCommands writes a row's trtmc-qual command and its recorded
// AIPerf argv (collapsed in a <details> of its own, or under a line) as
// fenced shell code.
func writeRowCommands(p *printer, row *Row, s Mapper, collapseArgv bool) {
	if c := row.Reproduce.Command; c != "" {
		p.f("%[1]ssh\n%[2]s\n%[1]s\n", fence(c), c)
	} else {
		p.f("_No trtmc-qual command recorded._\n")
	}
	if len(row.Reproduce.AIPerfArgv) == 0 {
		return
	}
	argv := shellLines(row.Reproduce.AIPerfArgv, s)
	if collapseArgv {
		p.f("\n<details><summary>AIPerf argv as recorded</summary>\n\n%[1]ssh\n%[2]s\n%[1]s\n\n</details>\n", fence(argv), argv)
	} else {
		p.f("\nAIPerf argv as recorded:\n\n%[1]ssh\n%[2]s\n%[1]s\n", fence(argv), argv)
	}
}

// usedRoots are the named roots the rows' reproduce commands use (none
// in a report that is not a public copy).
func usedRoots(s Mapper, rows []Row) []string {
	if s == nil {
		return nil
	}
	var texts []string
	for _, row := range rows {
		texts = append(texts, row.Reproduce.Command, strings.Join(row.Reproduce.AIPerfArgv, " "))
	}
	return s.UsedRoots(texts...)
}

func reproRows(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if r.Reproduce != nil {
			out = append(out, r)
		}
	}
	return out
}

func sideText(s ConflictSide) string {
	return fmt.Sprintf("%s from %s (run key %s, ended %s)", s.Verdict, s.Root, orMissing(short(s.RunKey)),
		s.EndedAt.UTC().Format("2006-01-02T15:04:05Z"))
}

func fmtPct(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func renderTerminal(w io.Writer, r *GroupReport) error {
	p := &printer{w: w}
	p.tableAs(resultsTable(r.Rows, true, nil), FormatTable, "no profiles\n")
	p.f("\n%s\n", r.Coverage.Summary)
	if b := r.Baseline; b != nil {
		p.f("%s\n", baselineSentence(b))
		for _, row := range baselineRows(r.Rows) {
			p.f("baseline: %s: %s\n", row.Profile, baselineRowText(row.Baseline))
		}
	}
	for _, c := range r.Conflicts {
		p.f("conflict: %s: kept %s\n", c.Profile, sideText(c.Kept))
	}
	for _, n := range r.Notes {
		p.f("note: %s\n", n)
	}
	return p.err
}

// printer writes formatted text, remembering the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func (p *printer) table(t Table, empty string) { p.tableAs(t, FormatMarkdown, empty) }

func (p *printer) tableAs(t Table, format, empty string) {
	if p.err != nil {
		return
	}
	if len(t.Rows) == 0 {
		p.f("%s", empty)
		return
	}
	p.err = t.Write(p.w, format)
}
