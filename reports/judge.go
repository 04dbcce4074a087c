package reports

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Reason codes that Judge derives from a result's own data. The join codes
// are the join statuses, as the pipeline's own reasons use them. Judge
// recomputes exactly these codes: a stored reason with one of them is kept
// (its message may be more detailed) only while Judge still finds it; a
// reason with any other code (e.g. "unclaimed_server_records") stands and
// keeps the verdict failed.
const (
	CodeCorrectnessNotRun = "correctness_not_run"
	CodeCorrectnessError  = "correctness_error"
	CodeCorrectnessFailed = "correctness_failed"
	CodeNoRequests        = "no_requests"
	CodeShortCount        = "short_count"
	CodeUnmatched         = "unmatched"
	CodeMismatched        = JoinMismatched
	CodeErrored           = JoinErrored
	CodeMissingNative     = JoinMissingNative
	CodeMissingHTTP       = JoinMissingHTTP
	CodeMissingServerRec  = JoinMissingServerRecord
	CodeDuplicate         = JoinDuplicate
	CodeMeaningless       = JoinMeaningless
	CodeCountsInconsist   = "counts_inconsistent"
)

// Stages named in the reasons Judge derives.
const (
	StageCorrectness = "correctness"
	StageJoin        = "join"
)

func isJudgeCode(code string) bool {
	switch code {
	case CodeCorrectnessNotRun, CodeCorrectnessError, CodeCorrectnessFailed,
		CodeNoRequests, CodeShortCount, CodeUnmatched, CodeMismatched, CodeErrored, CodeMissingNative,
		CodeMissingHTTP, CodeMissingServerRec, CodeDuplicate, CodeMeaningless, CodeCountsInconsist:
		return true
	}
	return false
}

// Judge applies the verdict rules to a result's stored data, in place. It is
// the one implementation of the rules: the pipeline calls it before writing
// result.json and `report --rejudge` calls it on stored evidence.
//
// A result is qualified only when
//   - the family's correctness case ran without error and passed: its own
//     recorded pass and every gate, re-evaluated from value, op and
//     threshold (a gate's Passed flag is rewritten);
//   - a measured phase was expected, and in every phase the client reported
//     every expected request (Sent == Expected) and every one of them
//     matched, with zero mismatched, errored, missing (native, HTTP, server
//     record), duplicate and meaningless requests;
//   - the totals equal the sum of the phases;
//   - no other reason (recorded by a pipeline stage) stands.
//
// Otherwise it is failed, a qualification outcome. Verdicts error,
// interrupted, excluded, skipped and not-run are kept as they are, with their
// reasons: their data is incomplete by definition.
func Judge(r *Result) {
	switch r.Verdict {
	case VerdictError, VerdictInterrupted, VerdictExcluded, VerdictSkipped, VerdictNotRun:
		return
	}
	derived := append(judgeCorrectness(r.Correctness), judgeCounts(r.Requests, r.RequestsByPhase)...)
	used := make([]bool, len(r.Reasons))
	reasons := []Reason{}
	for _, d := range derived {
		if i := samePrior(r.Reasons, used, d); i >= 0 {
			used[i] = true
			reasons = append(reasons, r.Reasons[i])
			continue
		}
		reasons = append(reasons, d)
	}
	for i, old := range r.Reasons {
		if !used[i] && !isJudgeCode(old.Code) {
			reasons = append(reasons, old)
		}
	}
	r.Reasons = reasons
	if len(reasons) == 0 {
		r.Verdict = VerdictQualified
		return
	}
	r.Verdict = VerdictFailed
}

// samePrior finds an unused stored reason saying what d says: same stage,
// same code and, for per-phase reasons, the same phase.
func samePrior(prior []Reason, used []bool, d Reason) int {
	for i, p := range prior {
		if !used[i] && p.Stage == d.Stage && p.Code == d.Code && phaseOf(p.Message) == phaseOf(d.Message) {
			return i
		}
	}
	return -1
}

// phaseOf is the phase a reason message starts with ("measured: ..."), or "".
func phaseOf(msg string) string {
	for _, p := range []string{PhaseWarmup, PhaseMeasured} {
		if len(msg) > len(p) && msg[:len(p)] == p && msg[len(p)] == ':' {
			return p
		}
	}
	return ""
}

// GateHolds evaluates one gate: value op threshold. An unknown op or a NaN
// never holds.
func GateHolds(g Gate) bool {
	if math.IsNaN(g.Value) || math.IsNaN(g.Threshold) {
		return false
	}
	switch g.Op {
	case ">=":
		return g.Value >= g.Threshold
	case ">":
		return g.Value > g.Threshold
	case "<=":
		return g.Value <= g.Threshold
	case "<":
		return g.Value < g.Threshold
	case "==":
		return g.Value == g.Threshold
	}
	return false
}

