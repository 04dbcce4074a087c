package verdict

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func full(expected int) Counts {
	return Counts{Expected: expected, Sent: expected, Matched: expected, EchoProven: expected}
}

func pf(v float64) *float64 { return &v }

// good is a result every rule accepts: the qualification workload, a pinned
// bundle that was served, AIPerf 0.13.0, a passing gate, every request
// matched, latency over the matched measured requests.
func good() Result {
	return Result{
		Schema: ResultSchema, Group: "vlm", Profile: "p", Verdict: VerdictFailed,
		Workload:        Workload{Warmup: 5, Measured: 50, Concurrency: 1},
		Requests:        full(55),
		RequestsByPhase: map[string]Counts{PhaseWarmup: full(5), PhaseMeasured: full(50)},
		LatencyMS: Latency{Set: LatencySetMeasuredMatched, HTTP: Percentiles{P50: pf(3), P95: pf(5), Count: 50},
			Task:      Percentiles{P50: pf(2), P95: pf(4), Count: 50},
			HTTPSplit: &HTTPSplit{Count: 50, HTTPMean: pf(3.1), TaskMean: pf(2.1)}},
		Correctness: &Correctness{Ran: true, Passed: true, Gates: []Gate{
			{Name: "map_50_95", Value: 0.91, Op: ">=", Threshold: 0.5, Passed: true}}},
		Provenance: Provenance{AIPerfVersion: "0.13.0", AIPerfVersionRequired: "0.13.0", BundleSHA256: "aa", BundlePinnedSHA256: "aa",
			BundleChecks: []BundleCheck{{After: BundleAfterCorrectness, SHA256: "aa"}, {After: BundleAfterRun, SHA256: "aa"}}},
		Stages: []Stage{{Name: "preflight", Status: StageOK}, {Name: "correctness", Status: StageOK},
			{Name: "aiperf", Status: StageOK}, {Name: "join", Status: StageOK}},
	}
}

func codes(rs []Reason) []Code {
	out := []Code{}
	for _, r := range rs {
		out = append(out, r.Code)
	}
	return out
}

// setMeasured sets the measured counts (every answered request's echo
// proven unless c says how many were) and the latency counts to match.
func setMeasured(r *Result, c Counts) {
	if c.EchoProven == 0 {
		c.EchoProven = c.Matched
	}
	r.RequestsByPhase[PhaseMeasured] = c
	r.Requests = c.Add(r.RequestsByPhase[PhaseWarmup])
	r.LatencyMS.HTTP.Count, r.LatencyMS.Task.Count, r.LatencyMS.HTTPSplit.Count = c.Matched, c.Matched, c.Matched
}

