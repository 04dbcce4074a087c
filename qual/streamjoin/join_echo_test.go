package streamjoin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

func trace(l map[string]any) map[string]any { return l["trace_data"].(map[string]any) }

// joinRow joins a checkpoint and judges the row it gives, as the join
// stage does; it returns the result, the row and joined.jsonl by id.
func joinRow(t *testing.T, c checkpoint) (*streamjoin.Result, verdict.Result, map[string]verdict.JoinedLine) {
	t.Helper()
	opts := options(t, synth.FamilyDetect, 5, 50)
	var joined bytes.Buffer
	opts.Joined = &joined
	r, err := streamjoin.Join(context.Background(), streamjoin.CheckpointFiles(c.dir), opts)
	require.NoError(t, err)
	lines, err := verdict.DecodeJoined(&joined)
	require.NoError(t, err)
	byID := map[string]verdict.JoinedLine{}
	for _, l := range lines {
		byID[l.RequestID] = l
	}
	row := verdict.Result{Workload: verdict.Workload{Warmup: 5, Measured: 50, Concurrency: 1},
		Answers: verdict.Semantics{EndpointType: "image_retrieval"},
		Stages:  []verdict.Stage{{Name: "join", Status: "ok"}}}
	r.Apply(&row)
	verdict.Judge(&row)
	return r, row, byID
}

func joinReasons(row verdict.Result) map[string]verdict.Code {
	out := map[string]verdict.Code{}
	for _, r := range row.Reasons {
		if r.Stage == verdict.StageJoin {
			out[string(r.Code)+"/"+r.Phase] = r.Code
		}
	}
	return out
}

// TestEchoProvesIdentity: every request, warmup and measured, must show in
// AIPerf's HTTP trace that the server's answer echoed the X-Request-ID
// sent. A missing echo, a trace-less record and another id are each a
// join failure of their own, counted in their phase and named in the
// reasons; a header in another case is the same header.
func TestEchoProvesIdentity(t *testing.T) {
	c := cleanCheckpoint(t, synth.FamilyDetect)
	ids := map[string]string{}
	c.edit(synth.FileRecords, func(ls []map[string]any) []map[string]any {
		var warm, prof []map[string]any
		for _, l := range ls {
			if meta(l)["benchmark_phase"] == "warmup" {
				warm = append(warm, l)
			} else {
				prof = append(prof, l)
			}
		}
		h := func(l map[string]any) map[string]any { return trace(l)["response_headers"].(map[string]any) }
		delete(h(warm[1]), "X-Request-ID")
		ids["warmup no echo"] = meta(warm[1])["x_request_id"].(string)
		h(prof[3])["X-Request-ID"] = "req-0123456789abcdef"
		ids["measured other id"] = meta(prof[3])["x_request_id"].(string)
		delete(prof[7], "trace_data")
		ids["measured no trace"] = meta(prof[7])["x_request_id"].(string)
		hs := h(prof[9])
		hs["x-request-id"] = hs["X-Request-ID"]
		delete(hs, "X-Request-ID")
		ids["measured lower case"] = meta(prof[9])["x_request_id"].(string)
		trace(prof[11])["request_headers"].(map[string]any)["X-Request-ID"] = "not-what-the-record-says"
		ids["measured sent another id"] = meta(prof[11])["x_request_id"].(string)
		return ls
	})
	r, row, joined := joinRow(t, c)

	w, m := r.ByPhase[verdict.PhaseWarmup], r.ByPhase[verdict.PhaseMeasured]
	assert.Equal(t, 1, w.EchoMissing, "warmup: %+v", w)
	assert.Equal(t, 4, w.Matched)
	assert.Equal(t, 4, w.EchoProven)
	assert.Equal(t, 1, m.EchoMissing, "measured: %+v", m)
	assert.Equal(t, 2, m.EchoMismatched, "measured: %+v", m)
	assert.Equal(t, 47, m.Matched)
	assert.Equal(t, 47, m.EchoProven)

	for what, status := range map[string]string{
		"warmup no echo": verdict.JoinEchoMissing, "measured no trace": verdict.JoinEchoMissing,
		"measured other id": verdict.JoinEchoMismatched, "measured sent another id": verdict.JoinEchoMismatched,
		"measured lower case": verdict.JoinMatched,
	} {
		l := joined[ids[what]]
		assert.Equal(t, status, l.Status, what)
		if status != verdict.JoinMatched {
			assert.NotEmpty(t, l.Problem, what)
		}
	}
	assert.Equal(t, verdict.EchoNoTrace, joined[ids["measured no trace"]].Echo)
	assert.Contains(t, joined[ids["measured other id"]].Problem, `"req-0123456789abcdef"`)
	assert.Contains(t, joined[ids["measured no trace"]].Problem, "--export-http-trace")
	assert.Equal(t, verdict.EchoMatch, joined[ids["measured lower case"]].Echo)

	assert.Equal(t, verdict.VerdictFailed, row.Verdict)
	codes := joinReasons(row)
	assert.Contains(t, codes, "echo_missing/warmup")
	assert.Contains(t, codes, "echo_missing/measured")
	assert.Contains(t, codes, "echo_mismatched/measured")
	for _, rs := range row.Reasons {
		if rs.Code == verdict.CodeEchoMismatched {
			assert.Contains(t, rs.Message, "first:", "the reason names its first request")
		}
	}
}