// judgeCorrectness re-evaluates every gate (updating Passed flags and the
// overall Passed) and returns why correctness does not pass, if it does not.
func judgeCorrectness(c *Correctness) []Reason {
	reason := func(code, msg string) []Reason {
		return []Reason{{Stage: StageCorrectness, Code: code, Message: msg}}
	}
	if c == nil || !c.Ran {
		msg := "the family's correctness case did not run on the served bundle"
		if c != nil && c.Error != "" {
			msg += ": " + c.Error
		}
		return reason(CodeCorrectnessNotRun, msg)
	}
	if c.Error != "" {
		c.Passed = false
		return reason(CodeCorrectnessError, "the correctness case broke: "+c.Error)
	}
	var failed []string
	for i := range c.Gates {
		g := &c.Gates[i]
		g.Passed = GateHolds(*g)
		if !g.Passed {
			failed = append(failed, formatGate(*g)+" does not hold")
		}
	}
	switch {
	case len(failed) > 0:
		c.Passed = false
		return reason(CodeCorrectnessFailed, "the family's correctness case failed: "+strings.Join(failed, "; "))
	case !c.Passed && len(c.Gates) > 0:
		return reason(CodeCorrectnessFailed, "the family's correctness case failed (every recorded gate holds)")
	case !c.Passed:
		return reason(CodeCorrectnessFailed, "the family's correctness case failed")
	}
	return nil
}

// phaseOrder lists the phases of a result: warmup, measured, then any
// others in sorted order.
func phaseOrder(by map[string]Counts) []string {
	out := []string{PhaseWarmup, PhaseMeasured}
	for _, p := range slices.Sorted(maps.Keys(by)) {
		if p != PhaseWarmup && p != PhaseMeasured {
			out = append(out, p)
		}
	}
	return out
}

func judgeCounts(total Counts, by map[string]Counts) []Reason {
	reason := func(code, format string, args ...any) Reason {
		return Reason{Stage: StageJoin, Code: code, Message: fmt.Sprintf(format, args...)}
	}
	var out []Reason
	if m, ok := by[PhaseMeasured]; !ok || m.Expected <= 0 {
		out = append(out, reason(CodeNoRequests, "no measured requests were expected: there is nothing to qualify"))
	}
	var sum Counts
	for _, p := range phaseOrder(by) {
		c, ok := by[p]
		if !ok {
			continue
		}
		sum = sum.Add(c)
		n := len(out)
		if c.Sent != c.Expected {
			out = append(out, reason(CodeShortCount, "%s: the client reported %d of %d expected requests", p, c.Sent, c.Expected))
		}
		for _, k := range []struct {
			n               int
			code, one, many string
		}{
			{c.Mismatched, CodeMismatched, "request's native and HTTP answers differ", "requests' native and HTTP answers differ"},
			{c.Errored, CodeErrored, "request errored", "requests errored"},
			{c.MissingNative, CodeMissingNative, "request has no native answer", "requests have no native answer"},
			{c.MissingHTTP, CodeMissingHTTP, "request has no HTTP record", "requests have no HTTP record"},
			{c.MissingServerRecord, CodeMissingServerRec, "request has no server record", "requests have no server record"},
			{c.Duplicates, CodeDuplicate, "request is a duplicate", "requests are duplicates"},
			{c.Meaningless, CodeMeaningless, "request has no meaningful complete answer", "requests have no meaningful complete answer"},
		} {
			if k.n > 0 {
				out = append(out, reason(k.code, "%s: %d %s", p, k.n, plural(k.n, k.one, k.many)))
			}
		}
		if len(out) == n && c.Matched != c.Expected {
			out = append(out, reason(CodeUnmatched, "%s: %d of %d expected requests matched", p, c.Matched, c.Expected))
		}
	}
	if len(by) > 0 && sum != total {
		out = append(out, reason(CodeCountsInconsist, "request totals (%d sent, %d matched) differ from the sum of the phases (%d sent, %d matched)",
			total.Sent, total.Matched, sum.Sent, sum.Matched))
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// RejudgeResult re-applies the verdict rules to a stored result and returns the
// re-judged copy; r is not modified. When joined holds the run's joined
// requests, the per-phase counts are recounted from them first (Expected is
// kept from r: the lines cannot tell what was asked for). Latency is kept
// as recorded. The copy records the original verdict, when and by which
// harness version it was re-judged.
func RejudgeResult(r Result, joined []JoinedLine, at time.Time, harnessVersion string) Result {
	n := r
	n.Reasons = slices.Clone(r.Reasons)
	if r.Correctness != nil {
		c := *r.Correctness
		c.Gates = slices.Clone(r.Correctness.Gates)
		c.Metrics = maps.Clone(r.Correctness.Metrics)
		n.Correctness = &c
	}
	n.RequestsByPhase = maps.Clone(r.RequestsByPhase)
	if len(joined) > 0 {
		recount := CountJoined(joined)
		by := map[string]Counts{}
		for p, c := range r.RequestsByPhase {
			fresh := recount[p]
			fresh.Expected = c.Expected
			by[p] = fresh
		}
		for p, c := range recount {
			if _, ok := by[p]; !ok {
				by[p] = c
			}
		}
		var total Counts
		for _, c := range by {
			total = total.Add(c)
		}
		n.RequestsByPhase, n.Requests = by, total
	}
	Judge(&n)
	n.Rejudged = &Rejudge{OriginalVerdict: r.Verdict, At: at.UTC(), HarnessVersion: harnessVersion}
	return n
}