func TestJudge(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(r *Result)
		verdict string
		codes   []Code
	}{
		{"all matched and correct", func(r *Result) {}, VerdictQualified, []Code{}},
		{"stored reasons and verdict are ignored", func(r *Result) {
			r.Verdict, r.Reasons = VerdictError, []Reason{{Code: CodeMismatched, Class: ClassFailed}}
		}, VerdictQualified, []Code{}},

		// The workload.
		{"exploration workload 1 + 12", func(r *Result) {
			r.Workload = Workload{Warmup: 1, Measured: 12, Concurrency: 1}
			r.RequestsByPhase = map[string]Counts{PhaseWarmup: full(1), PhaseMeasured: full(12)}
			r.Requests = full(13)
			r.LatencyMS.HTTP.Count, r.LatencyMS.Task.Count, r.LatencyMS.HTTPSplit.Count = 12, 12, 12
		}, VerdictFailed, []Code{CodeExplorationWorkload}},
		{"concurrency 2", func(r *Result) { r.Workload.Concurrency = 2 }, VerdictFailed, []Code{CodeExplorationWorkload}},
		{"no workload recorded", func(r *Result) { r.Workload = Workload{} }, VerdictFailed, []Code{CodeExplorationWorkload}},

		// The bundle and AIPerf.
		{"no pinned bundle", func(r *Result) { r.Provenance.BundlePinnedSHA256 = "" }, VerdictFailed, []Code{CodeBundleNotPinned}},
		{"served bundle differs from the pin", func(r *Result) {
			r.Provenance.BundleSHA256 = "bb"
			r.Provenance.BundleChecks[0].SHA256, r.Provenance.BundleChecks[1].SHA256 = "bb", "bb"
		}, VerdictError, []Code{CodeBundleIdentity}},
		{"no served digest", func(r *Result) { r.Provenance.BundleSHA256 = "" }, VerdictFailed, []Code{CodeBundleMismatch}},
		{"aiperf mismatch allowed by flag", func(r *Result) {
			r.Provenance.AIPerfVersion, r.Provenance.AIPerfVersionMismatch = "0.14.0", "allowed"
		}, VerdictFailed, []Code{CodeAIPerfVersion}},
		{"another aiperf version required", func(r *Result) { r.Provenance.AIPerfVersionRequired = "0.12.0" }, VerdictFailed, []Code{CodeAIPerfVersion}},

		// Correctness.
		{"correctness stage did not run", func(r *Result) { r.Stages = slices.Delete(r.Stages, 1, 2) }, VerdictFailed, []Code{CodeCorrectnessNotRun}},
		{"correctness nil", func(r *Result) { r.Correctness = nil }, VerdictFailed, []Code{CodeCorrectnessNotRun}},
		{"correctness ran false", func(r *Result) { r.Correctness.Ran = false }, VerdictFailed, []Code{CodeCorrectnessNotRun}},
		{"bare passed:true without gates", func(r *Result) { r.Correctness.Gates = nil }, VerdictFailed, []Code{CodeCorrectnessIncomplete}},
		{"gate without a name", func(r *Result) { r.Correctness.Gates[0].Name = "" }, VerdictFailed, []Code{CodeCorrectnessIncomplete}},
		{"unknown op", func(r *Result) { r.Correctness.Gates[0].Op = "~" }, VerdictFailed, []Code{CodeCorrectnessIncomplete}},
		{"gate value does not hold", func(r *Result) {
			r.Correctness.Gates[0].Value, r.Correctness.Gates[0].Passed = 0.4, false
		}, VerdictFailed, []Code{CodeCorrectnessFailed}},
		{"gate says passed but does not hold", func(r *Result) { r.Correctness.Gates[0].Value = 0.4 }, VerdictFailed,
			[]Code{CodeCorrectnessInconsist, CodeCorrectnessFailed}},
		{"gate says failed but holds", func(r *Result) { r.Correctness.Gates[0].Passed = false }, VerdictFailed, []Code{CodeCorrectnessInconsist}},
		{"family failed although every gate holds", func(r *Result) { r.Correctness.Passed = false }, VerdictFailed, []Code{CodeCorrectnessFailed}},

		// Counts.
		{"join did not run", func(r *Result) { r.Stages = r.Stages[:3] }, VerdictFailed, []Code{CodeNotJoined}},
		{"one mismatch", func(r *Result) { setMeasured(r, Counts{Expected: 50, Sent: 50, Matched: 49, Mismatched: 1}) },
			VerdictFailed, []Code{CodeMismatched}},
		{"warmup errors count too", func(r *Result) {
			r.RequestsByPhase[PhaseWarmup] = Counts{Expected: 5, Sent: 5, Matched: 4, Errored: 1, EchoProven: 4}
			r.Requests = Counts{Expected: 55, Sent: 55, Matched: 54, Errored: 1, EchoProven: 54}
		}, VerdictFailed, []Code{CodeErrored}},
		{"short of expected", func(r *Result) { setMeasured(r, Counts{Expected: 50, Sent: 49, Matched: 49}) },
			VerdictFailed, []Code{CodeShortCount}},
		{"every failure kind", func(r *Result) {
			setMeasured(r, Counts{Expected: 50, Sent: 50, Matched: 39, Mismatched: 1, Errored: 1, MissingNative: 1,
				MissingHTTP: 1, MissingServerRecord: 1, Duplicates: 1, Meaningless: 1, UnknownConversation: 1, Inconsistent: 1,
				EchoMissing: 1, EchoMismatched: 1})
		}, VerdictFailed, []Code{CodeMismatched, CodeErrored, CodeMissingNative, CodeMissingHTTP, CodeMissingServerRec,
			CodeDuplicate, CodeMeaningless, CodeUnknownConversation, CodeInconsistent, CodeEchoMissing, CodeEchoMismatched}},

		// Identity: the X-Request-ID echo of every request, warmup included.
		{"an echo missing in warmup", func(r *Result) {
			r.RequestsByPhase[PhaseWarmup] = Counts{Expected: 5, Sent: 5, Matched: 4, EchoMissing: 1, EchoProven: 4}
			r.Requests = r.RequestsByPhase[PhaseWarmup].Add(r.RequestsByPhase[PhaseMeasured])
		}, VerdictFailed, []Code{CodeEchoMissing}},
		{"another id echoed", func(r *Result) {
			setMeasured(r, Counts{Expected: 50, Sent: 50, Matched: 49, EchoMismatched: 1})
		}, VerdictFailed, []Code{CodeEchoMismatched}},
		{"a row without proven echoes (an earlier version)", func(r *Result) {
			r.RequestsByPhase[PhaseWarmup] = full(5)
			w := r.RequestsByPhase[PhaseWarmup]
			w.EchoProven = 0
			r.RequestsByPhase[PhaseWarmup] = w
			r.Requests = w.Add(r.RequestsByPhase[PhaseMeasured])
		}, VerdictFailed, []Code{CodeEchoMissing}},
		{"fewer proven echoes than matches", func(r *Result) {
			setMeasured(r, Counts{Expected: 50, Sent: 50, Matched: 50, EchoProven: 49})
		}, VerdictFailed, []Code{CodeEchoMissing}},

		// The bundle, re-hashed after validation and after the run.
		{"validation changed the bundle", func(r *Result) {
			r.Provenance.BundleChecks[0].SHA256, r.Provenance.BundleChecks[1].SHA256 = "cc", "cc"
		}, VerdictFailed, []Code{CodeBundleChangedValidate}},
		{"serving changed the bundle", func(r *Result) {
			r.Stages = append(r.Stages, Stage{Name: StageServer, Status: StageOK})
			r.Provenance.BundleChecks[1].SHA256 = "cc"
		}, VerdictFailed, []Code{CodeBundleChangedServing}},
		{"a change by validation is not blamed on serving too", func(r *Result) {
			r.Stages = append(r.Stages, Stage{Name: StageServer, Status: StageOK})
			r.Provenance.BundleChecks[0].SHA256, r.Provenance.BundleChecks[1].SHA256 = "cc", "cc"
		}, VerdictFailed, []Code{CodeBundleChangedValidate}},
		{"no re-hash after the run of a row that served", func(r *Result) {
			r.Stages = append(r.Stages, Stage{Name: StageServer, Status: StageOK})
			r.Provenance.BundleChecks = r.Provenance.BundleChecks[:1]
		}, VerdictFailed, []Code{CodeBundleChangedServing}},
		{"the re-hash failed", func(r *Result) {
			r.Provenance.BundleChecks[0] = BundleCheck{After: BundleAfterCorrectness, Error: "permission denied"}
		}, VerdictFailed, []Code{CodeBundleChangedValidate}},
		{"statuses do not add up", func(r *Result) { setMeasured(r, Counts{Expected: 50, Sent: 50, Matched: 48}) },
			VerdictFailed, []Code{CodeCountsInconsist}},
		{"no measured phase", func(r *Result) {
			delete(r.RequestsByPhase, PhaseMeasured)
			r.Requests = full(5)
		}, VerdictFailed, []Code{CodeNoRequests, CodeLatencyIncomplete}},
		{"totals disagree with phases", func(r *Result) { r.Requests.Matched = 54 }, VerdictFailed, []Code{CodeCountsInconsist}},
		{"unclaimed native answers", func(r *Result) { r.Unclaimed.NativeAnswers = 1 }, VerdictFailed, []Code{CodeUnclaimedNative}},
		{"unclaimed server records", func(r *Result) { r.Unclaimed.ServerRecords = 2 }, VerdictFailed, []Code{CodeUnclaimedServerRecords}},
		{"unclaimed raw records", func(r *Result) { r.Unclaimed.RawRecords = 1 }, VerdictFailed, []Code{CodeUnclaimedRaw}},

		// Latency.
		{"HTTP over another set than Task", func(r *Result) { r.LatencyMS.HTTP.Count = 55 }, VerdictFailed, []Code{CodeLatencyIncomplete}},
		{"no stated set", func(r *Result) { r.LatencyMS.Set = "" }, VerdictFailed, []Code{CodeLatencyIncomplete}},
		{"Task p95 missing", func(r *Result) { r.LatencyMS.Task.P95 = nil }, VerdictFailed, []Code{CodeLatencyIncomplete}},
		{"no HTTP split (an earlier version)", func(r *Result) { r.LatencyMS.HTTPSplit = nil }, VerdictFailed, []Code{CodeLatencyIncomplete}},
		{"a request without its split", func(r *Result) { r.LatencyMS.HTTPSplit.Count = 49 }, VerdictFailed, []Code{CodeLatencyIncomplete}},

		// Problems recorded by the stages.
		{"a broken stage is an error", func(r *Result) {
			r.Problems = []Problem{{Stage: "aiperf", Code: CodeAIPerfIncomplete, Message: "profile_export.jsonl is short"}}
		}, VerdictError, []Code{CodeAIPerfIncomplete}},
		{"setup first, then what failed", func(r *Result) {
			r.Provenance.BundlePinnedSHA256 = ""
			r.Problems = []Problem{{Stage: "server", Code: CodeServerExit, Message: "exit 1"}}
			r.Stages = r.Stages[:1]
		}, VerdictError, []Code{CodeServerExit, CodeBundleNotPinned}},
		{"an unknown code is broken", func(r *Result) {
			r.Problems = []Problem{{Stage: "x", Code: "made_up", Message: "?"}}
		}, VerdictError, []Code{"made_up"}},
		{"interrupted wins", func(r *Result) {
			r.Problems = []Problem{{Stage: "aiperf", Code: CodeServerDied, Message: "x"}, {Stage: "aiperf", Code: CodeInterrupted, Message: "SIGINT"}}
		}, VerdictInterrupted, []Code{CodeInterrupted, CodeServerDied}},
		{"interrupted: nothing else is derived", func(r *Result) {
			r.Problems = []Problem{{Stage: "aiperf", Code: CodeInterrupted, Message: "SIGINT"}}
			setMeasured(r, Counts{Expected: 50, Sent: 30, Matched: 30})
		}, VerdictInterrupted, []Code{CodeInterrupted}},
		{"changed evidence", func(r *Result) {
			r.Problems = []Problem{{Stage: "evidence", Code: CodeEvidenceChanged, Message: "x"}}
		}, VerdictError, []Code{CodeEvidenceChanged}},
		{"excluded", func(r *Result) { r.Exclusion = "two GPUs" }, VerdictExcluded, []Code{CodeExcluded}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := good()
			tc.edit(&r)
			Judge(&r)
			assert.Equal(t, tc.verdict, r.Verdict, "%+v", r.Reasons)
			assert.Equal(t, tc.codes, codes(r.Reasons))
			for _, rs := range r.Reasons {
				assert.NotEmpty(t, rs.Stage)
				assert.NotEmpty(t, rs.Message)
				assert.Equal(t, ClassOf(rs.Code), rs.Class)
			}
		})
	}
}

