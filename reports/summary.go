package reports

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/markdown"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// FormatSummary is the completion summary (`report -o summary`): the
// Markdown a pull request or an issue closes with.
const FormatSummary = "summary"

// SummaryOptions are what the completion summary knows beyond the rows.
type SummaryOptions struct {
	// Reconcile is the inventory's reconciliation with TRTMC's specs; nil
	// when none was given (the summary then says so, and is not complete).
	Reconcile *ReconcileFact
	// Drift is the drift check of the group's specs between two refs
	// (`inventory drift -o json`); nil when none was given (the summary
	// then says the specs were not checked, and never calls them
	// unchanged).
	Drift *DriftFact
	// Link is the base the evidence links start from: the extracted
	// evidence pack's location (a URL or a path); "" links relative to
	// the pack's root (<group>/<profile>/).
	Link string
	// Pack names the evidence pack the summary goes with ("" none).
	Pack string
}

// ReconcileFact is a reconciliation of the group's inventory with TRTMC's
// specs (`inventory reconcile -o json`, or one run for the summary).
type ReconcileFact struct {
	Ref    string
	Commit string
	// Normal is the number of normal profiles in the specs; NeedAction
	// the rows that need someone to act (missing, stale, drift...).
	Normal, NeedAction int
	// Head is what Ref resolves to now ("" when not checked).
	Head string
}

// Current says whether the reconciliation holds for the ref's head now.
func (f *ReconcileFact) Current() bool {
	return f != nil && f.Head != "" && f.Head == f.Commit && f.NeedAction == 0
}

// DriftFact is a drift check of the group's specs (`inventory drift -o
// json`): every file of the group's family folders (manifests, MODEL.toml,
// thresholds, references, family tests) that differs between two refs.
type DriftFact struct {
	Base, BaseCommit, Head, HeadCommit string
	// Families is the number of family folders checked; Changes the files
	// that differ, ByCategory by drift category (manifest, threshold...).
	Families, Changes int
	ByCategory        map[string]int
}

// Unchanged says the drift check proves the group's specs unchanged: it
// checked at least one family and found no file that differs.
func (f *DriftFact) Unchanged() bool { return f != nil && f.Families > 0 && f.Changes == 0 }

// renderSummary writes the completion summary. It never reads as a pass
// unless the group is proven complete (Incomplete is empty: the sealed
// inventory snapshot, every counted, non-excluded normal profile of it
// qualified by a row bound to its entry, no row failed, broke or was
// interrupted and no normal profile left unrun (Row.Blocks), the
// inventory's reconciliation given and current). Its parts, each a block
// of its own so that no two lists run together: the headline (complete,
// with the seeds' sentence and the source commits; or NOT complete), what
// is missing, one line per model, the workload and method, what is not
// counted (exclusions, variants and partials, what did not run, the
// capability gaps), one reproduce example and the links into the pack.
func renderSummary(w io.Writer, r *GroupReport) error {
	var buf bytes.Buffer
	p := &printer{w: &buf}
	s := newSummaryFacts(r)
	if len(s.missing) == 0 {
		p.f("**%s: complete.** %s %s\n", mdEscape(r.Group), completeSentence(s), commitsSentence(s.totals, r.Summary.Reconcile))
	} else {
		considered := r.Coverage.Counted.Total - r.Coverage.Counted.ByStatus[StatusExcluded]
		p.f("**%s: NOT complete — %d of %d normal %s in scope qualified.** %s\n", mdEscape(r.Group),
			r.Coverage.Counted.ByStatus[StatusQualified], considered, text.Plural(considered, "profile", "profiles"), requestsSentence(s.totals))
		p.f("\n### What is missing\n\n")
		for _, m := range s.missing {
			p.f("- %s\n", m)
		}
	}
	writeModels(p, s)
	writeMethod(p, r, s)
	writeNotCounted(p, r)
	writeSummaryReproduce(p, r, s)
	writeEvidence(p, r)
	if p.err != nil {
		return p.err
	}
	_, err := io.WriteString(w, text.Printable(buf.String()))
	return err
}

