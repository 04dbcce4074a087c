package verdict

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// Stages named in the reasons Judge derives.
const (
	StageCorrectness = "correctness"
	StageJoin        = "join"
	StageWorkload    = "workload"
	StagePreflight   = "preflight"
	StageAIPerf      = "aiperf"
	StageServer      = "server"
	// StageBundleCheck re-hashes the bundle after the run.
	StageBundleCheck = "bundle-check"
)

// Judge is the one implementation of the qualification contract. It turns
// a row's facts into its reasons and its verdict, in place, discarding any
// reasons and verdict stored before: the pipeline calls it before writing
// result.json, `report` calls it on stored rows and `report --rejudge` on
// rows whose data it re-derived from the raw artifacts.
//
// The facts are: the problems the pipeline recorded (each becomes a reason
// of its code's class), the exclusion, the workload, the bundle pin and
// digest, the AIPerf version, the correctness result (when the correctness
// stage ran), and the join's counts, unclaimed ids and latency (when the
// join stage ran). A row is qualified only when none of them gives a
// reason, that is when
//   - it ran the qualification workload: 5 warmup + 50 measured requests
//     at concurrency 1 (any other workload is exploration and says so);
//   - the inventory pins a bundle sha256 and the served bundle has it;
//   - AIPerf was the required version (0.13.0), mismatch allowed or not;
//   - the correctness case ran and recorded at least one gate, each with
//     its value, operator, threshold and outcome, the outcome agreeing with
//     value op threshold, every gate holding and the case passing;
//   - the join ran and, in both phases, the client reported exactly the
//     expected requests and every one matched (no mismatch, error, missing
//     partner, duplicate, meaningless answer, unknown conversation or
//     phase disagreement); no source holds an id no client record claims;
//     the totals are the sum of the phases;
//   - HTTP and Task latency cover the same stated set (the measured,
//     matched requests), one value per request of it;
//   - the pipeline recorded no problem.
//
// The verdict follows from the reasons' classes: interrupted, else error
// (setup or broken), else failed, else excluded, else qualified. Reasons
// are sorted most severe class first, so the first one is the cause.
func Judge(r *Result) {
	var rs []Reason
	for _, p := range r.Problems {
		rs = append(rs, Reason{Code: p.Code, Class: ClassOf(p.Code), Stage: p.Stage, Message: p.Message})
	}
	switch {
	case hasClass(rs, ClassInterrupted):
		// The row stopped half way: what it lacks is the interruption's
		// consequence, not a finding.
	case r.Exclusion != "":
		rs = append(rs, Reason{Code: CodeExcluded, Class: ClassExcluded, Stage: "inventory", Message: "excluded by the inventory: " + r.Exclusion})
	default:
		rs = append(rs, judgeBundleIdentity(r)...)
		stopped := severe(rs)
		rs = append(rs, judgeContract(r, stopped)...)
		switch {
		case r.StageRan(StageCorrectness):
			rs = append(rs, judgeCorrectness(r.Correctness)...)
		case !stopped:
			rs = append(rs, failed(CodeCorrectnessNotRun, StageCorrectness, "", "the family's correctness case did not run on the served bundle"))
		}
		switch {
		case r.StageRan(StageJoin) && (r.Workload.TrialCount() > 1 || len(r.Trials) > 0):
			rs = append(rs, judgeTrials(r)...)
			rs = append(rs, judgeUnclaimed(r.Unclaimed)...)
		case r.StageRan(StageJoin):
			rs = append(rs, judgeCounts(r.Requests, r.RequestsByPhase, r.Examples, r.HTTPErrors)...)
			rs = append(rs, judgeUnclaimed(r.Unclaimed)...)
			rs = append(rs, judgeLatency(r.LatencyMS, r.RequestsByPhase[PhaseMeasured])...)
		case !stopped:
			rs = append(rs, failed(CodeNotJoined, StageJoin, "", "the join did not run: no request is accounted for"))
		}
	}
	slices.SortStableFunc(rs, func(a, b Reason) int { return classRank(a.Class) - classRank(b.Class) })
	if rs == nil {
		rs = []Reason{}
	}
	r.Reasons = rs
	r.Verdict = verdictOf(rs)
}