func TestJudgeMessages(t *testing.T) {
	r := good()
	setMeasured(&r, Counts{Expected: 50, Sent: 48, Matched: 46, Mismatched: 2})
	r.Correctness.Gates[0].Value, r.Correctness.Gates[0].Passed = 0.41, false
	Judge(&r)
	require.Len(t, r.Reasons, 3)
	assert.Equal(t, "the family's correctness case failed: map_50_95 0.410 ≥ 0.500 does not hold", r.Reasons[0].Message)
	assert.Equal(t, Reason{Code: CodeShortCount, Class: ClassFailed, Stage: StageJoin, Phase: PhaseMeasured,
		Message: "measured: the client reported 48 of 50 expected requests"}, r.Reasons[1])
	assert.Equal(t, "measured: 2 of 48 requests: the native and HTTP answers differ", r.Reasons[2].Message)
	assert.Equal(t, PurposeQualification, r.Workload.Purpose)
}

// TestEveryCodeIsDocumented: the table of codes is the one in
// docs/reliability.md, and every code the pipeline and Judge use is in it.
func TestEveryCodeIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "reliability.md"))
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(doc), codeTableMarkdown()),
		"docs/reliability.md must carry the table of Codes() verbatim; it is:\n%s", codeTableMarkdown())
	seen := map[Code]bool{}
	for _, c := range Codes() {
		assert.False(t, seen[c.Code], "code %s listed twice", c.Code)
		seen[c.Code] = true
	}
}