// summaryFacts are what the summary's parts share: the rows in scope, what
// is missing, and the totals over the counted rows.
type summaryFacts struct {
	// models are the counted, non-excluded normal profiles: the group.
	models  []Row
	missing []string
	totals  totals
}

func newSummaryFacts(r *GroupReport) *summaryFacts {
	s := &summaryFacts{missing: Incomplete(r), totals: summaryTotals(r.Rows)}
	s.totals.unchanged = r.Summary.Drift.Unchanged()
	for _, row := range r.Rows {
		if row.Counted && row.Status != StatusExcluded {
			s.models = append(s.models, row)
		}
	}
	return s
}

// completeSentence is the seeds' sentence of a complete group: "All 9
// existing normal profiles in scope passed unchanged owning-family
// correctness and real pip-installed AIPerf 0.13.0 qualification (9×50
// measured + 9×5 warmup requests; all 495 complete native/HTTP matches;
// zero client errors)." Every word that claims something is derived:
// "existing" from the current reconciliation (complete requires it),
// "unchanged" only when a drift check proves the specs unchanged,
// "pip-installed" only when every row records AIPerf's installed
// distribution at the version it ran.
func completeSentence(s *summaryFacts) string {
	t := s.totals
	n := len(s.models)
	lead := fmt.Sprintf("All %d existing normal profiles in scope", n)
	if n == 1 {
		lead = "The 1 existing normal profile in scope"
	}
	correctness := "owning-family correctness"
	if t.unchanged {
		correctness = "unchanged " + correctness
	}
	aiperf := "real AIPerf"
	if t.pipInstalled {
		aiperf = "real pip-installed AIPerf"
	}
	return fmt.Sprintf("%s passed %s and %s %s qualification (%s).", lead, correctness, aiperf,
		mdEscape(strings.Join(t.versions, ", ")), requestsText(t))
}

// requestsSentence is the requests of the counted rows, as a sentence of
// its own ("" when none was measured).
func requestsSentence(t totals) string {
	if t.rows == 0 {
		return ""
	}
	return fmt.Sprintf("Requests of the normal profiles in scope: %s.", requestsText(t))
}

// requestsText is "9×50 measured + 9×5 warmup requests; all 495 complete
// native/HTTP matches; zero client errors" (the sums when the rows sent
// different numbers), and what did not match.
func requestsText(t totals) string {
	sent := fmt.Sprintf("%d measured + %d warmup requests", t.measured, t.warmup)
	if t.rows > 1 && t.sameWorkload {
		sent = fmt.Sprintf("%d×%d measured + %d×%d warmup requests", t.rows, t.measured/t.rows, t.rows, t.warmup/t.rows)
	}
	out := fmt.Sprintf("%s; %s; %s", sent, matchesText(t.matched, t.measured+t.warmup), clientErrors(t.errored))
	if t.mismatched+t.missing+t.other > 0 {
		out += fmt.Sprintf("; %d mismatched, %d missing joins, %d duplicate, meaningless or echoing another id", t.mismatched, t.missing, t.other)
	}
	return out
}

// writeEvidence links each row's evidence directory and the group's
// tables, relative to the pack's root (or under --link), and names the
// pack and how to re-judge it.
func writeEvidence(p *printer, r *GroupReport) {
	o := r.Summary
	var links []string
	for _, row := range r.Rows {
		if row.Evidence != "" {
			links = append(links, markdown.Link(row.Profile, joinLink(o.Link, row.Evidence)))
		}
	}
	p.f("\n### Evidence\n\n")
	if allRejudged(r.Rows) {
		p.f("Every verdict and figure above is re-derived from its row's raw artifacts, as `report --rejudge` does.\n\n")
	}
	if o.Pack != "" {
		p.f("The evidence pack %s holds every row's sealed evidence; re-judge it with %s.\n\n", markdown.Code(o.Pack),
			markdown.Code(fmt.Sprintf("tar xzf %s && trtmc-qual report --from %s --group %s --rejudge",
				text.ShellQuote(o.Pack), text.ShellQuote(packDir(o.Pack)), r.Group)))
	}
	if len(links) == 0 {
		p.f("No row has evidence.\n")
		return
	}
	p.f("Rows: %s. Tables: %s, %s.\n", strings.Join(links, ", "),
		markdown.Link("results.md", joinLink(o.Link, r.Group+"/results.md")), markdown.Link("results.html", joinLink(o.Link, r.Group+"/results.html")))
}

