package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func full(expected int) Counts {
	return Counts{Expected: expected, Sent: expected, Matched: expected}
}

// good is a result every rule accepts.
func good() Result {
	return Result{
		Schema: ResultSchema, Group: "vlm", Profile: "p", Verdict: VerdictFailed,
		Requests:        full(55),
		RequestsByPhase: map[string]Counts{PhaseWarmup: full(5), PhaseMeasured: full(50)},
		Correctness: &Correctness{Ran: true, Passed: true, Gates: []Gate{
			{Name: "map_50_95", Value: 0.91, Op: ">=", Threshold: 0.5, Passed: true}}},
	}
}

func codes(rs []Reason) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Code)
	}
	return out
}

func TestJudge(t *testing.T) {
	cases := []struct {
		name    string
		edit    func(r *Result)
		verdict string
		codes   []string
	}{
		{"all matched and correct", func(r *Result) {}, VerdictQualified, []string{}},
		{"correctness not run", func(r *Result) { r.Correctness = nil }, VerdictFailed, []string{CodeCorrectnessNotRun}},
		{"correctness ran false", func(r *Result) { r.Correctness.Ran = false }, VerdictFailed, []string{CodeCorrectnessNotRun}},
		{"correctness broke", func(r *Result) { r.Correctness.Error = "exit status 2" }, VerdictFailed, []string{CodeCorrectnessError}},
		{"gate re-evaluated", func(r *Result) { r.Correctness.Gates[0].Value = 0.4 }, VerdictFailed, []string{CodeCorrectnessFailed}},
		{"family failed although every gate holds", func(r *Result) {
			r.Correctness.Passed, r.Correctness.Gates[0].Passed = false, false
		}, VerdictFailed, []string{CodeCorrectnessFailed}},
		{"unknown op never holds", func(r *Result) { r.Correctness.Gates[0].Op = "~" }, VerdictFailed, []string{CodeCorrectnessFailed}},
		{"no gates, family failed", func(r *Result) { r.Correctness.Gates, r.Correctness.Passed = nil, false }, VerdictFailed, []string{CodeCorrectnessFailed}},
		{"no gates, family passed", func(r *Result) { r.Correctness.Gates = nil }, VerdictQualified, []string{}},
		{"one mismatch", func(r *Result) {
			r.RequestsByPhase[PhaseMeasured] = Counts{Expected: 50, Sent: 50, Matched: 49, Mismatched: 1}
			r.Requests = Counts{Expected: 55, Sent: 55, Matched: 54, Mismatched: 1}
		}, VerdictFailed, []string{CodeMismatched}},
		{"warmup errors count too", func(r *Result) {
			r.RequestsByPhase[PhaseWarmup] = Counts{Expected: 5, Sent: 5, Matched: 4, Errored: 1}
			r.Requests = Counts{Expected: 55, Sent: 55, Matched: 54, Errored: 1}
		}, VerdictFailed, []string{CodeErrored}},
		{"short of expected", func(r *Result) {
			r.RequestsByPhase[PhaseMeasured] = Counts{Expected: 50, Sent: 49, Matched: 49}
			r.Requests = Counts{Expected: 55, Sent: 54, Matched: 54}
		}, VerdictFailed, []string{CodeShortCount}},
		{"every failure kind", func(r *Result) {
			c := Counts{Expected: 50, Sent: 50, Matched: 43, Mismatched: 1, Errored: 1, MissingNative: 1,
				MissingHTTP: 1, MissingServerRecord: 1, Duplicates: 1, Meaningless: 1}
			r.RequestsByPhase[PhaseMeasured] = c
			r.Requests = c.Add(full(5))
		}, VerdictFailed, []string{CodeMismatched, CodeErrored, CodeMissingNative, CodeMissingHTTP, CodeMissingServerRec, CodeDuplicate, CodeMeaningless}},
		{"matched short without a cause", func(r *Result) {
			r.RequestsByPhase[PhaseMeasured] = Counts{Expected: 50, Sent: 50, Matched: 48}
			r.Requests = Counts{Expected: 55, Sent: 55, Matched: 53}
		}, VerdictFailed, []string{CodeUnmatched}},
		{"no measured phase", func(r *Result) {
			delete(r.RequestsByPhase, PhaseMeasured)
			r.Requests = full(5)
		}, VerdictFailed, []string{CodeNoRequests}},
		{"totals disagree with phases", func(r *Result) { r.Requests.Matched = 54 }, VerdictFailed, []string{CodeCountsInconsist}},
		{"a stage's reason stands", func(r *Result) {
			r.Reasons = []Reason{{Stage: "aiperf", Code: "aiperf_incomplete", Message: "profile_export.jsonl is short"}}
		}, VerdictFailed, []string{"aiperf_incomplete"}},
		{"stale judge reasons are dropped", func(r *Result) {
			r.Reasons = []Reason{{Stage: StageJoin, Code: CodeMismatched, Message: "measured: old"}}
		}, VerdictQualified, []string{}},
		{"error is kept", func(r *Result) {
			r.Verdict, r.Correctness = VerdictError, nil
			r.Reasons = []Reason{{Stage: "start-server", Code: "server_exit", Message: "exit 1"}}
		}, VerdictError, []string{"server_exit"}},
		{"interrupted is kept", func(r *Result) {
			r.Verdict = VerdictInterrupted
			r.Reasons = []Reason{{Stage: "aiperf", Code: "interrupted", Message: "SIGINT"}}
		}, VerdictInterrupted, []string{"interrupted"}},
		{"excluded is kept", func(r *Result) { r.Verdict, r.Exclusion = VerdictExcluded, "two GPUs" }, VerdictExcluded, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := good()
			tc.edit(&r)
			Judge(&r)
			assert.Equal(t, tc.verdict, r.Verdict)
			assert.Equal(t, tc.codes, codes(r.Reasons))
			for _, rs := range r.Reasons {
				assert.NotEmpty(t, rs.Stage)
				assert.NotEmpty(t, rs.Message)
			}
		})
	}
}

