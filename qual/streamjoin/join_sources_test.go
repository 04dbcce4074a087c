package streamjoin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

// measuredIDs are the request ids of the measured requests of a clean
// checkpoint, in the records export's order.
func measuredIDs(c checkpoint) []string {
	var ids []string
	for _, l := range c.lines(synth.FileRecords) {
		if meta(l)["benchmark_phase"] == "profiling" {
			ids = append(ids, meta(l)["x_request_id"].(string))
		}
	}
	return ids
}

// setByID sets key to v (delete when v is nil) on the line of a file whose
// request_id is id.
func setByID(c checkpoint, file, id, key string, v any) {
	c.t.Helper()
	found := false
	c.edit(file, func(ls []map[string]any) []map[string]any {
		for _, l := range ls {
			if l["request_id"] == id {
				found = true
				if v == nil {
					delete(l, key)
				} else {
					l[key] = v
				}
			}
		}
		return ls
	})
	require.True(c.t, found, "%s has no line for %s", file, id)
}

// judged joins a checkpoint and judges the row it gives, otherwise
// qualifying (workload, pins, correctness, AIPerf version).
func judged(t *testing.T, c checkpoint, opts streamjoin.Options) (*streamjoin.Result, *verdict.Result, string) {
	t.Helper()
	var mism bytes.Buffer
	opts.Mismatches = &mism
	res, err := streamjoin.Join(context.Background(), streamjoin.CheckpointFiles(c.dir), opts)
	require.NoError(t, err)
	row := verdict.Result{Workload: verdict.Workload{Warmup: 5, Measured: 50, Concurrency: 1},
		Answers:     verdict.Semantics{EndpointType: opts.Semantics.EndpointType},
		Correctness: &verdict.Correctness{Ran: true, Passed: true, Gates: []verdict.Gate{{Name: "g", Value: 1, Op: ">=", Threshold: 0.5, Passed: true}}},
		Provenance: verdict.Provenance{AIPerfVersion: "0.13.0", BundleSHA256: "x", BundlePinnedSHA256: "x",
			BundleChecks: []verdict.BundleCheck{{After: verdict.BundleAfterCorrectness, SHA256: "x"}}},
		Stages: []verdict.Stage{{Name: "correctness", Status: "ok"}, {Name: "join", Status: "ok"}}}
	res.Apply(&row)
	verdict.Judge(&row)
	return res, &row, mism.String()
}

func reasonCodes(r *verdict.Result) []verdict.Code {
	var out []verdict.Code
	for _, x := range r.Reasons {
		out = append(out, x.Code)
	}
	return out
}

// TestTaskTimeComesFromTheDeclaredSource: the Task series is read from the
// source the family declares, and only from it; the row says which.
func TestTaskTimeComesFromTheDeclaredSource(t *testing.T) {
	for _, src := range []string{verdict.TaskTimeServer, verdict.TaskTimeNative} {
		t.Run(src, func(t *testing.T) {
			c := cleanCheckpoint(t, synth.FamilyVLM)
			ids := measuredIDs(c)
			// Give each source distinct values, each shorter than the
			// request the client timed (at least 2 ms in the fixture):
			// 1+i/1000 natively, 0.5+i/1000 in the server's records.
			for i, id := range ids {
				setByID(c, synth.FileNative, id, "task_ms", 1+float64(i)/1000)
				setByID(c, synth.FileServer, id, "task_ms", 0.5+float64(i)/1000)
			}
			opts := options(t, synth.FamilyVLM, 5, 50)
			opts.TaskTime, opts.TaskScope = src, "the-scope"
			res, row, _ := judged(t, c, opts)
			require.Len(t, res.MeasuredTask, 50)
			base := 0.5
			if src == verdict.TaskTimeNative {
				base = 1
			}
			for _, v := range res.MeasuredTask {
				assert.True(t, v >= base && v < base+0.05, "Task value %v is not from the %s source", v, src)
			}
			assert.Equal(t, verdict.VerdictQualified, row.Verdict, "%+v", row.Reasons)
			assert.Equal(t, src, row.LatencyMS.TaskSource)
			assert.Equal(t, "the-scope", row.LatencyMS.TaskScope)
			require.NotNil(t, row.LatencyMS.Task.P50)
			assert.GreaterOrEqual(t, *row.LatencyMS.Task.P50, base)
		})
	}
}

