//go:build integration

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/stats"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Issue 35: `run --trials 3` against the reference server with one trial
// broken on purpose. The server corrupts its 100th inference answer
// (wrong-answer-every=100): trials 1 to 3 send requests 1–55, 56–110 and
// 111–165 to the one server, so the 100th is a measured request of trial
// 2, and only trial 2. Every trial is complete and joined on its own
// (warmup each time, every request accounted for by id); the row does not
// qualify, and the reason names trial 2; the headline figures are the
// median across the three; `report --rejudge` derives the same row, and
// the seal covers every trial's evidence.
func TestTrialsOneBroken(t *testing.T) {
	h := getHarness(t)
	o := h.run(t, scenario{fault: "wrong-answer-every=100", args: []string{"--trials", "3"}}, 4*time.Minute)
	assertNoOrphans(t, o)
	assertEvidenceSound(t, o.out, false)
	assertPublishable(t, o)
	r := o.result(t, "detection", "ref-detect-small")
	dir := filepath.Join(o.out, "detection", "ref-detect-small")
	assert.Equal(t, int(exitFailed), o.code, o.stderr)
	assert.Equal(t, verdict.VerdictFailed, r.Verdict, "%+v", r.Reasons)
	assert.Equal(t, 3, r.Workload.Trials)
	require.Len(t, r.Trials, 3)
	for k, tr := range r.Trials {
		assert.Equal(t, k+1, tr.Trial)
		assert.DirExists(t, filepath.Join(dir, verdict.TrialDir(k+1)))
		assert.FileExists(t, filepath.Join(dir, verdict.TrialJoined(k+1)))
		w, m := tr.RequestsByPhase[verdict.PhaseWarmup], tr.RequestsByPhase[verdict.PhaseMeasured]
		assert.Equal(t, 5, w.Sent, "trial %d: its own warmup", k+1)
		assert.Equal(t, 5, w.Matched, "trial %d", k+1)
		assert.Equal(t, 50, m.Sent, "trial %d", k+1)
		wantMismatch := map[int]int{1: 1}[k]
		assert.Equal(t, wantMismatch, m.Mismatched, "trial %d", k+1)
		assert.Equal(t, 50-wantMismatch, m.Matched, "trial %d", k+1)
		require.NotNil(t, tr.LatencyMS.HTTP.P50, "trial %d", k+1)
		iv := tr.LatencyMS.HTTP.Interval(50)
		require.NotNil(t, iv, "trial %d has its own intervals", k+1)
		assert.Equal(t, 50-wantMismatch, iv.N)
		require.NotNil(t, tr.ImagesPerSec, "trial %d: AIPerf's throughput", k+1)
		require.NotNil(t, tr.ImagesPerSecInterval, "trial %d: the cycles' interval", k+1)
		assert.NotNil(t, tr.LatencyMS.HTTP.Drift, "trial %d", k+1)
	}
	assert.Equal(t, 165, r.Requests.Sent)
	assert.Equal(t, 164, r.Requests.Matched)
	assert.Zero(t, r.Unclaimed.ServerRecords+r.Unclaimed.NativeAnswers+r.Unclaimed.RawRecords, "no trial's ids are another's unclaimed")
	// The reason names the trial; no reason is about trials 1 or 3.
	rs := reasonWith(t, r, verdict.CodeMismatched)
	assert.Equal(t, 2, rs.Trial)
	assert.True(t, strings.HasPrefix(rs.Message, "trial 2 of 3: measured: 1 of 50 requests: the native and HTTP answers differ"), rs.Message)
	for _, x := range r.Reasons {
		assert.NotContains(t, []int{1, 3}, x.Trial, "%+v", x)
	}
	// The headline: the median across the trials, with their range.
	sp := r.LatencyMS.HTTP.Spread("p50")
	require.NotNil(t, sp)
	assert.Equal(t, 3, sp.Trials)
	assert.Equal(t, sp.Median, *r.LatencyMS.HTTP.P50)
	assert.LessOrEqual(t, sp.Min, sp.Median)
	assert.GreaterOrEqual(t, sp.Max, sp.Median)
	require.NotNil(t, r.ImagesPerSecAcrossTrials)
	assert.Equal(t, r.ImagesPerSecAcrossTrials.Median, *r.ImagesPerSec)

	// report --rejudge re-derives the same row from the trials' evidence.
	code, out, errOut := runCLI(t, nil, "report", "--from", o.out, "--group", "detection", "--rejudge", "-o", "json")
	assert.Equal(t, exitFailed, code, errOut)
	rj := profileJSON(t, out, "ref-detect-small")
	assert.Equal(t, r.Verdict, rj.Verdict)
	assert.Equal(t, r.Reasons, rj.Reasons)
	assert.Equal(t, r.Trials, rj.Trials)
	assert.Equal(t, r.LatencyMS.HTTP, rj.LatencyMS.HTTP)

	// The seal covers every trial's files: one byte of trial 3's records
	// changed, and the row no longer holds.
	rec := filepath.Join(dir, verdict.TrialDir(3), "profile_export.jsonl")
	data, err := os.ReadFile(rec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(rec, append(data, '\n'), 0o644))
	code, out, _ = runCLI(t, nil, "report", "--from", o.out, "--group", "detection", "-o", "json")
	assert.NotEqual(t, exitOK, code)
	assert.Equal(t, verdict.VerdictError, profileJSON(t, out, "ref-detect-small").Verdict, "a trial's changed evidence breaks the row's seal")
}

