package qual

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

// vlmRow is a clean synthetic chat checkpoint of 5 + 50 requests and the
// row the join stage fills, with the given answer semantics and native
// runner statement.
func vlmRow(t *testing.T, sem verdict.Semantics, native *verdict.NativeRun) (string, *verdict.Result) {
	t.Helper()
	dir := t.TempDir()
	_, err := synth.Write(dir, synth.Config{Requests: 55, Family: synth.FamilyVLM, Seed: 3, NoFaults: true, ImageMin: 16, ImageMax: 32})
	require.NoError(t, err)
	sem.EndpointType, sem.Extractor, sem.Comparator = "chat", "openai-chat-text", "exact"
	return dir, &verdict.Result{Family: "f", Route: "/v1/chat/completions", Answers: sem,
		Workload:   verdict.Workload{Warmup: 5, Measured: 50, Concurrency: 1},
		Provenance: verdict.Provenance{Native: native}}
}

// The family's reading of finish_reason null reaches the join, in a run and
// in a rejudge alike (it is recorded in the row's answer semantics):
// trtmc-server answers null for every completed generation.
func TestJoinUsesTheFamilysFinishReasonNull(t *testing.T) {
	for _, tc := range []struct {
		null      string
		matched   int
		meaningls int
	}{{verdict.FinishNullComplete, 50, 0}, {"", 0, 50}, {verdict.FinishNullIncomplete, 0, 50}} {
		dir, row := vlmRow(t, verdict.Semantics{FinishReasonNull: tc.null}, nil)
		raw := filepath.Join(dir, "aiperf", "profile_export_raw.jsonl")
		data, err := os.ReadFile(raw)
		require.NoError(t, err)
		stop := []byte(`\"finish_reason\":\"stop\"`)
		require.Equal(t, 55, bytes.Count(data, stop))
		require.NoError(t, os.WriteFile(raw, bytes.ReplaceAll(data, stop, []byte(`\"finish_reason\":null`)), 0o644))
		_, err = joinRow(context.Background(), dir, row, families.DefaultRegistry(), joinOutputs{})
		require.NoError(t, err)
		m := row.RequestsByPhase[verdict.PhaseMeasured]
		assert.Equal(t, tc.matched, m.Matched, "finish_reason_null %q", tc.null)
		assert.Equal(t, tc.meaningls, m.Meaningless, "finish_reason_null %q", tc.null)
	}
}

// The row states where its Task latency comes from and what it times; a
// native runner that says its task_ms times nothing gives no Task figure.
func TestJoinRecordsTheTaskTimeScope(t *testing.T) {
	for _, tc := range []struct {
		name   string
		src    string
		native *verdict.NativeRun
		scope  string
		usable bool
	}{
		{"the reference families: the server's records", "", nil, verdict.TaskScopeServer, true},
		{"server, whatever the native runner says", verdict.TaskTimeServer, &verdict.NativeRun{TimingScope: "none"}, verdict.TaskScopeServer, true},
		{"native: the worker's Task call", verdict.TaskTimeNative, &verdict.NativeRun{Path: "worker", TimingScope: "public_task_call_wall"}, "public_task_call_wall", true},
		{"native: trtmc run's prefill + decode", verdict.TaskTimeNative, &verdict.NativeRun{Path: "cli", TimingScope: "trtmc_run_prefill_plus_decode"}, "trtmc_run_prefill_plus_decode", true},
		{"native: a runner that states nothing", verdict.TaskTimeNative, nil, "unstated (the native runner wrote no native_meta.json)", true},
		{"native: trtmc detect times nothing", verdict.TaskTimeNative, &verdict.NativeRun{Path: "cli", TimingScope: "none"}, "none", false},
		{"native: a malformed statement", verdict.TaskTimeNative, &verdict.NativeRun{TimingScope: "unknown (native_meta.json is malformed)"}, "unknown (native_meta.json is malformed)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, row := vlmRow(t, verdict.Semantics{TaskTime: tc.src}, tc.native)
			_, err := joinRow(context.Background(), dir, row, families.DefaultRegistry(), joinOutputs{})
			require.NoError(t, err)
			want := tc.src
			if want == "" {
				want = verdict.TaskTimeServer
			}
			l := row.LatencyMS
			assert.Equal(t, want, l.TaskSource)
			assert.Equal(t, tc.scope, l.TaskScope)
			assert.Equal(t, tc.usable, l.Task.P50 != nil)
			assert.NotNil(t, l.HTTP.P50)
			row.Stages = []verdict.Stage{{Name: verdict.StageJoin, Status: verdict.StageOK}}
			verdict.Judge(row)
			var codes []verdict.Code
			for _, r := range row.Reasons {
				codes = append(codes, r.Code)
			}
			if tc.usable {
				assert.NotContains(t, codes, verdict.CodeLatencyIncomplete)
			} else {
				assert.Contains(t, codes, verdict.CodeLatencyIncomplete)
				assert.NotEqual(t, verdict.VerdictQualified, row.Verdict)
			}
		})
	}
}