// allRejudged says every row with a result was re-derived from its raw
// artifacts (and at least one has a result): only then may the summary
// say that every verdict and figure is.
func allRejudged(rows []Row) bool {
	some := false
	for _, row := range rows {
		if row.Result == nil {
			continue
		}
		if row.Result.Rejudged == nil {
			return false
		}
		some = true
	}
	return some
}

// packDir is the directory an evidence pack extracts to: its file name
// without .tar.gz.
func packDir(pack string) string {
	base := path.Base(pack)
	for _, ext := range []string{".tar.gz", ".tgz"} {
		if strings.HasSuffix(base, ext) {
			return strings.TrimSuffix(base, ext)
		}
	}
	return base
}

func joinLink(base, rel string) string {
	if base == "" {
		return rel
	}
	return strings.TrimSuffix(base, "/") + "/" + rel
}

func matchesText(matched, total int) string {
	if matched == total && total > 0 {
		return fmt.Sprintf("all %d complete native/HTTP %s", matched, text.Plural(matched, "match", "matches"))
	}
	return fmt.Sprintf("%d of %d requests with complete native/HTTP matches", matched, total)
}

func clientErrors(n int) string {
	if n == 0 {
		return "zero client errors"
	}
	return fmt.Sprintf("%d client %s", n, text.Plural(n, "error", "errors"))
}

type totals struct {
	// rows are the counted rows in scope with measurements; sameWorkload
	// says each sent the same numbers of measured and warmup requests.
	rows                                                           int
	sameWorkload                                                   bool
	measured, warmup, matched, errored, mismatched, missing, other int
	versions                                                       []string
	commits                                                        map[string][]string
	commitOrder                                                    []string
	// pipInstalled: every counted row records AIPerf's installed
	// distribution (dist-info) at the version it ran; unchanged: the
	// drift check proves the specs unchanged (set by the caller).
	pipInstalled, unchanged bool
}

// summaryTotals adds up the normal profiles in scope (counted, not
// excluded, with a result) and collects what every measured row records.
func summaryTotals(rows []Row) totals {
	t := totals{commits: map[string][]string{}, sameWorkload: true, pipInstalled: true}
	first := true
	var perMeasured, perWarmup int
	for _, row := range rows {
		res := row.Result
		if res == nil || !res.Measured() {
			continue
		}
		if v := aiperfCell(res.Provenance); !slices.Contains(t.versions, v) {
			t.versions = append(t.versions, v)
		}
		if !row.Counted || row.Status == StatusExcluded {
			continue
		}
		t.rows++
		k := res.Provenance.SourceCommit
		if _, ok := t.commits[k]; !ok {
			t.commitOrder = append(t.commitOrder, k)
		}
		t.commits[k] = append(t.commits[k], row.Profile)
		m, w := res.RequestsByPhase[verdict.PhaseMeasured].Sent, res.RequestsByPhase[verdict.PhaseWarmup].Sent
		if !first && (m != perMeasured || w != perWarmup) {
			t.sameWorkload = false
		}
		first, perMeasured, perWarmup = false, m, w
		t.measured += m
		t.warmup += w
		c := res.Requests
		t.matched += c.Matched
		t.errored += c.Errored
		t.mismatched += c.Mismatched
		t.missing += c.MissingJoins()
		t.other += c.Duplicates + c.Meaningless + c.EchoMismatched + c.ServerBusy
		if d := res.Provenance.AIPerfDist; d == nil || d.Error != "" || d.Version != res.Provenance.AIPerfVersion || d.Version == "" {
			t.pipInstalled = false
		}
	}
	t.pipInstalled = t.pipInstalled && t.rows > 0
	slices.SortStableFunc(t.commitOrder, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == "":
			return 1
		case b == "":
			return -1
		}
		return strings.Compare(a, b)
	})
	return t
}

