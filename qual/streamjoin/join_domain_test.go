package streamjoin_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual/streamjoin"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

// example is the row's first example of a phase and status.
func example(row *verdict.Result, phase, status string) *verdict.RequestExample {
	for i := range row.Examples {
		if row.Examples[i].Phase == phase && row.Examples[i].Status == status {
			return &row.Examples[i]
		}
	}
	return nil
}

// publicRecords rewrites the server's records as the public trtmc-server
// writes them (records.py idx@a9ed5f69): model_call_ms with timing_scope,
// no task_ms, the HTTP status number.
func publicRecords(c checkpoint) {
	c.edit(synth.FileServer, func(ls []map[string]any) []map[string]any {
		for _, l := range ls {
			l["model_call_ms"], l["timing_scope"] = l["task_ms"], "public_task_call_wall"
			delete(l, "task_ms")
			l["generation_config"] = map[string]any{"max_new_tokens": 32, "use_chat_template": true}
			// The worker's round trip is inside the handler and holds the call.
			l["completion_token_source"], l["streaming"], l["worker_roundtrip_ms"] = "native_task", "none", l["handler_ms"]
		}
		return ls
	})
}

// Every Task time has a domain (issue 25 item 7; issue 32 item 6): finite,
// above zero, of the one timing scope, no longer than the timings of its
// own record that enclose the call (handler_ms, worker_roundtrip_ms) and
// no longer than the call that was timed.
// A value outside it is never a figure: the request is inconsistent,
// naming the file, the field and the bound; the row does not qualify.
func TestTaskTimesHaveADomain(t *testing.T) {
	for name, tt := range map[string]struct {
		src  string
		edit func(c checkpoint, victim string)
		want string
	}{
		"server: longer than the client's request": {verdict.TaskTimeServer, func(c checkpoint, v string) {
			setByID(c, synth.FileServer, v, "task_ms", 3.6e6)
			setByID(c, synth.FileServer, v, "handler_ms", 3.7e6)
		}, "server_records.jsonl: the Task time 3.6e+06 ms is longer than the"},
		// Issue 32 item 6: a Task time is above zero and inside the
		// timings of its own record that enclose the call.
		"server: zero": {verdict.TaskTimeServer, func(c checkpoint, v string) {
			setByID(c, synth.FileServer, v, "task_ms", 0)
		}, "server_records.jsonl: task_ms 0 is not a time (zero, negative or not finite)"},
		"server: model_call_ms zero": {verdict.TaskTimeServer, func(c checkpoint, v string) {
			publicRecords(c)
			setByID(c, synth.FileServer, v, "model_call_ms", 0)
		}, "server_records.jsonl: model_call_ms 0 is not a time"},
		"server: longer than its record's handler_ms": {verdict.TaskTimeServer, func(c checkpoint, v string) {
			setByID(c, synth.FileServer, v, "handler_ms", 0.2)
		}, "is longer than the same record's handler_ms 0.2, which encloses the Task call"},
		"server: model_call_ms longer than its record's handler_ms": {verdict.TaskTimeServer, func(c checkpoint, v string) {
			publicRecords(c)
			setByID(c, synth.FileServer, v, "model_call_ms", 9)
			setByID(c, synth.FileServer, v, "handler_ms", 5)
			setByID(c, synth.FileServer, v, "worker_roundtrip_ms", nil)
		}, "server_records.jsonl: model_call_ms 9 is longer than the same record's handler_ms 5"},
		"server: model_call_ms longer than its record's worker_roundtrip_ms": {verdict.TaskTimeServer, func(c checkpoint, v string) {
			publicRecords(c)
			setByID(c, synth.FileServer, v, "model_call_ms", 2)
			setByID(c, synth.FileServer, v, "handler_ms", 10)
			setByID(c, synth.FileServer, v, "worker_roundtrip_ms", 1.5)
		}, "server_records.jsonl: model_call_ms 2 is longer than the same record's worker_roundtrip_ms 1.5"},
		"native: zero": {verdict.TaskTimeNative, func(c checkpoint, v string) {
			setByID(c, synth.FileNative, v, "task_ms", 0)
		}, "native_answers.jsonl: task_ms 0 is not a time"},
		"server: 1e300": {verdict.TaskTimeServer, func(c checkpoint, v string) {
			setByID(c, synth.FileServer, v, "task_ms", 1e300)
		}, "is longer than the"},
		"server: negative": {verdict.TaskTimeServer, func(c checkpoint, v string) {
			setByID(c, synth.FileServer, v, "task_ms", -5)
		}, "server_records.jsonl: task_ms -5 is not a time"},
		"server: model_call_ms of another scope": {verdict.TaskTimeServer, func(c checkpoint, v string) {
			publicRecords(c)
			setByID(c, synth.FileServer, v, "timing_scope", "server_handler_wall")
		}, `the record's model_call_ms has timing_scope "server_handler_wall", not public_task_call_wall`},
		"server: model_call_ms without a scope": {verdict.TaskTimeServer, func(c checkpoint, v string) {
			publicRecords(c)
			setByID(c, synth.FileServer, v, "timing_scope", nil)
		}, "has no timing_scope"},
		"server: negative model_call_ms": {verdict.TaskTimeServer, func(c checkpoint, v string) {
			publicRecords(c)
			setByID(c, synth.FileServer, v, "model_call_ms", -0.5)
		}, "server_records.jsonl: model_call_ms -0.5 is not a time"},
		"native: longer than the call the runner timed": {verdict.TaskTimeNative, func(c checkpoint, v string) {
			setByID(c, synth.FileNative, v, "task_ms", 3.6e6)
			setByID(c, synth.FileNative, v, "wall_ms", 2.5)
		}, "native_answers.jsonl: task_ms 3.6e+06 is longer than the 2.5 ms the native runner measured for the call (wall_ms)"},
		"native: negative": {verdict.TaskTimeNative, func(c checkpoint, v string) {
			setByID(c, synth.FileNative, v, "task_ms", -5)
		}, "native_answers.jsonl: task_ms -5 is not a time"},
		"native: longer than the whole native stage": {verdict.TaskTimeNative, func(c checkpoint, v string) {
			setByID(c, synth.FileNative, v, "task_ms", 1e300)
		}, "is longer than the whole native stage (60000 ms, measured by the harness)"},
	} {
		t.Run(name, func(t *testing.T) {
			c := cleanCheckpoint(t, synth.FamilyVLM)
			victim := measuredIDs(c)[11]
			tt.edit(c, victim)
			opts := options(t, synth.FamilyVLM, 5, 50)
			opts.TaskTime, opts.NativeWallMS = tt.src, 60000
			res, row, _ := judged(t, c, opts)
			m := row.RequestsByPhase[verdict.PhaseMeasured]
			assert.Equal(t, 1, m.Inconsistent)
			assert.Equal(t, 49, m.Matched)
			assert.Len(t, res.MeasuredTask, 49, "the impossible value is no figure (the request is not matched)")
			assert.NotEqual(t, verdict.VerdictQualified, row.Verdict)
			ex := example(row, verdict.PhaseMeasured, verdict.JoinInconsistent)
			require.NotNil(t, ex)
			assert.Equal(t, victim, ex.RequestID)
			assert.Contains(t, ex.Problem, tt.want)
		})
	}
}