// TestTaskTimeMissingFailsClosed breaks the declared source on purpose: a
// measured matched request without a value (null, absent, or only the
// other source has one). The row then shows no Task percentiles — never
// percentiles over fewer requests than HTTP's — names a request without a
// value, and does not qualify.
func TestTaskTimeMissingFailsClosed(t *testing.T) {
	cases := []struct {
		name, src, file string
		value           any // nil: the key is removed
	}{
		{"native: task_ms null", verdict.TaskTimeNative, synth.FileNative, json.RawMessage("null")},
		{"native: task_ms absent", verdict.TaskTimeNative, synth.FileNative, nil},
		{"server: task_ms null", verdict.TaskTimeServer, synth.FileServer, json.RawMessage("null")},
		{"server: task_ms absent", verdict.TaskTimeServer, synth.FileServer, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cleanCheckpoint(t, synth.FamilyVLM)
			victim := measuredIDs(c)[17]
			setByID(c, tc.file, victim, "task_ms", tc.value)
			opts := options(t, synth.FamilyVLM, 5, 50)
			opts.TaskTime = tc.src
			res, row, _ := judged(t, c, opts)
			assert.Equal(t, 50, row.RequestsByPhase[verdict.PhaseMeasured].Matched, "the request itself still matched")
			assert.Len(t, res.MeasuredTask, 49)
			assert.Equal(t, 50, row.LatencyMS.HTTP.Count)
			assert.NotNil(t, row.LatencyMS.HTTP.P50)
			assert.Equal(t, 49, row.LatencyMS.Task.Count)
			assert.Nil(t, row.LatencyMS.Task.P50, "no Task figure over another set than HTTP's")
			assert.Nil(t, row.LatencyMS.Task.P95)
			assert.Equal(t, victim, row.LatencyMS.Task.MissingExample)
			assert.Equal(t, verdict.VerdictFailed, row.Verdict)
			require.Contains(t, reasonCodes(row), verdict.CodeLatencyIncomplete)
			for _, r := range row.Reasons {
				if r.Code == verdict.CodeLatencyIncomplete {
					assert.Contains(t, r.Message, tc.src+" task_ms")
					assert.Contains(t, r.Message, "49 of the 50")
					assert.Contains(t, r.Message, victim)
				}
			}
		})
	}
	t.Run("the other source's values do not fill the gap", func(t *testing.T) {
		c := cleanCheckpoint(t, synth.FamilyVLM)
		victim := measuredIDs(c)[3]
		setByID(c, synth.FileNative, victim, "task_ms", nil)
		opts := options(t, synth.FamilyVLM, 5, 50)
		opts.TaskTime = verdict.TaskTimeNative
		res, row, _ := judged(t, c, opts)
		assert.Len(t, res.MeasuredTask, 49, "the server's record has a task_ms for it, and must not be used")
		assert.NotEqual(t, verdict.VerdictQualified, row.Verdict)
	})
	t.Run("an unknown source is refused", func(t *testing.T) {
		c := cleanCheckpoint(t, synth.FamilyVLM)
		opts := options(t, synth.FamilyVLM, 5, 50)
		opts.TaskTime = "handler"
		_, err := streamjoin.Join(context.Background(), streamjoin.CheckpointFiles(c.dir), opts)
		assert.ErrorContains(t, err, `unknown Task time source "handler"`)
	})
}

// editHTTPBody rewrites the chat response body of the raw export line of
// id through fn.
func editHTTPBody(c checkpoint, id string, fn func(body map[string]any)) {
	c.t.Helper()
	found := false
	c.edit(synth.FileRaw, func(ls []map[string]any) []map[string]any {
		for _, l := range ls {
			if meta(l)["x_request_id"] != id {
				continue
			}
			resp := l["responses"].([]any)[0].(map[string]any)
			var body map[string]any
			d := json.NewDecoder(strings.NewReader(resp["text"].(string)))
			d.UseNumber()
			require.NoError(c.t, d.Decode(&body))
			fn(body)
			b, err := json.Marshal(body)
			require.NoError(c.t, err)
			resp["text"] = string(b)
			found = true
		}
		return ls
	})
	require.True(c.t, found, "no raw line for %s", id)
}