// commitsSentence names the TRTMC source commits the counted rows were
// measured at, each with its profiles, and the rows that record none (said
// apart, never counted as a commit nor folded into another's), then the
// commit the inventory was reconciled at: a complete group never leaves
// unsaid which commits its rows cover.
func commitsSentence(t totals, f *ReconcileFact) string {
	var parts []string
	for _, k := range t.commitOrder {
		if k != "" {
			parts = append(parts, fmt.Sprintf("%s (%s)", markdown.Code(k), mdEscape(strings.Join(t.commits[k], ", "))))
		}
	}
	unrecorded := t.commits[""]
	var s string
	switch len(parts) {
	case 0:
		s = "No row records its TRTMC source commit"
		if len(unrecorded) > 0 {
			s += " (" + mdEscape(strings.Join(unrecorded, ", ")) + ")"
		}
		s += "."
	case 1:
		s = "Measured at TRTMC source commit " + parts[0] + "."
	default:
		s = fmt.Sprintf("Measured at %d TRTMC source commits: %s.", len(parts), strings.Join(parts, "; "))
	}
	if len(parts) > 0 && len(unrecorded) > 0 {
		s += fmt.Sprintf(" The source commit of %s is not recorded.", mdEscape(strings.Join(unrecorded, ", ")))
	}
	if f != nil {
		s += fmt.Sprintf(" The inventory was reconciled with TRTMC's specs at %s.", markdown.Code(f.Commit))
	}
	return s
}

// Incomplete lists what keeps a group from complete, for its completion
// summary (r.Summary says what it knows beyond the rows); empty when the
// group is complete. Complete means proven complete: the sealed inventory
// snapshot in the evidence (without it a planned profile that never ran
// cannot be seen), every normal profile of the snapshot in scope with a
// qualified row bound to its snapshot entry (a row that is not bound is
// an error row, inventory_unbound), no row that blocks (Row.Blocks: a row
// of any kind that failed, broke or was interrupted, a normal profile
// that did not run; a variant or partial profile that did not run is not
// coverage, and is listed apart), at least one normal profile in scope,
// and the inventory's reconciliation given and current. `report -o
// summary` exits 1 when anything is missing (unless --allow-incomplete).
func Incomplete(r *GroupReport) []string {
	return summaryMissing(r, r.Summary)
}

// summaryMissing lists what keeps the group from complete (Incomplete).
func summaryMissing(r *GroupReport, o SummaryOptions) []string {
	var out []string
	switch {
	case !r.Coverage.InventorySnapshot:
		out = append(out, fmt.Sprintf("the inventory snapshot (`%s/%s`): not in the evidence, so a planned profile that never ran cannot be seen (every `run` writes it; run the group again)", r.Group, InventoryFile))
	case !r.Coverage.InventorySnapshotSealed:
		out = append(out, fmt.Sprintf("a sealed inventory snapshot: `%s/%s` is not the one the latest run wrote, or no row records it (see the notes; run the group again)", r.Group, InventoryFile))
	}
	for _, row := range r.Rows {
		if row.Blocks() {
			out = append(out, missingRow(&row))
		}
	}
	if r.Coverage.Counted.Total-r.Coverage.Counted.ByStatus[StatusExcluded] == 0 {
		out = append(out, "no normal profile in scope: nothing qualifies the group")
	}
	if m := reconcileMissing(o.Reconcile); m != "" {
		out = append(out, m)
	}
	return out
}

// missingRow is the line of a row that blocks: its kind, verdict and
// reasons (or its note).
func missingRow(row *Row) string {
	why := row.Note
	if res := row.Result; res != nil && len(res.Reasons) > 0 {
		var parts []string
		for _, rs := range res.Reasons {
			parts = append(parts, fmt.Sprintf("%s/%s: %s", rs.Stage, rs.Code, text.OneLine(rs.Message)))
		}
		why = strings.Join(parts, "; ")
	}
	line := fmt.Sprintf("**%s** (%s): %s", mdEscape(row.Profile), mdEscape(row.Kind), mdEscape(summaryVerdict(row)))
	if row.Result == nil && row.Status != StatusNotRun {
		line += " (no result in the evidence)"
	}
	if why != "" {
		line += " — " + mdEscape(why)
	}
	return line
}