// The public trtmc-server's records: model_call_ms (timing_scope
// public_task_call_wall) is the served request's Task time, and the row's
// scope says so; the native replay's Task time is compared with it, and a
// disagreement beyond the stated tolerance is recorded in the row, never a
// reason (they are two calls).
func TestPublicRecordsAreTheServedTaskTime(t *testing.T) {
	c := cleanCheckpoint(t, synth.FamilyVLM)
	publicRecords(c)
	ids := measuredIDs(c)
	for i, id := range ids {
		setByID(c, synth.FileServer, id, "model_call_ms", 0.5+float64(i)/1000)
		setByID(c, synth.FileNative, id, "task_ms", 0.6+float64(i)/1000)
	}
	setByID(c, synth.FileNative, ids[7], "task_ms", 1.9) // 1.4 ms apart: beyond 0.1 ms + 10%
	opts := options(t, synth.FamilyVLM, 5, 50)
	opts.TaskTime, opts.TaskScope = verdict.TaskTimeServer, ""
	opts.Agreement = verdict.Tolerance{AbsMS: 0.2, Rel: 0.1}
	res, row, _ := judged(t, c, opts)
	assert.Equal(t, verdict.VerdictQualified, row.Verdict, "%+v", row.Reasons)
	assert.Equal(t, streamjoin.ScopeTaskCall, row.LatencyMS.TaskScope)
	require.Len(t, res.MeasuredTask, 50)
	for _, v := range res.MeasuredTask {
		assert.True(t, v >= 0.5 && v < 0.55, "Task value %v is the server's model_call_ms", v)
	}
	a := row.LatencyMS.TaskAgreement
	require.NotNil(t, a)
	assert.Equal(t, 50, a.Compared)
	assert.Equal(t, 1, a.Disagreeing)
	assert.Contains(t, a.Example, ids[7]+": server 0.507 ms, native 1.900 ms")
	require.Len(t, row.Notes, 1)
	assert.Contains(t, row.Notes[0], "differs by more than max(0.2 ms, 10%) on 1 of 50 measured requests")
}