func TestJudgeMessages(t *testing.T) {
	r := good()
	r.RequestsByPhase[PhaseMeasured] = Counts{Expected: 50, Sent: 48, Matched: 46, Mismatched: 2}
	r.Requests = r.RequestsByPhase[PhaseMeasured].Add(full(5))
	r.Correctness.Gates[0].Value = 0.41
	Judge(&r)
	require.Len(t, r.Reasons, 3)
	assert.Equal(t, "the family's correctness case failed: map_50_95 0.410 ≥ 0.500 does not hold", r.Reasons[0].Message)
	assert.Equal(t, "measured: the client reported 48 of 50 expected requests", r.Reasons[1].Message)
	assert.Equal(t, "measured: 2 requests' native and HTTP answers differ", r.Reasons[2].Message)
	assert.False(t, r.Correctness.Passed)
}

// A stored reason Judge still finds keeps its (more detailed) message; one
// for another phase or no longer true is replaced or dropped.
func TestJudgeKeepsDetailedMessages(t *testing.T) {
	r := good()
	r.RequestsByPhase[PhaseMeasured] = Counts{Expected: 50, Sent: 50, Matched: 49, Mismatched: 1}
	r.Requests = r.RequestsByPhase[PhaseMeasured].Add(full(5))
	detailed := Reason{Stage: StageJoin, Code: CodeMismatched, Message: "measured: 1 of 50 requests differ from the native answer (first: req-7: 3 != 4)"}
	r.Reasons = []Reason{
		{Stage: StageJoin, Code: CodeMismatched, Message: "warmup: 1 of 5 requests differ"},
		detailed,
		{Stage: StageJoin, Code: "unclaimed_server_records", Message: "the server recorded 1 request the client never reported"},
	}
	Judge(&r)
	assert.Equal(t, VerdictFailed, r.Verdict)
	assert.Equal(t, []Reason{detailed, r.Reasons[1]}, r.Reasons)
	assert.Equal(t, "unclaimed_server_records", r.Reasons[1].Code)
}