// TestOutputTokensComeFromTheHTTPAnswer: the row's output tokens are the
// HTTP answers' usage.completion_tokens over the measured matched requests,
// whatever the native runner counted (the `trtmc run` path counts none);
// where another source counted too, a disagreement is a finding on that
// request, never a silent pick.
func TestOutputTokensComeFromTheHTTPAnswer(t *testing.T) {
	nativeObjects := func(c checkpoint, tokens int) {
		c.edit(synth.FileNative, func(ls []map[string]any) []map[string]any {
			for _, l := range ls {
				if s, ok := l["answer"].(string); ok {
					l["answer"] = map[string]any{"text": s, "completion_tokens": tokens}
				}
			}
			return ls
		})
	}
	t.Run("native answers without counts (CLI path): the HTTP count", func(t *testing.T) {
		c := cleanCheckpoint(t, synth.FamilyVLM)
		for _, id := range measuredIDs(c) {
			editHTTPBody(c, id, func(b map[string]any) { b["usage"].(map[string]any)["completion_tokens"] = 3 })
			setByID(c, synth.FileServer, id, "completion_tokens", 3)
		}
		res, row, _ := judged(t, c, options(t, synth.FamilyVLM, 5, 50))
		assert.Equal(t, 150, res.OutputTokens)
		require.NotNil(t, row.OutputTokens)
		assert.Equal(t, 150, *row.OutputTokens)
		assert.Equal(t, verdict.VerdictQualified, row.Verdict, "%+v", row.Reasons)
	})
	t.Run("native counts equal to HTTP's: matched", func(t *testing.T) {
		c := cleanCheckpoint(t, synth.FamilyVLM)
		nativeObjects(c, 1)
		res, row, _ := judged(t, c, options(t, synth.FamilyVLM, 5, 50))
		assert.Equal(t, 50, res.OutputTokens)
		assert.Equal(t, verdict.VerdictQualified, row.Verdict, "%+v", row.Reasons)
	})
	t.Run("a native count differs, same text: mismatched, with the diff", func(t *testing.T) {
		c := cleanCheckpoint(t, synth.FamilyVLM)
		nativeObjects(c, 1)
		victim := measuredIDs(c)[8]
		setByID(c, synth.FileNative, victim, "answer", map[string]any{"text": c.nativeText(victim), "completion_tokens": 2})
		res, row, mism := judged(t, c, options(t, synth.FamilyVLM, 5, 50))
		m := row.RequestsByPhase[verdict.PhaseMeasured]
		assert.Equal(t, 1, m.Mismatched)
		assert.Equal(t, 49, res.OutputTokens, "over the 49 matched")
		assert.Contains(t, mism, victim)
		assert.Contains(t, mism, "same text, but 1 completion tokens over http and 2 native")
		assert.Equal(t, verdict.VerdictFailed, row.Verdict)
	})
	t.Run("the server's record counts otherwise: inconsistent", func(t *testing.T) {
		c := cleanCheckpoint(t, synth.FamilyVLM)
		victim := measuredIDs(c)[21]
		setByID(c, synth.FileServer, victim, "completion_tokens", 5)
		_, row, _ := judged(t, c, options(t, synth.FamilyVLM, 5, 50))
		m := row.RequestsByPhase[verdict.PhaseMeasured]
		assert.Equal(t, 1, m.Inconsistent)
		assert.Equal(t, 49, m.Matched)
		require.Contains(t, reasonCodes(row), verdict.CodeInconsistent)
		var ex *verdict.RequestExample
		for i := range row.Examples {
			if row.Examples[i].Status == verdict.JoinInconsistent {
				ex = &row.Examples[i]
			}
		}
		require.NotNil(t, ex)
		assert.Equal(t, victim, ex.RequestID)
		assert.Contains(t, ex.Problem, "the server's record counts 5 completion tokens, the HTTP answer's usage 1")
	})
	t.Run("the server's record counts none: nothing to compare", func(t *testing.T) {
		c := cleanCheckpoint(t, synth.FamilyVLM)
		for _, id := range measuredIDs(c) {
			setByID(c, synth.FileServer, id, "completion_tokens", json.RawMessage("null"))
		}
		_, row, _ := judged(t, c, options(t, synth.FamilyVLM, 5, 50))
		assert.Equal(t, verdict.VerdictQualified, row.Verdict, "%+v", row.Reasons)
	})
	t.Run("a server record's count that is not a count is malformed", func(t *testing.T) {
		c := cleanCheckpoint(t, synth.FamilyVLM)
		setByID(c, synth.FileServer, measuredIDs(c)[0], "completion_tokens", -1)
		_, err := streamjoin.Join(context.Background(), streamjoin.CheckpointFiles(c.dir), options(t, synth.FamilyVLM, 5, 50))
		assert.ErrorContains(t, err, "completion_tokens")
	})
	t.Run("an HTTP answer without usage: meaningless, never counted as 0", func(t *testing.T) {
		c := cleanCheckpoint(t, synth.FamilyVLM)
		victim := measuredIDs(c)[30]
		editHTTPBody(c, victim, func(b map[string]any) { delete(b, "usage") })
		res, row, _ := judged(t, c, options(t, synth.FamilyVLM, 5, 50))
		m := row.RequestsByPhase[verdict.PhaseMeasured]
		assert.Equal(t, 1, m.Meaningless)
		assert.Equal(t, 49, res.OutputTokens)
		assert.Equal(t, verdict.VerdictFailed, row.Verdict)
		for _, ex := range row.Examples {
			if ex.Status == verdict.JoinMeaningless {
				assert.Equal(t, victim, ex.RequestID)
			}
		}
	})
}

// nativeText is the text of a request's native answer (a JSON string).
func (c checkpoint) nativeText(id string) string {
	c.t.Helper()
	for _, l := range c.lines(synth.FileNative) {
		if l["request_id"] == id {
			switch a := l["answer"].(type) {
			case string:
				return a
			case map[string]any:
				return a["text"].(string)
			}
		}
	}
	c.t.Fatalf("no native answer for %s", id)
	return ""
}