// A route the server does not record (the public trtmc-server records
// only the two completion routes): the family declares it, the row says
// it, and every request must still be accounted for by identity through
// the client <-> native join; a missing native answer still fails.
func TestUnrecordedRoute(t *testing.T) {
	c := cleanCheckpoint(t, synth.FamilyDetect)
	c.write(synth.FileServer, nil) // no records at all
	opts := options(t, synth.FamilyDetect, 5, 50)
	opts.TaskTime, opts.NoServerRecords = verdict.TaskTimeNative, true
	_, row, _ := judged(t, c, opts)
	assert.Equal(t, verdict.VerdictQualified, row.Verdict, "%+v", row.Reasons)
	assert.Equal(t, 0, row.Requests.MissingServerRecord)
	require.Len(t, row.Notes, 1)
	assert.Contains(t, row.Notes[0], "no server records for /v1/infer in this server version")

	// Without the declaration the same evidence fails: every request lacks
	// its server record.
	opts.NoServerRecords = false
	_, row, _ = judged(t, c, opts)
	assert.Equal(t, 50, row.RequestsByPhase[verdict.PhaseMeasured].MissingServerRecord)

	// Declared, but a native answer dropped: the identity join is never
	// weaker.
	c.edit(synth.FileNative, func(ls []map[string]any) []map[string]any { return ls[1:] })
	opts.NoServerRecords = true
	_, row, _ = judged(t, c, opts)
	assert.Equal(t, 1, row.Requests.MissingNative)
	assert.NotEqual(t, verdict.VerdictQualified, row.Verdict)

	// And a records file that does not exist is no finding either.
	c2 := cleanCheckpoint(t, synth.FamilyDetect)
	require.NoError(t, removeFile(c2, synth.FileServer))
	_, row, _ = judged(t, c2, opts)
	assert.Equal(t, verdict.VerdictQualified, row.Verdict, "%+v", row.Reasons)
}

// Answers name the model that was served (issue 25 item 8): a chat answer
// naming another model is inconsistent, naming both.
func TestAnswersNameTheServedModel(t *testing.T) {
	c := cleanCheckpoint(t, synth.FamilyVLM)
	opts := options(t, synth.FamilyVLM, 5, 50)
	opts.ServedModel = "ref-vlm-small"
	_, row, _ := judged(t, c, opts)
	assert.Equal(t, verdict.VerdictQualified, row.Verdict, "%+v", row.Reasons)

	opts.ServedModel = "qwen3-vl-2b"
	_, row, _ = judged(t, c, opts)
	assert.Equal(t, 50, row.RequestsByPhase[verdict.PhaseMeasured].Inconsistent, "every answer names another model")
	ex := example(row, verdict.PhaseMeasured, verdict.JoinInconsistent)
	require.NotNil(t, ex)
	assert.Contains(t, ex.Problem, `the HTTP answer names model "ref-vlm-small", not the served --model-name "qwen3-vl-2b"`)
	assert.Equal(t, verdict.VerdictFailed, row.Verdict)

	opts.ServedModel = "ref-vlm-small"
	victim := measuredIDs(c)[4]
	editHTTPBody(c, victim, func(b map[string]any) { delete(b, "model") })
	_, row, _ = judged(t, c, opts)
	assert.Equal(t, 1, row.RequestsByPhase[verdict.PhaseMeasured].Inconsistent, "an answer naming no model names another")
}

// A native error line's cause reaches the row (issue 25 item 17).
func TestNativeErrorNamesItsCause(t *testing.T) {
	c := cleanCheckpoint(t, synth.FamilyVLM)
	victim := measuredIDs(c)[2]
	setByID(c, synth.FileNative, victim, "answer", nil)
	setByID(c, synth.FileNative, victim, "error", `timing: the worker's reply has timing_scope "server_handler_wall", not public_task_call_wall`)
	_, row, _ := judged(t, c, options(t, synth.FamilyVLM, 5, 50))
	ex := example(row, verdict.PhaseMeasured, verdict.JoinMissingNative)
	require.NotNil(t, ex)
	assert.Equal(t, victim, ex.RequestID)
	assert.Contains(t, ex.Problem, `the native runner answered with an error: timing: the worker's reply has timing_scope "server_handler_wall"`)
	for _, r := range row.Reasons {
		if r.Code == verdict.CodeMissingNative {
			assert.Contains(t, r.Message, "server_handler_wall")
		}
	}
}

func removeFile(c checkpoint, name string) error { return os.Remove(filepath.Join(c.dir, name)) }

// An enclosing timing a record does not carry bounds nothing (records of
// servers that write neither handler_ms nor worker_roundtrip_ms, or null):
// the clean run still qualifies, its Task figures the records' own.
func TestAbsentEnclosingTimingsBoundNothing(t *testing.T) {
	c := cleanCheckpoint(t, synth.FamilyVLM)
	publicRecords(c)
	c.edit(synth.FileServer, func(ls []map[string]any) []map[string]any {
		for i, l := range ls {
			if i%2 == 0 {
				delete(l, "handler_ms")
				delete(l, "worker_roundtrip_ms")
			} else {
				l["handler_ms"], l["worker_roundtrip_ms"] = nil, nil
			}
		}
		return ls
	})
	opts := options(t, synth.FamilyVLM, 5, 50)
	opts.TaskTime, opts.TaskScope = verdict.TaskTimeServer, ""
	res, row, _ := judged(t, c, opts)
	assert.Equal(t, verdict.VerdictQualified, row.Verdict, "%+v", row.Reasons)
	assert.Len(t, res.MeasuredTask, 50)
}