// judgeTrials judges a row of repeated trials: every trial the workload
// asked for was joined, and each one, on its own, is what a row of one
// trial must be — every request of both its phases sent, matched and
// accounted for, its latency over its one stated set — each finding named
// by its trial (Reason.Trial, and the message); the row's counts are the
// sums of its trials'. The row qualifies only when every trial does.
func judgeTrials(r *Result) []Reason {
	n := r.Workload.TrialCount()
	var out []Reason
	if len(r.Trials) != n {
		out = append(out, failed(CodeShortCount, StageJoin, "", "the workload asks for %d trials; the row holds %d", n, len(r.Trials)))
	}
	for k := len(r.Trials) + 1; k <= n; k++ {
		rs := failed(CodeShortCount, StageJoin, "", "trial %d of %d was not run or not joined: none of its requests is accounted for", k, n)
		rs.Trial = k
		out = append(out, rs)
	}
	var total Counts
	by := map[string]Counts{}
	for i := range r.Trials {
		t := &r.Trials[i]
		k := i + 1
		found := judgeCounts(t.Requests, t.RequestsByPhase, t.Examples, t.HTTPErrors)
		found = append(found, judgeLatency(t.LatencyMS, t.RequestsByPhase[PhaseMeasured])...)
		if t.Trial != k {
			found = append(found, failed(CodeCountsInconsist, StageJoin, "", "the row's trial %d is numbered %d", k, t.Trial))
		}
		for _, x := range found {
			x.Trial = k
			x.Message = fmt.Sprintf("trial %d of %d: %s", k, n, x.Message)
			out = append(out, x)
		}
		total = total.Add(t.Requests)
		for p, c := range t.RequestsByPhase {
			by[p] = by[p].Add(c)
		}
	}
	if total != r.Requests || !maps.Equal(by, r.RequestsByPhase) {
		out = append(out, failed(CodeCountsInconsist, StageJoin, "", "the row's request counts (%d sent, %d matched) are not the sums of its trials' (%d sent, %d matched)",
			r.Requests.Sent, r.Requests.Matched, total.Sent, total.Matched))
	}
	return out
}

// verdictOf is the verdict the reasons' classes give.
func verdictOf(rs []Reason) string {
	v := VerdictQualified
	for _, x := range rs {
		switch x.Class {
		case ClassInterrupted:
			return VerdictInterrupted
		case ClassNotRun:
			if v != VerdictError {
				v = VerdictNotRun
			}
		case ClassSetup, ClassBroken:
			v = VerdictError
		case ClassFailed:
			if v != VerdictError && v != VerdictNotRun {
				v = VerdictFailed
			}
		case ClassExcluded:
			if v == VerdictQualified {
				v = VerdictExcluded
			}
		default: // a class this harness does not know
			v = VerdictError
		}
	}
	return v
}

func hasClass(rs []Reason, c Class) bool {
	for _, x := range rs {
		if x.Class == c {
			return true
		}
	}
	return false
}

// severe reports whether a reason stopped the row (interrupted, setup or
// broken): facts missing after it are its consequence, not reasons.
func severe(rs []Reason) bool {
	for _, x := range rs {
		if x.Class == ClassInterrupted || x.Class == ClassNotRun || x.Class == ClassSetup || x.Class == ClassBroken {
			return true
		}
	}
	return false
}

// StageRan reports whether the named stage finished (status ok).
func (r *Result) StageRan(name string) bool {
	for _, s := range r.Stages {
		if s.Name == name {
			return s.Status == StageOK
		}
	}
	return false
}

// Stage statuses.
const (
	StageOK          = "ok"
	StageError       = "error"
	StageSkipped     = "skipped"
	StageInterrupted = "interrupted"
)

func failed(code Code, stage, phase, format string, args ...any) Reason {
	return Reason{Code: code, Class: ClassFailed, Stage: stage, Phase: phase, Message: fmt.Sprintf(format, args...)}
}