// profileJSON is the row of profile in a group report's JSON.
func profileJSON(t *testing.T, out, profile string) *verdict.Result {
	t.Helper()
	var rep reports.GroupReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	for _, row := range rep.Rows {
		if row.Profile == profile && row.Result != nil {
			return row.Result
		}
	}
	require.FailNow(t, "no row of "+profile, out)
	return nil
}

// Issue 35: `report --baseline` between two real runs of one reference
// profile, one of them of two trials: the pair is comparable (every field of
// reports.ComparableFields agrees between real runs; the trials may differ),
// both series are compared from the sealed joined.jsonl files — each trial's
// on the side that has them, by the two-stage bootstrap —, and a run compared
// with itself is never a called change.
func TestBaselineBetweenRealRuns(t *testing.T) {
	h := getHarness(t)
	one := h.run(t, scenario{}, 4*time.Minute)
	two := h.run(t, scenario{args: []string{"--trials", "2"}}, 4*time.Minute)
	require.Equal(t, int(exitOK), one.code, one.stderr)
	require.Equal(t, int(exitOK), two.code, two.stderr)
	baseline := func(cur, old string) *reports.BaselineDelta {
		code, out, errOut := runCLI(t, nil, "report", "--from", cur, "--baseline", old, "--group", "detection", "--format", "json")
		require.Equal(t, exitOK, code, errOut)
		var rep reports.GroupReport
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		require.NotNil(t, rep.Baseline)
		for _, r := range rep.Rows {
			if r.Profile == "ref-detect-small" {
				require.NotNil(t, r.Baseline)
				return r.Baseline
			}
		}
		t.Fatal("no ref-detect-small row")
		return nil
	}
	d := baseline(two.out, one.out)
	assert.Empty(t, d.NotComparable)
	assert.Empty(t, d.NotCompared)
	require.NotNil(t, d.HTTPP50, "%+v", d)
	require.NotNil(t, d.TaskP50, "%+v", d)
	assert.Equal(t, 1, d.HTTPP50.BaselineTrials)
	assert.Equal(t, 2, d.HTTPP50.CurrentTrials)
	assert.Equal(t, 100, d.HTTPP50.CurrentN, "every measured matched request of both trials")
	assert.Equal(t, stats.MethodBootstrapMedians, d.HTTPP50.Method)
	assert.LessOrEqual(t, d.HTTPP50.LowerPct, d.HTTPP50.UpperPct)
	// One run against two trials: the run-to-run component for the single
	// run's side only, the interval holding the within-run one.
	assert.Equal(t, 1, d.HTTPP50.RunNoiseSides)
	assert.LessOrEqual(t, d.HTTPP50.LowerPct, d.HTTPP50.WithinLowerPct)
	assert.GreaterOrEqual(t, d.HTTPP50.UpperPct, d.HTTPP50.WithinUpperPct)

	self := baseline(one.out, one.out)
	require.NotNil(t, self.HTTPP50, "%+v", self)
	for _, s := range []*reports.Delta{self.HTTPP50, self.TaskP50} {
		require.NotNil(t, s)
		assert.Equal(t, stats.MethodHodgesLehmannLog, s.Method)
		assert.Zero(t, s.ChangePct, "a run against itself")
		assert.Equal(t, 2, s.RunNoiseSides)
		assert.False(t, stats.Decision(s.Decision).Called(), "%+v", s)
	}
}