// codeTableMarkdown renders Codes() as the Markdown table docs/reliability.md
// carries.
func codeTableMarkdown() string {
	var b strings.Builder
	b.WriteString("| code | class | stage | meaning |\n|---|---|---|---|\n")
	cs := Codes()
	slices.SortStableFunc(cs, func(a, b CodeInfo) int { return classRank(a.Class) - classRank(b.Class) })
	for _, c := range cs {
		stage := c.Stage
		if stage == "" {
			stage = "any"
		}
		b.WriteString("| `" + string(c.Code) + "` | " + string(c.Class) + " | " + stage + " | " + c.Meaning + " |\n")
	}
	return b.String()
}

// TestOneReasonForAWrongBundle: a bundle that is not the pinned one is one
// fact, so one reason, whether the row says it the way the preflight now
// does (the digest beside the pin, the preflight stopped, no problem) or
// as rows of earlier versions did (a preflight problem of the same code):
// bundle_identity, a setup error, never again with bundle_mismatch beside it.
func TestOneReasonForAWrongBundle(t *testing.T) {
	stopped := func() Result {
		r := Result{Schema: ResultSchema, Group: "g", Profile: "p", Workload: Workload{Warmup: 5, Measured: 50, Concurrency: 1},
			Provenance: Provenance{BundlePath: "/b/p.bundle", BundleSHA256: "aa", BundlePinnedSHA256: "bb", AIPerfVersion: QualificationAIPerfVersion},
			Stages: []Stage{{Name: StagePreflight, Status: StageError, Error: "profile p: bundle /b/p.bundle has sha256 aa ..."},
				{Name: StageServer, Status: StageSkipped}, {Name: StageCorrectness, Status: StageSkipped}, {Name: StageJoin, Status: StageSkipped}}}
		return r
	}
	r := stopped()
	Judge(&r)
	assert.Equal(t, VerdictError, r.Verdict)
	require.Equal(t, []Code{CodeBundleIdentity}, codes(r.Reasons), "%+v", r.Reasons)
	assert.Equal(t, ClassSetup, r.Reasons[0].Class)
	assert.Equal(t, StagePreflight, r.Reasons[0].Stage)
	for _, w := range []string{"profile p: bundle /b/p.bundle", "sha256 aa", "pins bb", "not the bundle that was qualified"} {
		assert.Contains(t, r.Reasons[0].Message, w)
	}

	legacy := stopped()
	legacy.Problems = []Problem{{Stage: StagePreflight, Code: CodeBundleIdentity, Message: "profile p: bundle /b/p.bundle has sha256 aa but the inventory (inv.yaml:7) pins bb"}}
	Judge(&legacy)
	assert.Equal(t, VerdictError, legacy.Verdict)
	require.Equal(t, []Code{CodeBundleIdentity}, codes(legacy.Reasons), "%+v", legacy.Reasons)
	assert.Contains(t, legacy.Reasons[0].Message, "inv.yaml:7", "the recorded problem is the reason")
}