// summaryVerdict is a row's verdict (an exclusion with its reason) as the
// summary says it: without verdictCell's "(rejudged)" when the re-derived
// verdict is the stored one, since every row a publication shows is
// re-derived (the Evidence part says so once); "(rejudged; was …)" stays.
func summaryVerdict(row *Row) string {
	r := *row
	if rj := r.Result; rj != nil && rj.Rejudged != nil && rj.Rejudged.OriginalVerdict == rj.Verdict {
		res := *r.Result
		res.Rejudged = nil
		r.Result = &res
	}
	return verdictCell(&r)
}

// reconcileMissing says what the reconciliation lacks ("" when it is
// given, needs no action and is current).
func reconcileMissing(f *ReconcileFact) string {
	switch {
	case f == nil:
		return "the inventory's reconciliation with TRTMC's specs: none given (pass `--reconcile FILE` from `inventory reconcile -o json`, or `--repo \"$TRTMC_REPO\"`)"
	case f.NeedAction > 0:
		return fmt.Sprintf("the inventory does not match TRTMC's specs at %s: %d %s need action (`inventory reconcile`)", markdown.Code(f.Commit), f.NeedAction, text.Plural(f.NeedAction, "profile", "profiles"))
	case f.Head == "":
		return fmt.Sprintf("whether the reconciliation at %s is current: not checked (pass `--repo \"$TRTMC_REPO\"`)", markdown.Code(f.Commit))
	case f.Head != f.Commit:
		return fmt.Sprintf("a current reconciliation: the inventory was reconciled at %s, but %s is now %s (run `inventory reconcile` again)", markdown.Code(f.Commit), markdown.Code(f.Ref), markdown.Code(f.Head))
	}
	return ""
}

// reconcileLine is the inventory line of a reconciliation that is given,
// needs no action and is current (any other is in "What is missing").
func reconcileLine(f *ReconcileFact) string {
	return fmt.Sprintf("reconciled against TRTMC %s at %s: %d normal %s in the specs, %d needing action; %s is still at that commit (current).",
		markdown.Code(orMissing(f.Ref)), markdown.Code(f.Commit), f.Normal, text.Plural(f.Normal, "profile", "profiles"), f.NeedAction,
		markdown.Code(orMissing(f.Ref)))
}

// driftLine says whether the group's model specs, thresholds and
// contracts are unchanged, as the drift check found them.
func driftLine(f *DriftFact) string {
	switch {
	case f == nil:
		return "not checked (pass `--drift FILE` from `inventory drift -o json`)."
	case f.Families == 0:
		return fmt.Sprintf("not established: the drift check between %s and %s found no family folder of the group.", refAt(f.Base, f.BaseCommit), refAt(f.Head, f.HeadCommit))
	case f.Changes == 0:
		return fmt.Sprintf("unchanged between %s and %s: no manifest, threshold, reference or test file of the %d %s checked differs (`inventory drift`).",
			refAt(f.Base, f.BaseCommit), refAt(f.Head, f.HeadCommit), f.Families, text.Plural(f.Families, "family", "families"))
	}
	var cats []string
	for _, c := range slices.Sorted(maps.Keys(f.ByCategory)) {
		cats = append(cats, fmt.Sprintf("%s %d", mdEscape(c), f.ByCategory[c]))
	}
	return fmt.Sprintf("**changed** between %s and %s: %d %s of the %d %s checked %s (%s; `inventory drift` lists them).",
		refAt(f.Base, f.BaseCommit), refAt(f.Head, f.HeadCommit), f.Changes, text.Plural(f.Changes, "file", "files"),
		f.Families, text.Plural(f.Families, "family", "families"), text.Plural(f.Changes, "differs", "differ"), strings.Join(cats, ", "))
}

// refAt is "`main` (`a832817e6ed9`)".
func refAt(ref, commit string) string {
	return fmt.Sprintf("%s (%s)", markdown.Code(orMissing(ref)), markdown.Code(orMissing(short(commit))))
}
