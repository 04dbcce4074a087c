package publish

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Publish what is re-derived (issue 32 item 5): what is published for
// others — the evidence pack, a docs page's block, the completion summary
// — shows the rows re-derived from their raw artifacts (qual's rejudge,
// by the family configuration's criteria), and is refused when a row's
// stored verdict or figures are not the re-derived ones: a stored figure
// edited and resealed is never published.

// FigureError refuses a publication: rows whose stored verdict or figures
// differ from those re-derived from their evidence. Nothing is written.
type FigureError struct {
	Group string
	// Rows maps each differing profile to what differs, one "what: stored
	// S, re-derived D" each.
	Rows map[string][]string
}

func (e *FigureError) Error() string {
	var b strings.Builder
	n := len(e.Rows)
	fmt.Fprintf(&b, "refused: group %s: %d %s stored verdict or figures are not what %s evidence gives when re-derived; nothing was published",
		e.Group, n, text.Plural(n, "row's", "rows'"), text.Plural(n, "its", "their"))
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for k := range e.Rows {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "\n  %s: %s", id, strings.Join(e.Rows[id], "; "))
	}
	b.WriteString("\n(`report --rejudge` shows the re-derived rows; a stored result.json is never rewritten: run the profiles again)")
	return b.String()
}

// CheckRederived compares every row of a group's stored report with the
// same row re-derived from its evidence, and returns a *FigureError
// naming each difference of verdict or figure (nil when there is none).
// The two reports come from the same walk of the same roots.
func CheckRederived(stored, derived *reports.GroupReport) error {
	e := &FigureError{Group: stored.Group, Rows: map[string][]string{}}
	byID := map[string]*reports.Row{}
	for i := range derived.Rows {
		byID[derived.Rows[i].Profile] = &derived.Rows[i]
	}
	for i := range stored.Rows {
		s := &stored.Rows[i]
		d := byID[s.Profile]
		switch {
		case d == nil:
			e.Rows[s.Profile] = []string{"the row: stored, not re-derived"}
		case (s.Result == nil) != (d.Result == nil):
			e.Rows[s.Profile] = []string{"the result: stored and re-derived disagree on whether there is one"}
		case s.Result != nil:
			if diffs := FigureDifferences(s.Result, d.Result); len(diffs) > 0 {
				e.Rows[s.Profile] = diffs
			}
		}
		delete(byID, s.Profile)
	}
	for id := range byID {
		e.Rows[id] = []string{"the row: re-derived, not stored"}
	}
	if len(e.Rows) > 0 {
		return e
	}
	return nil
}

