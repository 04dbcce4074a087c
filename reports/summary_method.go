package reports

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/markdown"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// writeMethod writes how the models were measured and what that means:
// the workload, the caveat, whether the specs are unchanged, the
// inventory's reconciliation (when it is current; otherwise it is in
// "What is missing"), each row's source commit (when the group is not
// complete: a complete group's first sentence names them), AIPerf, and
// the models whose metrics are reporting-only.
func writeMethod(p *printer, r *GroupReport, s *summaryFacts) {
	measured := measuredRows(s.models)
	p.f("\n### Workload and method\n\n")
	if len(measured) > 0 {
		p.f("- **Workload:** %s.\n", workloadText(measured))
		p.f("- **Caveat:** %s.\n", caveatText(measured))
	}
	p.f("- **Model specs, thresholds and contracts:** %s\n", driftLine(r.Summary.Drift))
	if f := r.Summary.Reconcile; f != nil && reconcileMissing(f) == "" {
		p.f("- **Inventory:** %s\n", reconcileLine(f))
	}
	t := s.totals
	if len(s.missing) > 0 { // a complete group's first sentence names them
		writeCommits(p, t)
	}
	if len(t.versions) > 0 {
		how := ""
		if t.pipInstalled {
			how = " (pip-installed: every row records the installed distribution)"
		}
		p.f("- **AIPerf:** %s%s.\n", mdEscape(strings.Join(t.versions, ", ")), how)
	}
	var only []string
	for _, row := range measured {
		if c := row.Result.Correctness; c != nil && len(reportingOnly(c)) > 0 {
			only = append(only, mdEscape(row.Profile))
		}
	}
	if len(only) > 0 {
		p.f("- **Reporting-only metrics** (recorded by the correctness case, held by no gate): %s.\n", strings.Join(only, ", "))
	}
}

// writeCommits lists each row's own measurement source commit, grouped
// by commit, never relabelled.
func writeCommits(p *printer, t totals) {
	p.f("- **Measurement source commits** (each row's own, never relabelled):")
	if len(t.commits) == 0 {
		p.f(" none recorded.\n")
		return
	}
	p.f("\n")
	for _, k := range t.commitOrder {
		label := markdown.Code(k)
		if k == "" {
			label = "not recorded"
		}
		p.f("  - %s: %s\n", label, mdEscape(strings.Join(t.commits[k], ", ")))
	}
}

// measuredRows are the rows the workload and caveat are read from: the
// qualified ones, or, when none is, every row that measured something.
func measuredRows(rows []Row) []Row {
	var qualified, timedRows []Row
	for _, row := range rows {
		if row.Result == nil || !timed(row.Result) {
			continue
		}
		timedRows = append(timedRows, row)
		if row.Status == StatusQualified {
			qualified = append(qualified, row)
		}
	}
	if len(qualified) > 0 {
		return qualified
	}
	return timedRows
}

// distinct joins the distinct values of f over rows, in order, with "
// or " ("—" for none).
func distinct(rows []Row, f func(*Row) string) string {
	var vals []string
	for i := range rows {
		if v := f(&rows[i]); !slices.Contains(vals, v) {
			vals = append(vals, v)
		}
	}
	if len(vals) == 0 {
		return Missing
	}
	return strings.Join(vals, " or ")
}

// workloadText is the workload as the rows record it: images per
// request, the dataset's turns, streaming, concurrency, warmup and
// measured requests per model, the endpoint, route and server, and the
// hardware.
func workloadText(rows []Row) string {
	images := distinct(rows, imagesPerRequest)
	turns := distinct(rows, func(row *Row) string {
		switch t := argValue(aiperfArgv(row), "--custom-dataset-type"); t {
		case "single_turn":
			return "single turn"
		case "":
			return "dataset type not recorded"
		default:
			return "dataset type " + markdown.Code(t)
		}
	})
	streaming := distinct(rows, func(row *Row) string {
		if slices.Contains(aiperfArgv(row), "--streaming") {
			return "streaming"
		}
		return "non-streaming"
	})
	load := distinct(rows, func(row *Row) string {
		w := row.Result.Workload
		s := fmt.Sprintf("concurrency %d; %d warmup + %d measured requests per model", w.Concurrency, w.Warmup, w.Measured)
		if n := w.TrialCount(); n > 1 {
			s += fmt.Sprintf(", in each of %d trials", n)
		}
		return s
	})
	endpoint := distinct(rows, func(row *Row) string {
		return fmt.Sprintf("AIPerf %s, POST %s on %s", markdown.Code(row.Result.Endpoint), markdown.Code(row.Result.Route), markdown.Code(serverName(row.Result)))
	})
	return fmt.Sprintf("%s, %s, %s, %s; %s; hardware: %s", images, turns, streaming, load, endpoint, hardwareText(rows))
}