func judgeContract(r *Result, stopped bool) []Reason {
	var out []Reason
	w := &r.Workload
	w.Purpose = PurposeExploration
	if w.IsQualification() {
		w.Purpose = PurposeQualification
	} else {
		out = append(out, failed(CodeExplorationWorkload, StageWorkload, "",
			"the workload is %d warmup + %d measured requests at concurrency %d: exploration only; qualification needs %d + %d at concurrency %d",
			w.Warmup, w.Measured, w.Concurrency, QualificationWarmup, QualificationMeasured, QualificationConcurrency))
	}
	p := r.Provenance
	switch {
	case p.BundlePinnedSHA256 == "":
		out = append(out, failed(CodeBundleNotPinned, StagePreflight, "",
			"the inventory pins no bundle sha256: nothing proves which bundle was served (pin bundle.sha256 to qualify)"))
	case p.BundleSHA256 == "" && !stopped:
		out = append(out, failed(CodeBundleMismatch, StagePreflight, "",
			"the row records no sha256 of the bundle it served: nothing shows it is the one the inventory pins (%s)", p.BundlePinnedSHA256))
	}
	out = append(out, judgeBundleChecks(r)...)
	switch {
	case p.AIPerfVersion == "" && stopped:
	case p.AIPerfVersion != QualificationAIPerfVersion:
		msg := fmt.Sprintf("aiperf %q ran; qualification requires %s", p.AIPerfVersion, QualificationAIPerfVersion)
		if p.AIPerfVersionMismatch != "" {
			msg += " (the mismatch was allowed explicitly: the row is for exploration only)"
		}
		out = append(out, failed(CodeAIPerfVersion, StageAIPerf, "", "%s", msg))
	case p.AIPerfVersionRequired != "" && p.AIPerfVersionRequired != QualificationAIPerfVersion:
		out = append(out, failed(CodeAIPerfVersion, StageAIPerf, "",
			"the run required aiperf %s; qualification requires %s", p.AIPerfVersionRequired, QualificationAIPerfVersion))
	}
	return out
}

// judgeBundleIdentity: the bundle the preflight digested (the row's
// bundle_sha256) must be the one the inventory pins. One that is not was
// never served — the preflight stops the checkpoint on it —, so the row
// is a setup error, with this one reason for the one fact. A row of an
// earlier version recorded the same fact as a preflight problem of this
// code: that problem is then its reason, and none is added.
func judgeBundleIdentity(r *Result) []Reason {
	p := r.Provenance
	if p.BundlePinnedSHA256 == "" || p.BundleSHA256 == "" || p.BundleSHA256 == p.BundlePinnedSHA256 {
		return nil
	}
	for _, x := range r.Problems {
		if x.Code == CodeBundleIdentity {
			return nil
		}
	}
	return []Reason{{Code: CodeBundleIdentity, Class: ClassOf(CodeBundleIdentity), Stage: StagePreflight,
		Message: fmt.Sprintf("profile %s: bundle %s has sha256 %s but the inventory pins %s: not the bundle that was qualified",
			r.Profile, p.BundlePath, p.BundleSHA256, p.BundlePinnedSHA256)}}
}

// judgeBundleChecks requires the bundle re-hashed, unchanged, after each
// stage that could change it and ran: the correctness case (validation)
// and the run (serving, the native replay). Each digest is compared with
// the one before it, so a change is named by the stage that made it.
func judgeBundleChecks(r *Result) []Reason {
	p := r.Provenance
	if p.BundleSHA256 == "" {
		return nil // never digested (the row stopped before): nothing served
	}
	var out []Reason
	before, what := p.BundleSHA256, "the one served"
	for _, step := range []struct {
		after, stage string
		ran          bool
		code         Code
		verb         string
	}{
		{BundleAfterCorrectness, StageCorrectness, r.StageRan(StageCorrectness), CodeBundleChangedValidate, "validation"},
		{BundleAfterRun, StageBundleCheck, r.StageRan(StageServer), CodeBundleChangedServing, "serving"},
	} {
		i := slices.IndexFunc(p.BundleChecks, func(c BundleCheck) bool { return c.After == step.after })
		switch {
		case i < 0 && step.ran:
			out = append(out, failed(step.code, step.stage, "", "the bundle was not re-hashed after the %s: nothing shows %s left it unchanged (a row of an earlier trtmc-qual)",
				bundleStepName(step.after), step.verb))
		case i < 0:
		case p.BundleChecks[i].Error != "":
			out = append(out, failed(step.code, step.stage, "", "the bundle could not be re-hashed after the %s: %s", bundleStepName(step.after), p.BundleChecks[i].Error))
		case p.BundleChecks[i].SHA256 != before:
			out = append(out, failed(step.code, step.stage, "", "%s changed the bundle: sha256 %s before (%s), %s after the %s",
				step.verb, before, what, p.BundleChecks[i].SHA256, bundleStepName(step.after)))
		}
		if i >= 0 && p.BundleChecks[i].SHA256 != "" {
			before, what = p.BundleChecks[i].SHA256, "after the "+bundleStepName(step.after)
		}
	}
	return out
}