func TestRejudgeRecountsFromJoinedLines(t *testing.T) {
	r := good()
	r.Verdict = VerdictQualified
	ms := func(v float64) *float64 { return &v }
	var lines []JoinedLine
	for i := range 5 {
		lines = append(lines, JoinedLine{RequestID: "w" + string(rune('a'+i)), Phase: PhaseWarmup, Status: JoinMatched, HTTPMS: ms(1), TaskMS: ms(1)})
	}
	for i := range 50 {
		st := JoinMatched
		if i == 7 {
			st = JoinMeaningless
		}
		lines = append(lines, JoinedLine{RequestID: "m" + string(rune('a'+i)), Phase: PhaseMeasured, Status: st})
	}
	at := time.Date(2026, 12, 2, 9, 0, 0, 0, time.FixedZone("CET", 3600))
	n := RejudgeResult(r, lines, at, "v-test")
	assert.Equal(t, VerdictQualified, r.Verdict, "the original is not modified")
	assert.Equal(t, VerdictFailed, n.Verdict)
	assert.Equal(t, []string{CodeMeaningless}, codes(n.Reasons))
	assert.Equal(t, Counts{Expected: 50, Sent: 50, Matched: 49, Meaningless: 1}, n.RequestsByPhase[PhaseMeasured])
	assert.Equal(t, 55, n.Requests.Expected)
	require.NotNil(t, n.Rejudged)
	assert.Equal(t, Rejudge{OriginalVerdict: VerdictQualified, At: at.UTC(), HarnessVersion: "v-test"}, *n.Rejudged)

	// Gates re-evaluated on a copy: the original's gates are untouched.
	r2 := good()
	r2.Correctness.Gates[0].Value = 0.1
	n2 := RejudgeResult(r2, nil, at, "v-test")
	assert.True(t, r2.Correctness.Gates[0].Passed)
	assert.False(t, n2.Correctness.Gates[0].Passed)
}

// TestFixturesAreJudged checks the hand-made evidence against the rules:
// every stored verdict in roots a, b and baseline is what Judge says (the
// rejudge root is deliberately inconsistent).
func TestFixturesAreJudged(t *testing.T) {
	n := 0
	for _, root := range []string{rootA, rootB, rootBaseline} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.Name() != ResultFile {
				return err
			}
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			stored, err := DecodeResult(path, data, "", "")
			require.NoError(t, err)
			var judged Result
			require.NoError(t, json.Unmarshal(data, &judged))
			Judge(&judged)
			assert.Equal(t, stored.Verdict, judged.Verdict, path)
			assert.Equal(t, stored.Reasons, judged.Reasons, path)
			n++
			return nil
		})
		require.NoError(t, err)
	}
	assert.Greater(t, n, 10)
}

func TestRejudgeEvidenceKeepsOriginals(t *testing.T) {
	root := copyTree(t, rootRejudge)
	orig := filepath.Join(root, "vlm", "ref-vlm-small", ResultFile)
	before, err := os.ReadFile(orig)
	require.NoError(t, err)
	written, err := RejudgeEvidence([]string{root}, "vlm", time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC), "test")
	require.NoError(t, err)
	assert.Equal(t, []string{
		filepath.Join(root, "vlm", "ref-vlm-base", RejudgedFile),
		filepath.Join(root, "vlm", "ref-vlm-small", RejudgedFile),
	}, written)
	after, err := os.ReadFile(orig)
	require.NoError(t, err)
	assert.Equal(t, before, after, "result.json is never modified")

	plain, err := Load([]string{root}, "vlm")
	require.NoError(t, err)
	rejudged, err := LoadWith([]string{root}, "vlm", LoadOptions{Rejudged: true})
	require.NoError(t, err)
	verdicts := func(g *GroupReport) string {
		var s []string
		for _, r := range g.Rows {
			s = append(s, r.Profile+"="+r.Verdict)
		}
		return strings.Join(s, " ")
	}
	assert.Equal(t, "ref-vlm-base=failed ref-vlm-small=qualified", verdicts(plain))
	assert.Equal(t, "measured: 1 of 50 requests differ from the native answer (first: req-ref-vlm-base-0031: answers differ)",
		plain.Rows[0].Result.Reasons[0].Message)
	assert.Empty(t, rejudged.Rows[0].Result.Reasons, "the recount found no mismatch")
	assert.Equal(t, "ref-vlm-base=qualified ref-vlm-small=failed", verdicts(rejudged))
	assert.Equal(t, VerdictFailed, rejudged.Rows[0].Result.Rejudged.OriginalVerdict)
}