// TestHTTPSplitExplainsHTTPMinusTask: every joined line splits its HTTP
// time, the parts add up to it, and the row's means add up the same way:
// HTTP = client + sending + waiting + receiving, waiting = Task + outside.
func TestHTTPSplitExplainsHTTPMinusTask(t *testing.T) {
	r, row, joined := joinRow(t, cleanCheckpoint(t, synth.FamilyDetect))
	require.Len(t, joined, 55)
	for id, l := range joined {
		require.NotNil(t, l.SendingMS, id)
		require.NotNil(t, l.ClientMS, id)
		sum := *l.ClientMS + *l.SendingMS + *l.WaitingMS + *l.ReceivingMS
		assert.InDelta(t, *l.HTTPMS, sum, 1e-5, "the parts add up (float32: 7 digits): %s", id)
		assert.InDelta(t, 0.025, *l.ClientMS, 1e-3, "the synthetic exchange starts 25 µs into the request: %s", id)
	}
	s := row.LatencyMS.HTTPSplit
	require.NotNil(t, s)
	assert.Equal(t, 50, s.Count)
	require.NotNil(t, s.HTTPMean)
	assert.InDelta(t, *s.HTTPMean, *s.Client.Mean+*s.Sending.Mean+*s.Waiting.Mean+*s.Receiving.Mean, 1e-6)
	assert.InDelta(t, *s.Waiting.Mean, *s.TaskMean+*s.OutsideTask.Mean, 1e-6)
	assert.Len(t, r.Split.Sending, 50)
	assert.NotContains(t, joinReasons(row), "latency_incomplete/measured")
	assert.Contains(t, reports.SplitText(row.LatencyMS, 50), "waiting = Task")
}

// TestHTTPSplitMissingWithholdsIt: a measured matched request whose trace
// lacks a timestamp has no split: the row's split is withheld and names
// it, and the row does not qualify (latency_incomplete).
func TestHTTPSplitMissingWithholdsIt(t *testing.T) {
	c := cleanCheckpoint(t, synth.FamilyDetect)
	var id string
	c.edit(synth.FileRecords, func(ls []map[string]any) []map[string]any {
		for _, l := range ls {
			if meta(l)["benchmark_phase"] == "profiling" {
				delete(trace(l), "response_receive_start_ns")
				id = meta(l)["x_request_id"].(string)
				break
			}
		}
		return ls
	})
	_, row, joined := joinRow(t, c)
	assert.Nil(t, joined[id].SendingMS)
	assert.Equal(t, verdict.JoinMatched, joined[id].Status, "the split explains; it does not decide the match")
	s := row.LatencyMS.HTTPSplit
	require.NotNil(t, s)
	assert.Equal(t, 49, s.Count)
	assert.Equal(t, id, s.MissingExample)
	assert.Nil(t, s.HTTPMean)
	assert.Contains(t, joinReasons(row), "latency_incomplete/measured")
	assert.Contains(t, reports.SplitText(row.LatencyMS, 50), "withheld")
	data, err := json.Marshal(joined[id])
	require.NoError(t, err)
	assert.NotContains(t, string(data), `"sending_ms"`)
	assert.False(t, math.IsNaN(*joined[id].HTTPMS))
}