// FigureDifferences names what a published row shows that differs between
// the stored row and the row re-derived from its evidence: the verdict,
// the request counts (both phases), the unclaimed ids, HTTP and Task
// p50/p95 and their counts, images/s, output tokens or boxes, the
// correctness outcome and each gate's value; and, where the stored row has
// them, p90/p99, each figure's interval and drift check, images/s's
// interval, the spreads across trials and each trial's figures. The stored verdict is Judge's
// over the stored facts, a retired seal aside (a re-derivation is what
// such a row is trusted by).
func FigureDifferences(stored, derived *verdict.Result) []string {
	sv := *stored
	sv.Problems = slices.DeleteFunc(slices.Clone(stored.Problems), func(p verdict.Problem) bool { return p.Code == verdict.CodeSealLegacy })
	verdict.Judge(&sv)
	var out []string
	cmp := func(what string, s, d any) {
		sj, _ := json.Marshal(s)
		dj, _ := json.Marshal(d)
		if string(sj) != string(dj) {
			out = append(out, fmt.Sprintf("%s: stored %s, re-derived %s", what, sj, dj))
		}
	}
	if sv.Verdict != derived.Verdict {
		why := ""
		if len(derived.Reasons) > 0 {
			why = " (" + string(derived.Reasons[0].Code) + ": " + text.Clip(derived.Reasons[0].Message, 200) + ")"
		}
		out = append(out, fmt.Sprintf("verdict: stored %s, re-derived %s%s", sv.Verdict, derived.Verdict, why))
	}
	cmp("requests", stored.Requests, derived.Requests)
	for _, ph := range []string{verdict.PhaseWarmup, verdict.PhaseMeasured} {
		cmp("requests ("+ph+")", stored.RequestsByPhase[ph], derived.RequestsByPhase[ph])
	}
	cmp("unclaimed", stored.Unclaimed, derived.Unclaimed)
	l, m := stored.LatencyMS, derived.LatencyMS
	cmp("HTTP p50/p95 ms", []any{l.HTTP.P50, l.HTTP.P95, l.HTTP.Count}, []any{m.HTTP.P50, m.HTTP.P95, m.HTTP.Count})
	cmp("Task p50/p95 ms", []any{l.Task.P50, l.Task.P95, l.Task.Count}, []any{m.Task.P50, m.Task.P95, m.Task.Count})
	cmp("images/s", stored.ImagesPerSec, derived.ImagesPerSec)
	// How sure each figure is (issue 35): compared when the stored row
	// has it (a row of an earlier version does not: its published copy is
	// the re-derived row, which has).
	for _, s := range []struct {
		name string
		s, d verdict.Percentiles
	}{{"HTTP", l.HTTP, m.HTTP}, {"Task", l.Task, m.Task}} {
		if hasIntervals(s.s) {
			cmp(s.name+" p90/p99 ms, intervals, drift and spread across trials", sureFigures(s.s), sureFigures(s.d))
		}
	}
	if stored.ImagesPerSecInterval != nil || stored.ImagesPerSecAcrossTrials != nil {
		cmp("images/s interval and spread across trials", []any{stored.ImagesPerSecInterval, stored.ImagesPerSecAcrossTrials},
			[]any{derived.ImagesPerSecInterval, derived.ImagesPerSecAcrossTrials})
	}
	if len(stored.Trials) > 0 || len(derived.Trials) > 0 {
		n := max(len(stored.Trials), len(derived.Trials))
		for k := range n {
			cmp(fmt.Sprintf("trial %d of %d", k+1, n), trialFigures(stored.Trials, k), trialFigures(derived.Trials, k))
		}
	}
	cmp("output tokens", stored.OutputTokens, derived.OutputTokens)
	cmp("boxes", stored.Boxes, derived.Boxes)
	cmp("correctness", correctnessFigures(stored.Correctness), correctnessFigures(derived.Correctness))
	return out
}

// hasIntervals reports whether a stored series has the figures of issue 35.
func hasIntervals(p verdict.Percentiles) bool {
	return p.P90 != nil || p.P99 != nil || p.Intervals != nil || p.Drift != nil || p.AcrossTrials != nil
}

// sureFigures are a series' p90 and p99, each figure's interval, the
// drift check and the spread across trials.
func sureFigures(p verdict.Percentiles) any {
	return []any{p.P90, p.P99, p.Intervals, p.Drift, p.AcrossTrials}
}

// trialFigures are the published facts of trial k of a row (nil when the
// row has no such trial): its counts, every latency figure with its
// interval, and images/s.
func trialFigures(trials []verdict.Trial, k int) any {
	if k >= len(trials) {
		return nil
	}
	t := trials[k]
	l := t.LatencyMS
	return []any{t.Trial, t.Requests, t.RequestsByPhase, l.HTTP.P50, l.HTTP.P95, l.HTTP.Count, sureFigures(l.HTTP),
		l.Task.P50, l.Task.P95, l.Task.Count, sureFigures(l.Task), t.ImagesPerSec, t.ImagesPerSecInterval}
}

// correctnessFigures are the published facts of a correctness result: the
// outcome, and each gate's name, value, operator, threshold and outcome.
func correctnessFigures(c *verdict.Correctness) any {
	if c == nil {
		return nil
	}
	return []any{c.Ran, c.Passed, c.Gates}
}