// imagesPerRequest says "one image per request" when the row's images
// are its requests: the dataset's images (provenance.dataset_image_sizes,
// one size per request line) are its warmup + measured lines, or the
// measured images (image_sizes, one per measured matched request) are its
// measured matched requests.
func imagesPerRequest(row *Row) string {
	sum := func(sizes []verdict.ImageSize) int {
		n := 0
		for _, s := range sizes {
			n += s.Count
		}
		return n
	}
	res := row.Result
	lines := 0
	for _, c := range res.RequestsByPhase {
		lines += c.Expected
	}
	dataset, measured := sum(res.Provenance.DatasetImageSizes), sum(res.ImageSizes)
	switch {
	case dataset > 0 && dataset == lines, measured > 0 && (measured == res.RequestsByPhase[verdict.PhaseMeasured].Matched || measured == lines):
		return "one image per request"
	case dataset == 0 && measured == 0:
		return "images per request not recorded"
	}
	return fmt.Sprintf("images per request not established (%d dataset images for %d request lines)", dataset, lines)
}

// aiperfArgv is the row's AIPerf argv as recorded (aiperf/argv.json, else
// the aiperf stage's command).
func aiperfArgv(row *Row) []string {
	if row.Reproduce != nil && len(row.Reproduce.AIPerfArgv) > 0 {
		return row.Reproduce.AIPerfArgv
	}
	for _, c := range row.Result.Provenance.Commands {
		if c.Stage == "aiperf" {
			return c.Argv
		}
	}
	return nil
}