func bundleStepName(after string) string {
	if after == BundleAfterCorrectness {
		return "correctness case"
	}
	return "run"
}

// ValidGateOps are the operators a correctness gate may use.
var validGateOps = []string{">=", ">", "<=", "<", "=="}

// GateHolds evaluates one gate: value op threshold. An unknown op, a NaN or
// an infinity never holds.
func GateHolds(g Gate) bool {
	if math.IsNaN(g.Value) || math.IsNaN(g.Threshold) || math.IsInf(g.Value, 0) || math.IsInf(g.Threshold, 0) {
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

// judgeCorrectness checks a correctness result that ran; it changes nothing.
func judgeCorrectness(c *Correctness) []Reason {
	one := func(code Code, format string, args ...any) []Reason {
		return []Reason{failed(code, StageCorrectness, "", format, args...)}
	}
	if c == nil || !c.Ran {
		return one(CodeCorrectnessNotRun, "the family's correctness case did not run on the served bundle")
	}
	if c.Error != "" {
		return one(CodeCorrectnessNotRun, "the correctness case broke: %s", c.Error)
	}
	if len(c.Gates) == 0 {
		return one(CodeCorrectnessIncomplete, "the correctness result has no gate: a bare pass proves nothing (each metric needs value, op, threshold and outcome)")
	}
	var out []Reason
	var bad, inconsistent, notHolding []string
	for i, g := range c.Gates {
		switch {
		case strings.TrimSpace(g.Name) == "":
			bad = append(bad, fmt.Sprintf("gates[%d] has no name", i))
			continue
		case !slices.Contains(validGateOps, g.Op):
			bad = append(bad, fmt.Sprintf("gate %s: operator %q is not one of %s", g.Name, g.Op, strings.Join(validGateOps, " ")))
			continue
		case math.IsNaN(g.Value) || math.IsInf(g.Value, 0) || math.IsNaN(g.Threshold) || math.IsInf(g.Threshold, 0):
			bad = append(bad, fmt.Sprintf("gate %s: value %v or threshold %v is not a finite number", g.Name, g.Value, g.Threshold))
			continue
		}
		holds := GateHolds(g)
		if holds != g.Passed {
			inconsistent = append(inconsistent, fmt.Sprintf("%s records passed=%t but %s is %t", g.Name, g.Passed, g.String(), holds))
		}
		if !holds {
			notHolding = append(notHolding, g.String()+" does not hold")
		}
	}
	if len(bad) > 0 {
		out = append(out, one(CodeCorrectnessIncomplete, "the correctness result is incomplete: %s", strings.Join(bad, "; "))...)
	}
	if len(inconsistent) > 0 {
		out = append(out, one(CodeCorrectnessInconsist, "the correctness result contradicts itself: %s", strings.Join(inconsistent, "; "))...)
	}
	switch {
	case len(notHolding) > 0:
		out = append(out, one(CodeCorrectnessFailed, "the family's correctness case failed: %s", strings.Join(notHolding, "; "))...)
	case !c.Passed:
		out = append(out, one(CodeCorrectnessFailed, "the family's correctness case reports failure (every recorded gate holds)")...)
	}
	return out
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

func judgeCounts(total Counts, by map[string]Counts, examples []RequestExample, httpErrors []HTTPError) []Reason {
	first := func(phase, status string) string {
		for _, x := range examples {
			if x.Phase == phase && x.Status == status {
				return fmt.Sprintf(" (first: %s: %s)", x.RequestID, x.Problem)
			}
		}
		return ""
	}
	var out []Reason
	for _, p := range []string{PhaseWarmup, PhaseMeasured} {
		if _, ok := by[p]; !ok {
			out = append(out, failed(CodeNoRequests, StageJoin, p, "%s: the row holds no %s phase", p, p))
		}
	}
	if m, ok := by[PhaseMeasured]; ok && m.Expected <= 0 {
		out = append(out, failed(CodeNoRequests, StageJoin, PhaseMeasured, "no measured requests were expected: there is nothing to qualify"))
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
			out = append(out, failed(CodeShortCount, StageJoin, p, "%s: the client reported %d of %d expected requests", p, c.Sent, c.Expected))
		}
		for _, k := range []struct {
			n    int
			code Code // the join status of the same name (JoinMismatched, ...)
			what string
		}{
			{c.Mismatched, CodeMismatched, "the native and HTTP answers differ"},
			{c.Errored, CodeErrored, "failed at the client (HTTP error, transport, cancellation)"},
			{c.MissingNative, CodeMissingNative, "no native answer"},
			{c.MissingHTTP, CodeMissingHTTP, "no usable HTTP answer"},
			{c.MissingServerRecord, CodeMissingServerRec, "no server record"},
			{c.Duplicates, CodeDuplicate, "duplicated"},
			{c.Meaningless, CodeMeaningless, "no meaningful complete answer"},
			{c.UnknownConversation, CodeUnknownConversation, "the conversation is not a line of the dataset"},
			{c.Inconsistent, CodeInconsistent, "its evidence contradicts itself (phase, conversation, token count, the model named, or a Task time outside its domain)"},
			{c.EchoMissing, CodeEchoMissing, "nothing shows the server answered its id (no X-Request-ID echo in AIPerf's HTTP trace)"},
			{c.EchoMismatched, CodeEchoMismatched, "the server's answer echoes another X-Request-ID than the one sent"},
		} {
			if k.n > 0 {
				more := ""
				if k.code == CodeErrored {
					more = serverAnswers(httpErrors, p)
				}
				out = append(out, failed(k.code, StageJoin, p, "%s: %d of %d %s: %s%s%s", p, k.n, c.Sent, text.Plural(c.Sent, "request", "requests"), k.what, more, first(p, string(k.code))))
			}
		}
		if c.ServerBusy > 0 {
			out = append(out, serverBusyReason(p, c, first(p, string(CodeServerBusy))))
		}
		accounted := c.Matched + c.Mismatched + c.Errored + c.MissingNative + c.MissingHTTP + c.MissingServerRecord +
			c.Duplicates + c.Meaningless + c.UnknownConversation + c.Inconsistent + c.EchoMissing + c.EchoMismatched + c.ServerBusy
		if c.EchoProven < c.Matched {
			out = append(out, failed(CodeEchoMissing, StageJoin, p, "%s: %d of %d matched %s have no proven X-Request-ID echo: nothing shows the server answered each id sent "+
				"(a row of an earlier trtmc-qual, which did not read AIPerf's HTTP trace)", p, c.Matched-c.EchoProven, c.Matched, text.Plural(c.Matched, "request", "requests")))
		}
		switch {
		case accounted != c.Sent:
			out = append(out, failed(CodeCountsInconsist, StageJoin, p, "%s: %d requests sent but %d accounted for", p, c.Sent, accounted))
		case len(out) == n && c.Matched != c.Expected:
			out = append(out, failed(CodeUnmatched, StageJoin, p, "%s: %d of %d expected requests matched", p, c.Matched, c.Expected))
		}
	}
	if sum != total {
		out = append(out, failed(CodeCountsInconsist, StageJoin, "", "request totals (%d sent, %d matched) differ from the sum of the phases (%d sent, %d matched)",
			total.Sent, total.Matched, sum.Sent, sum.Matched))
	}
	return out
}

// serverAnswers names the server's answers to a phase's errored requests:
// each status, type and code, and what it means (a 429 server_busy is its
// own reason).
func serverAnswers(httpErrors []HTTPError, phase string) string {
	var parts []string
	for _, e := range httpErrors {
		if e.Phase == phase && e.Code != "server_busy" {
			parts = append(parts, e.String())
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; the server answered " + strings.Join(parts, ", ")
}

// serverBusyReason is a phase's requests refused 429 server_busy: an
// overlap, which the harness never causes itself.
func serverBusyReason(p string, c Counts, first string) Reason {
	return Reason{Code: CodeServerBusy, Class: ClassOf(CodeServerBusy), Stage: StageJoin, Phase: p,
		Message: fmt.Sprintf("%s: %d of %d %s refused 429 server_busy: something else sent a request to the served model at the same time "+
			"(a second client, or a correctness case, native replay or probe overlapping the run): trtmc-server has no queue, the harness never "+
			"overlaps its own stages, so the run was disturbed from outside; run it again alone%s",
			p, c.ServerBusy, c.Sent, text.Plural(c.Sent, "request was", "requests were"), first)}
}

func judgeUnclaimed(u Unclaimed) []Reason {
	var out []Reason
	ex := ""
	if len(u.Examples) > 0 {
		ex = " (e.g. " + strings.Join(u.Examples, ", ") + ")"
	}
	if u.ServerRecords > 0 {
		out = append(out, failed(CodeUnclaimedServerRecords, StageJoin, "", "the server recorded %d request id(s) the client never reported%s", u.ServerRecords, ex))
	}
	if u.NativeAnswers > 0 {
		out = append(out, failed(CodeUnclaimedNative, StageJoin, "", "the native runner answered %d request id(s) the client never reported%s", u.NativeAnswers, ex))
	}
	if u.RawRecords > 0 {
		out = append(out, failed(CodeUnclaimedRaw, StageJoin, "", "the raw export holds %d record(s) whose id the records export lacks%s", u.RawRecords, ex))
	}
	return out
}

func judgeLatency(l Latency, m Counts) []Reason {
	var why []string
	if l.Set != LatencySetMeasuredMatched {
		why = append(why, fmt.Sprintf("the latency set is %q, want %q", l.Set, LatencySetMeasuredMatched))
	}
	task := "Task"
	if l.TaskSource != "" {
		task = fmt.Sprintf("Task (%s task_ms, scope %s)", l.TaskSource, orNone(l.TaskScope))
	}
	for _, s := range []struct {
		name string
		p    Percentiles
	}{{"HTTP", l.HTTP}, {task, l.Task}} {
		if s.p.Count != m.Matched {
			msg := fmt.Sprintf("%s latency has values for %d of the %d measured matched requests", s.name, s.p.Count, m.Matched)
			if s.p.MissingExample != "" {
				msg += " (none for request " + s.p.MissingExample + ")"
			}
			why = append(why, msg)
		}
		if m.Matched > 0 && (s.p.P50 == nil || s.p.P95 == nil) {
			why = append(why, s.name+" p50/p95 missing")
		}
	}
	switch s := l.HTTPSplit; {
	case s == nil:
		why = append(why, "the row has no HTTP split (sending, waiting, receiving): nothing explains HTTP minus Task (a row of an earlier trtmc-qual)")
	case s.Count != m.Matched:
		msg := fmt.Sprintf("the HTTP split has values for %d of the %d measured matched requests", s.Count, m.Matched)
		if s.MissingExample != "" {
			msg += " (none for request " + s.MissingExample + ")"
		}
		why = append(why, msg)
	}
	if len(why) == 0 {
		return nil
	}
	return []Reason{failed(CodeLatencyIncomplete, StageJoin, PhaseMeasured, "latency is not over one stated set: %s", strings.Join(why, "; "))}
}

func orNone(s string) string {
	if s == "" {
		return "unstated"
	}
	return s
}
