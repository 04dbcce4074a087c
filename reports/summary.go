package reports

import (
	"bytes"
	"fmt"
	"io"
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

// renderSummary writes the completion summary. It never reads as a pass
// unless the group is proven complete (Incomplete is empty: the sealed
// inventory snapshot, every counted, non-excluded normal profile of it
// qualified by a row bound to its entry, no row of any kind failed, broke,
// was interrupted or not run, the inventory's reconciliation given and
// current), and then names the source commits the rows cover; otherwise
// it opens with what is missing.
func renderSummary(w io.Writer, r *GroupReport) error {
	o := r.Summary
	var buf bytes.Buffer
	p := &printer{w: &buf}
	c := r.Coverage
	considered := c.Counted.Total - c.Counted.ByStatus[StatusExcluded]
	qualified := c.Counted.ByStatus[StatusQualified]
	t := summaryTotals(r.Rows)
	missing := Incomplete(r)
	req := fmt.Sprintf("%d measured + %d warmup requests; %s; %s",
		t.measured, t.warmup, matchesText(t.matched, t.measured+t.warmup), clientErrors(t.errored))
	if len(missing) == 0 {
		lead := fmt.Sprintf("All %d normal profiles", considered)
		if considered == 1 {
			lead = "The 1 normal profile"
		}
		p.f("**%s: complete.** %s in scope passed owning-family correctness and real AIPerf %s qualification (%s). %s\n\n",
			mdEscape(r.Group), lead, mdEscape(strings.Join(t.versions, ", ")), req, commitsSentence(t, o.Reconcile))
	} else {
		p.f("**%s: NOT complete — %d of %d normal %s in scope qualified.** What is missing:\n\n", mdEscape(r.Group), qualified, considered,
			text.Plural(considered, "profile", "profiles"))
		for _, m := range missing {
			p.f("- %s\n", m)
		}
		p.f("\n")
	}
	p.f("- **Scope:** %s.\n", mdEscape(c.Summary))
	p.f("- **Requests** (normal profiles in scope): %s", req)
	if t.mismatched+t.missing+t.other > 0 {
		p.f("; %d mismatched, %d missing joins, %d duplicate, meaningless or echoing another id", t.mismatched, t.missing, t.other)
	}
	p.f(".\n")
	p.f("- **Inventory:** %s\n", reconcileLine(o.Reconcile))
	p.f("- **Measurement source commits** (each row's own, never relabelled):")
	if len(t.commits) == 0 {
		p.f(" none recorded.\n")
	} else {
		p.f("\n")
		for _, k := range t.commitOrder {
			label := markdown.Code(k)
			if k == "" {
				label = "not recorded"
			}
			p.f("  - %s: %s\n", label, mdEscape(strings.Join(t.commits[k], ", ")))
		}
	}
	if len(t.versions) > 0 {
		p.f("- **AIPerf:** %s.\n", mdEscape(strings.Join(t.versions, ", ")))
	}
	if len(t.hardware) > 0 {
		p.f("- **Hardware:** %s.\n", mdEscape(strings.Join(t.hardware, "; ")))
	}
	var excluded []string
	for _, row := range r.Rows {
		if row.Status == StatusExcluded {
			excluded = append(excluded, fmt.Sprintf("%s (%s): %s", row.Profile, row.Kind, orMissing(row.Note)))
		}
	}
	if len(excluded) > 0 {
		p.f("- **Excluded, with their reasons:**\n")
		for _, e := range excluded {
			p.f("  - %s\n", mdEscape(text.OneLine(e)))
		}
	}
	_, other := splitRows(r.Rows)
	if len(other) > 0 {
		p.f("- **Variants and partial profiles** (listed apart, never counted):\n")
		for _, row := range other {
			of := ""
			if row.VariantOf != "" {
				of = ", of " + row.VariantOf
			}
			p.f("  - %s (%s%s): %s\n", mdEscape(row.Profile), mdEscape(row.Kind), mdEscape(of), mdEscape(verdictCell(&row)))
		}
	}
	p.f("- **Evidence**")
	if o.Pack != "" {
		p.f(" (the pack %s; re-judge it with %s)", markdown.Code(o.Pack),
			markdown.Code(fmt.Sprintf("tar xzf %s && trtmc-qual report --from %s --group %s --rejudge",
				text.ShellQuote(o.Pack), text.ShellQuote(packDir(o.Pack)), r.Group)))
	}
	p.f(":")
	var links []string
	for _, row := range r.Rows {
		if row.Evidence != "" {
			links = append(links, markdown.Link(row.Profile, joinLink(o.Link, row.Evidence)))
		}
	}
	if len(links) == 0 {
		p.f(" none.\n")
	} else {
		p.f(" %s; tables: %s, %s.\n", strings.Join(links, ", "),
			markdown.Link("results.md", joinLink(o.Link, r.Group+"/results.md")), markdown.Link("results.html", joinLink(o.Link, r.Group+"/results.html")))
	}
	if p.err != nil {
		return p.err
	}
	_, err := io.WriteString(w, text.Printable(buf.String()))
	return err
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
	measured, warmup, matched, errored, mismatched, missing, other int
	versions, hardware                                             []string
	commits                                                        map[string][]string
	commitOrder                                                    []string
}

// summaryTotals adds up the normal profiles in scope (counted, not
// excluded, with a result) and collects what every measured row records.
func summaryTotals(rows []Row) totals {
	t := totals{commits: map[string][]string{}}
	for _, row := range rows {
		res := row.Result
		if res == nil || !res.Measured() {
			continue
		}
		if v := aiperfCell(res.Provenance); !slices.Contains(t.versions, v) {
			t.versions = append(t.versions, v)
		}
		hw := gpusCell(res.Provenance)
		if s := res.Provenance.HardwareScope; s != "" && s != hw {
			hw += " (" + s + ")"
		}
		if hw != Missing && !slices.Contains(t.hardware, hw) {
			t.hardware = append(t.hardware, hw)
		}
		if !row.Counted || row.Status == StatusExcluded {
			continue
		}
		k := res.Provenance.SourceCommit
		if _, ok := t.commits[k]; !ok {
			t.commitOrder = append(t.commitOrder, k)
		}
		t.commits[k] = append(t.commits[k], row.Profile)
		t.measured += res.RequestsByPhase[verdict.PhaseMeasured].Sent
		t.warmup += res.RequestsByPhase[verdict.PhaseWarmup].Sent
		c := res.Requests
		t.matched += c.Matched
		t.errored += c.Errored
		t.mismatched += c.Mismatched
		t.missing += c.MissingJoins()
		t.other += c.Duplicates + c.Meaningless + c.EchoMismatched + c.ServerBusy
	}
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
// measured at, each with its profiles (a row that records none is said to),
// and the commit the inventory was reconciled at: a complete group never
// leaves unsaid which commits its rows cover.
func commitsSentence(t totals, f *ReconcileFact) string {
	var parts []string
	for _, k := range t.commitOrder {
		c := "`" + k + "`"
		if k == "" {
			c = "a commit not recorded"
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", c, strings.Join(t.commits[k], ", ")))
	}
	var s string
	switch len(parts) {
	case 0:
		s = "No row records its TRTMC source commit."
	case 1:
		s = "Measured at TRTMC source commit " + parts[0] + "."
	default:
		s = fmt.Sprintf("Measured at %d TRTMC source commits: %s.", len(parts), strings.Join(parts, "; "))
	}
	if f != nil {
		s += fmt.Sprintf(" The inventory was reconciled with TRTMC's specs at `%s`.", f.Commit)
	}
	return s
}

// Incomplete lists what keeps a group from complete, for its completion
// summary (r.Summary says what it knows beyond the rows); empty when the
// group is complete. Complete means proven complete: the sealed inventory
// snapshot in the evidence (without it a planned profile that never ran
// cannot be seen), every normal profile of the snapshot in scope with a
// qualified row bound to its snapshot entry (a row that is not bound is
// an error row, inventory_unbound), no row of any kind failed, broken,
// interrupted or not run (the coverage rule), at least one normal profile
// in scope, and the inventory's reconciliation given and current. `report
// -o summary` exits 1 when anything is missing.
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
		switch row.Status {
		case StatusQualified, StatusExcluded:
			continue
		}
		why := row.Note
		if res := row.Result; res != nil && len(res.Reasons) > 0 {
			var parts []string
			for _, rs := range res.Reasons {
				parts = append(parts, fmt.Sprintf("%s/%s: %s", rs.Stage, rs.Code, text.OneLine(rs.Message)))
			}
			why = strings.Join(parts, "; ")
		}
		line := fmt.Sprintf("**%s** (%s): %s", mdEscape(row.Profile), mdEscape(row.Kind), mdEscape(verdictCell(&row)))
		if row.Result == nil && row.Status != StatusNotRun {
			line += " (no result in the evidence)"
		}
		if why != "" {
			line += " — " + mdEscape(why)
		}
		out = append(out, line)
	}
	if r.Coverage.Counted.Total-r.Coverage.Counted.ByStatus[StatusExcluded] == 0 {
		out = append(out, "no normal profile in scope: nothing qualifies the group")
	}
	f := o.Reconcile
	switch {
	case f == nil:
		out = append(out, "the inventory's reconciliation with TRTMC's specs: none given (pass `--reconcile FILE` from `inventory reconcile -o json`, or `--repo \"$TRTMC_REPO\"`)")
	case f.NeedAction > 0:
		out = append(out, fmt.Sprintf("the inventory does not match TRTMC's specs at %s: %d %s need action (`inventory reconcile`)", markdown.Code(f.Commit), f.NeedAction, text.Plural(f.NeedAction, "profile", "profiles")))
	case f.Head == "":
		out = append(out, fmt.Sprintf("whether the reconciliation at %s is current: not checked (pass `--repo \"$TRTMC_REPO\"`)", markdown.Code(f.Commit)))
	case f.Head != f.Commit:
		out = append(out, fmt.Sprintf("a current reconciliation: the inventory was reconciled at %s, but %s is now %s (run `inventory reconcile` again)", markdown.Code(f.Commit), markdown.Code(f.Ref), markdown.Code(f.Head)))
	}
	return out
}

func reconcileLine(f *ReconcileFact) string {
	if f == nil {
		return "reconciliation with TRTMC's specs not given."
	}
	s := fmt.Sprintf("reconciled against TRTMC %s at %s: %d normal %s in the specs, %d needing action",
		markdown.Code(orMissing(f.Ref)), markdown.Code(f.Commit), f.Normal, text.Plural(f.Normal, "profile", "profiles"), f.NeedAction)
	switch {
	case f.Head == "":
		s += "; whether it is current was not checked."
	case f.Head == f.Commit:
		s += fmt.Sprintf("; %s is still at that commit (current).", markdown.Code(orMissing(f.Ref)))
	default:
		s += fmt.Sprintf("; %s is now at %s (not current).", markdown.Code(orMissing(f.Ref)), markdown.Code(f.Head))
	}
	return s
}