// argValue is the word after flag in argv ("" when absent).
func argValue(argv []string, flag string) string {
	for i, a := range argv {
		if a == flag && i+1 < len(argv) {
			return argv[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// serverName is the served program's name: the server stage's argv[0]
// without its directory.
func serverName(res *verdict.Result) string {
	for _, c := range res.Provenance.Commands {
		if c.Stage == "server" && len(c.Argv) > 0 {
			return path.Base(c.Argv[0])
		}
	}
	return "the family's server"
}

// hardwareText is the devices the rows were measured on, from their GPU
// records: "one NVIDIA H200 (h200), the same device for every model", or
// each layout with the number of models on it and the distinct GPUs.
func hardwareText(rows []Row) string {
	var layouts []string
	count := map[string]int{}
	var uuids []string
	for _, row := range rows {
		prov := row.Result.Provenance
		l := gpusCell(prov)
		if l == Missing {
			l = "not recorded"
		}
		if sc := prov.HardwareScope; sc != "" && sc != l {
			l += " (" + sc + ")"
		}
		if _, ok := count[l]; !ok {
			layouts = append(layouts, l)
		}
		count[l]++
		for _, g := range prov.GPUs {
			if !slices.Contains(uuids, g.UUID) {
				uuids = append(uuids, g.UUID)
			}
		}
	}
	switch {
	case len(layouts) == 1 && len(uuids) == 0:
		return mdEscape(layouts[0]) // "cpu", "not recorded"
	case len(layouts) == 1 && len(uuids) == 1 && len(rows) == 1:
		return "one " + mdEscape(strings.TrimPrefix(layouts[0], "1× "))
	case len(layouts) == 1 && len(uuids) == 1:
		return "one " + mdEscape(strings.TrimPrefix(layouts[0], "1× ")) + ", the same device for every model"
	}
	parts := make([]string, len(layouts))
	for i, l := range layouts {
		parts[i] = fmt.Sprintf("%s for %d %s", mdEscape(l), count[l], text.Plural(count[l], "model", "models"))
	}
	out := strings.Join(parts, ", ")
	if len(uuids) > 0 {
		out += fmt.Sprintf(" (%d distinct %s)", len(uuids), text.Plural(len(uuids), "GPU", "GPUs"))
	}
	return out
}

// caveatText says what the figures are and are not: short integration
// measurements, what is outside every timing, what HTTP and Task time
// include, and where images/s comes from.
func caveatText(rows []Row) string {
	set := distinct(rows, func(row *Row) string {
		if row.Result.LatencyMS.Set == verdict.LatencySetMeasuredMatched {
			return "the measured requests whose native and HTTP answers matched"
		}
		return "the set " + markdown.Code(row.Result.LatencyMS.Set)
	})
	task := distinct(rows, func(row *Row) string { return taskScopeText(row.Result.LatencyMS) })
	return "short integration measurements at concurrency 1, not capacity or performance gates; " +
		"build, load, startup, the correctness case, the native replay and warmup are outside every timing; " +
		"latencies cover " + set + "; HTTP time is AIPerf's request latency, transport included (the client's own time, sending, waiting for and receiving the answer); " +
		"Task time is " + task + "; images/s is AIPerf's request throughput of the measured phase (one image per request)"
}

// taskScopeText says what a row's Task time measures, from its source and
// scope.
func taskScopeText(l verdict.Latency) string {
	where := "the server's request records"
	if l.TaskSource == verdict.TaskTimeNative {
		where = "the native replay's answers"
	}
	switch l.TaskScope {
	case verdict.TaskScopeServer:
		return "the Task call as the server times it inside its request handler (" + where + ")"
	case "public_task_call_wall":
		return "the public Task call's wall time, family preprocessing and generation included (" + where + ", scope `public_task_call_wall`)"
	case "":
		return "the Task time of " + where + " (scope not recorded)"
	}
	return "the Task time of " + where + ", scope " + markdown.Code(l.TaskScope)
}

// writeNotCounted writes what is outside the group's count, each row
// once: the excluded normal profiles with their reasons; the variants
// and partial profiles that ran and do not block (a failed one is in
// "What is missing"), and those that did not run (not coverage: listed,
// never blocking); and the capabilities the inventory declares
// unsupported, with the profiles that declare them.
func writeNotCounted(p *printer, r *GroupReport) {
	var excluded, apart, notRun []string
	for i := range r.Rows {
		row := &r.Rows[i]
		kind := mdEscape(row.Kind)
		if row.VariantOf != "" {
			kind += ", of " + mdEscape(row.VariantOf)
		}
		line := fmt.Sprintf("**%s** (%s): %s", mdEscape(row.Profile), kind, mdEscape(text.OneLine(summaryVerdict(row))))
		switch {
		case row.Counted && row.Status == StatusExcluded:
			excluded = append(excluded, fmt.Sprintf("**%s**: %s", mdEscape(row.Profile), mdEscape(text.OneLine(orMissing(row.Note)))))
		case row.NotRunApart():
			notRun = append(notRun, line+noteSuffix(row.Note))
		case !row.Counted && !row.Blocks():
			apart = append(apart, line)
		}
	}
	gaps := gapLines(r.Rows)
	if len(excluded)+len(apart)+len(notRun)+len(gaps) == 0 {
		return
	}
	p.f("\n### Not counted, and not supported\n\n")
	for _, g := range []struct {
		title string
		items []string
	}{
		{"Excluded normal profiles, with their reasons", excluded},
		{"Variants and partial profiles, listed apart (never counted as models)", apart},
		{"Not run: variants and partial profiles that did not run (not coverage; they never block complete)", notRun},
		{"Unsupported: the capability gaps the inventory declares (outside this qualification, never claimed)", gaps},
	} {
		if len(g.items) == 0 {
			continue
		}
		p.f("- **%s:**\n", g.title)
		for _, it := range g.items {
			p.f("  - %s\n", it)
		}
	}
}

// gapLines are the declared capability gaps, each with the profiles that
// declare it, each once ("every profile (N)" when every row does).
func gapLines(rows []Row) []string {
	var gaps []string
	who := map[string][]string{}
	for _, row := range rows {
		for _, g := range row.Gaps {
			if _, ok := who[g]; !ok {
				gaps = append(gaps, g)
			}
			if !slices.Contains(who[g], row.Profile) {
				who[g] = append(who[g], row.Profile)
			}
		}
	}
	out := make([]string, len(gaps))
	for i, g := range gaps {
		ids := who[g]
		list := mdEscape(strings.Join(ids, ", "))
		if len(ids) == len(rows) && len(rows) > 1 {
			list = fmt.Sprintf("every profile (%d)", len(rows))
		}
		out[i] = fmt.Sprintf("%s: %s", mdEscape(text.OneLine(g)), list)
	}
	return out
}

// writeSummaryReproduce writes one reproduce example: the command of the first
// model in scope that recorded one (a qualified one first), with the
// AIPerf argv it ran collapsed, and what its named roots are.
func writeSummaryReproduce(p *printer, r *GroupReport, s *summaryFacts) {
	var pick *Row
	for _, want := range []bool{true, false} {
		for i := range s.models {
			row := &s.models[i]
			if pick == nil && row.Reproduce != nil && row.Reproduce.Command != "" && (row.Status == StatusQualified) == want {
				pick = row
			}
		}
	}
	if pick == nil {
		return
	}
	p.f("\n### Reproduce\n\n")
	p.f("%s as it ran (every row's command is in `results.md`; a real run needs the family's bundles, tokenizers and corpus pinned in the inventory, and pip-installed AIPerf):\n\n",
		mdEscape(pick.Profile))
	if used := usedRoots(r.mapper, []Row{*pick}); len(used) > 0 {
		p.f("%s\n\n", rootsNote(used, r.mapper))
	}
	writeRowCommands(p, pick, r.mapper, true)
}
