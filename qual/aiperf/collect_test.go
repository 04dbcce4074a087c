package aiperf

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
)

func expectFor(meta fixtureMeta, outputs bool) Expect {
	ds := meta.Dataset
	return Expect{Warmup: meta.Warmup, Measured: meta.Measured, Version: meta.Version, Dataset: &ds, OutputsJSON: outputs}
}

func problemCodes(r *Run) []string {
	var codes []string
	for _, p := range r.Problems {
		codes = append(codes, p.Code)
	}
	return codes
}

// codeSet is the sorted set of codes.
func codeSet(codes []string) []string {
	out := slices.Clone(codes)
	slices.Sort(out)
	return slices.Compact(out)
}

func TestCollectRealFixtures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		outputs bool
	}{
		{endpoint.Chat, true},
		{endpoint.ImageRetrieval, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, meta := fixture(t, tc.name)
			run, err := Collect(dir, expectFor(meta, tc.outputs))
			require.NoError(t, err)
			require.Empty(t, run.Problems)
			require.NoError(t, run.Err())

			warm, prof := run.Phase(PhaseWarmup), run.Phase(PhaseProfiling)
			assert.Len(t, warm, 5)
			assert.Len(t, prof, 50)
			// Requests come warmup first, then profiling, each in start order.
			assert.Equal(t, warm, run.Requests[:5])
			for i := 1; i < len(prof); i++ {
				assert.LessOrEqual(t, prof[i-1].StartNs, prof[i].StartNs)
			}
			convs := map[string]bool{}
			for _, q := range run.Requests {
				assert.NotEmpty(t, q.RequestID)
				assert.Equal(t, strings.SplitN(q.ConversationID, "#", 2)[0], q.EntryID)
				assert.False(t, convs[q.ConversationID])
				convs[q.ConversationID] = true
				assert.Equal(t, 200, q.HTTPStatus)
				assert.Nil(t, q.Error)
				require.NotNil(t, q.LatencyMs)
				assert.Greater(t, *q.LatencyMs, 0.0)
				assert.Greater(t, q.EndNs, q.StartNs)
				assert.True(t, json.Valid(q.Payload))
				assert.True(t, json.Valid(q.Response), "response body is the JSON the server sent")
			}
			s := run.Summary
			require.NotNil(t, s)
			assert.Equal(t, "1.4", s.SchemaVersion)
			assert.Equal(t, "0.13.0", s.AIPerfVersion)
			assert.False(t, s.WasCancelled)
			assert.Empty(t, s.ErrorSummary)

			// The summary's percentiles are reproduced from the records.
			var lat []float64
			for _, q := range prof {
				lat = append(lat, *q.LatencyMs)
			}
			m, ok := s.Metric("request_latency")
			require.True(t, ok)
			want := LatencyPercentilesMs(lat, SummaryQuantiles...)
			for i, q := range SummaryQuantiles {
				got, ok := m.Percentile(q)
				require.True(t, ok)
				assert.Equal(t, got, want[i], "p%d", q)
			}

			switch tc.name {
			case endpoint.Chat:
				for _, q := range prof {
					require.NotNil(t, q.ResponseText)
					assert.Contains(t, string(q.Response), `"chat.completion"`)
					assert.Contains(t, string(q.Response), *q.ResponseText)
					assert.NotNil(t, q.OutputTokens)
				}
				for _, q := range warm {
					assert.Nil(t, q.ResponseText, "outputs.json 1.0 has no warmup")
				}
			case endpoint.ImageRetrieval:
				for _, q := range prof {
					assert.Contains(t, string(q.Response), `"bounding_boxes"`)
					assert.Nil(t, q.OutputTokens)
				}
			}
		})
	}
}

func TestCollectRealAllFailed(t *testing.T) {
	dir, meta := fixture(t, "all_failed")
	run, err := Collect(dir, expectFor(meta, false))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{ProblemNotReady, ProblemRawUnmerged, ProblemSummaryMissing, ProblemAllFailed}, problemCodes(run))
	assert.Len(t, run.Requests, 55)
	for _, q := range run.Requests {
		assert.Equal(t, 500, q.HTTPStatus)
		assert.True(t, json.Valid(q.Payload), "payload read from the unmerged shard")
		require.NotNil(t, q.Error)
		assert.Nil(t, q.LatencyMs, "AIPerf gives failed requests no latency")
	}
	var ie *IncompleteError
	require.ErrorAs(t, run.Err(), &ie)
	assert.Contains(t, ie.Error(), "all_failed: all 55 requests failed")
}

// lines returns the non-empty lines of a file.
func lines(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
}

func writeLines(t *testing.T, path string, ls [][]byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, append(bytes.Join(ls, []byte("\n")), '\n'), 0o644))
}

// editLine re-encodes line i of a JSONL file after fn changed its map form.
func editLine(t *testing.T, path string, i int, fn func(m map[string]any)) {
	t.Helper()
	ls := lines(t, path)
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(ls[i]))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m))
	fn(m)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	ls[i] = b
	writeLines(t, path, ls)
}

func editSummary(t *testing.T, dir string, fn func(m map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, FileSummary)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m))
	fn(m)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func meta(m map[string]any) map[string]any { return m["metadata"].(map[string]any) }

// indexOfPhase is the index of the first record line of a phase.
func indexOfPhase(t *testing.T, path, phase string) int {
	t.Helper()
	for i, l := range lines(t, path) {
		if bytes.Contains(l, []byte(`"benchmark_phase":"`+phase+`"`)) {
			return i
		}
	}
	t.Fatalf("no %s line in %s", phase, path)
	return -1
}

// TestCollectDamaged runs the fail-closed checks on hand-damaged copies of
// the real chat fixture. Each case must produce its named problem.
func TestCollectDamaged(t *testing.T) {
	records := func(dir string) string { return filepath.Join(dir, FileRecords) }
	raw := func(dir string) string { return filepath.Join(dir, FileRaw) }
	dropLine := func(t *testing.T, path string, i int) []byte {
		ls := lines(t, path)
		dropped := ls[i]
		writeLines(t, path, append(ls[:i:i], ls[i+1:]...))
		return dropped
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   []string
		detail string // substring of the first wanted problem's detail
	}{
		{
			name: "truncated record line",
			damage: func(t *testing.T, dir string) {
				ls := lines(t, records(dir))
				ls[16] = ls[16][:len(ls[16])/2]
				writeLines(t, records(dir), ls)
			},
			want:   []string{ProblemRecordsInvalid},
			detail: "profile_export.jsonl:17: invalid JSON",
		},
		{
			name: "records file cut mid-line at the end",
			damage: func(t *testing.T, dir string) {
				data, err := os.ReadFile(records(dir))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(records(dir), data[:len(data)-100], 0o644))
			},
			want:   []string{ProblemRecordsInvalid},
			detail: "profile_export.jsonl:55: last line has no newline",
		},
		{
			name:   "missing summary",
			damage: func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, FileSummary))) },
			want:   []string{ProblemSummaryMissing},
		},
		{
			name: "summary without aiperf_version",
			damage: func(t *testing.T, dir string) {
				editSummary(t, dir, func(m map[string]any) { delete(m, "aiperf_version") })
			},
			want:   []string{ProblemSummaryInvalid},
			detail: "profile_export_aiperf.json: aiperf_version: missing",
		},
		{
			name: "summary from another version",
			damage: func(t *testing.T, dir string) {
				editSummary(t, dir, func(m map[string]any) { m["aiperf_version"] = "0.12.0" })
			},
			want: []string{ProblemSummaryVersion},
		},
		{
			name: "short count",
			damage: func(t *testing.T, dir string) {
				i := indexOfPhase(t, records(dir), PhaseProfiling)
				gone := dropLine(t, records(dir), i)
				// Drop the same request from the raw export, so only the count is off.
				var r RecordLine
				require.NoError(t, json.Unmarshal(gone, &r))
				for j, l := range lines(t, raw(dir)) {
					if bytes.Contains(l, []byte(r.Metadata.XRequestID)) {
						dropLine(t, raw(dir), j)
					}
				}
			},
			want:   []string{ProblemCount, ProblemSummaryMismatch, ProblemOutputs},
			detail: "has 49 profiling records, want 50",
		},
		{
			name:   "short warmup count",
			damage: func(t *testing.T, dir string) { dropLine(t, records(dir), indexOfPhase(t, records(dir), PhaseWarmup)) },
			want:   []string{ProblemCount, ProblemRawMismatch},
			detail: "has 4 warmup records, want 5",
		},
		{
			name: "all failed",
			damage: func(t *testing.T, dir string) {
				for i := range lines(t, records(dir)) {
					editLine(t, records(dir), i, func(m map[string]any) {
						m["metrics"] = map[string]any{}
						m["error"] = map[string]any{"code": 503, "type": "Service Unavailable", "message": "down"}
					})
				}
			},
			want:   []string{ProblemAllFailed, ProblemSummaryMismatch},
			detail: "all 55 requests failed, first: Service Unavailable (503): down",
		},
		{
			name: "one failed request",
			damage: func(t *testing.T, dir string) {
				editLine(t, records(dir), 0, func(m map[string]any) {
					m["error"] = map[string]any{"type": "TimeoutError", "message": "timed out"}
				})
			},
			want:   []string{ProblemRequestErrors},
			detail: "1 of 55 requests failed, first: TimeoutError (no code): timed out",
		},
		{
			name: "cancelled record",
			damage: func(t *testing.T, dir string) {
				editLine(t, records(dir), 3, func(m map[string]any) { meta(m)["was_cancelled"] = true })
			},
			want: []string{ProblemRecordCancelled},
		},
		{
			name: "cancelled run",
			damage: func(t *testing.T, dir string) {
				editSummary(t, dir, func(m map[string]any) { m["was_cancelled"] = true; m["is_complete"] = false })
				require.NoError(t, os.WriteFile(filepath.Join(dir, FileReadyMarker), []byte(`{"ready":true,"was_cancelled":true,"partial":false}`), 0o644))
			},
			want: []string{ProblemRunCancelled, ProblemRunCancelled, ProblemRunCancelled},
		},
		{
			name:   "no ready marker",
			damage: func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, FileReadyMarker))) },
			want:   []string{ProblemNotReady},
		},
		{
			name: "export still processing",
			damage: func(t *testing.T, dir string) {
				require.NoError(t, os.Remove(filepath.Join(dir, FileReadyMarker)))
				require.NoError(t, os.WriteFile(filepath.Join(dir, FileProcessing), []byte(`{"processing":true}`), 0o644))
			},
			want:   []string{ProblemNotReady},
			detail: "export still in progress or crashed",
		},
		{
			name: "partial export",
			damage: func(t *testing.T, dir string) {
				require.NoError(t, os.WriteFile(filepath.Join(dir, FileReadyMarker), []byte(`{"ready":true,"was_cancelled":false,"partial":true,"failed_exporters":["raw"]}`), 0o644))
			},
			want: []string{ProblemPartial},
		},
		{
			name: "unmerged raw_records",
			damage: func(t *testing.T, dir string) {
				shards := filepath.Join(dir, DirRawShards)
				require.NoError(t, os.MkdirAll(shards, 0o755))
				require.NoError(t, os.Rename(raw(dir), filepath.Join(shards, "raw_records_record_processor_x.jsonl")))
			},
			want: []string{ProblemRawUnmerged},
		},
		{
			name: "unmerged raw_records with the merged file gone",
			damage: func(t *testing.T, dir string) {
				require.NoError(t, os.Remove(raw(dir)))
				require.NoError(t, os.MkdirAll(filepath.Join(dir, DirRawShards), 0o755))
			},
			want: []string{ProblemRawUnmerged, ProblemRawMissing},
		},
		{
			name:   "raw export missing a record",
			damage: func(t *testing.T, dir string) { dropLine(t, raw(dir), 7) },
			want:   []string{ProblemRawMismatch},
			detail: "profile_export_raw.jsonl lacks 1 of 55 records",
		},
		{
			name: "raw export with a duplicate",
			damage: func(t *testing.T, dir string) {
				ls := lines(t, raw(dir))
				writeLines(t, raw(dir), append(ls, ls[3]))
			},
			want: []string{ProblemRawMismatch},
		},
		{
			name: "truncated raw line",
			damage: func(t *testing.T, dir string) {
				ls := lines(t, raw(dir))
				ls[9] = ls[9][:len(ls[9])-40]
				writeLines(t, raw(dir), ls)
			},
			want:   []string{ProblemRawInvalid},
			detail: "profile_export_raw.jsonl:10: invalid JSON",
		},
		{
			name: "duplicate x_request_id",
			damage: func(t *testing.T, dir string) {
				ls := lines(t, records(dir))
				var r RecordLine
				require.NoError(t, json.Unmarshal(ls[0], &r))
				editLine(t, records(dir), 1, func(m map[string]any) { meta(m)["x_request_id"] = r.Metadata.XRequestID })
			},
			want: []string{ProblemDuplicateRequest, ProblemCount, ProblemRawMismatch},
		},
		{
			name: "missing x_request_id",
			damage: func(t *testing.T, dir string) {
				editLine(t, records(dir), 20, func(m map[string]any) { delete(meta(m), "x_request_id") })
			},
			want:   []string{ProblemRecordsInvalid},
			detail: "profile_export.jsonl:21: metadata.x_request_id: missing",
		},
		{
			name: "missing conversation_id",
			damage: func(t *testing.T, dir string) {
				editLine(t, records(dir), 30, func(m map[string]any) { delete(meta(m), "conversation_id") })
			},
			want:   []string{ProblemRecordsInvalid},
			detail: "profile_export.jsonl:31: metadata.conversation_id: missing",
		},
		{
			name: "conversation not in the dataset",
			damage: func(t *testing.T, dir string) {
				editLine(t, records(dir), 2, func(m map[string]any) { meta(m)["conversation_id"] = "session_000002" })
			},
			want: []string{ProblemConversation, ProblemRawMismatch},
		},
		{
			name: "summary p50 disagrees with the records",
			damage: func(t *testing.T, dir string) {
				editSummary(t, dir, func(m map[string]any) {
					m["request_latency"].(map[string]any)["p50"] = 1.5
				})
			},
			want:   []string{ProblemSummaryMismatch},
			detail: "request_latency p50 is 1.5",
		},
		{
			name: "summary counts a failure the records do not have",
			damage: func(t *testing.T, dir string) {
				editSummary(t, dir, func(m map[string]any) {
					m["error_request_count"] = map[string]any{"unit": "requests", "avg": 1.0}
				})
			},
			want: []string{ProblemSummaryMismatch},
		},
		{
			name:   "outputs.json missing",
			damage: func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, FileOutputs))) },
			want:   []string{ProblemOutputs},
		},
		{
			name: "inputs.json out of dataset order",
			damage: func(t *testing.T, dir string) {
				path := filepath.Join(dir, FileInputs)
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				data = bytes.Replace(data, []byte(`"img-0000#0"`), []byte(`"img-0000#9"`), 1)
				require.NoError(t, os.WriteFile(path, data, 0o644))
			},
			want: []string{ProblemInputs},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, meta := fixture(t, endpoint.Chat)
			tc.damage(t, dir)
			run, err := Collect(dir, expectFor(meta, true))
			require.NoError(t, err)
			assert.Equal(t, codeSet(tc.want), codeSet(problemCodes(run)), "problems: %v", run.Problems)
			assert.False(t, run.Complete())
			if tc.detail != "" {
				require.NotEmpty(t, run.Problems)
				found := false
				for _, p := range run.Problems {
					if p.Code == tc.want[0] && strings.Contains(p.Detail, tc.detail) {
						found = true
					}
				}
				assert.True(t, found, "no %s problem containing %q in %v", tc.want[0], tc.detail, run.Problems)
			}
		})
	}
}

func TestCollectMissingDir(t *testing.T) {
	_, err := Collect(filepath.Join(t.TempDir(), "nope"), Expect{})
	require.Error(t, err)
}

// TestCollectGolden pins a stable projection of what Collect makes of each
// real fixture (ids vary between regenerations; structure must not).
func TestCollectGolden(t *testing.T) {
	for _, name := range []string{endpoint.Chat, endpoint.ImageRetrieval, "all_failed"} {
		t.Run(name, func(t *testing.T) {
			dir, meta := fixture(t, name)
			run, err := Collect(dir, expectFor(meta, name == endpoint.Chat))
			require.NoError(t, err)
			type row struct {
				Phase, Conversation, Entry string
				Status                     int
				Failed, HasPayload         bool
				HasLatency                 bool
				Echo                       Echo
			}
			var rows []row
			for _, q := range run.Requests {
				rows = append(rows, row{q.Phase, q.ConversationID, q.EntryID, q.HTTPStatus, q.Error != nil, len(q.Payload) > 0, q.LatencyMs != nil, q.Echo})
			}
			// Within a phase the order is completion-dependent; sort for the golden.
			sortRows := func(rs []row) {
				for i := 1; i < len(rs); i++ {
					for j := i; j > 0 && rs[j-1].Phase == rs[j].Phase && rs[j-1].Conversation > rs[j].Conversation; j-- {
						rs[j-1], rs[j] = rs[j], rs[j-1]
					}
				}
			}
			sortRows(rows)
			out := struct {
				Problems []string
				Summary  map[string]any
				Requests []row
			}{Problems: problemCodes(run), Requests: rows}
			if s := run.Summary; s != nil {
				out.Summary = map[string]any{
					"schema_version": s.SchemaVersion, "aiperf_version": s.AIPerfVersion,
					"was_cancelled": s.WasCancelled, "metric_tags": s.MetricTags(),
				}
			}
			got, err := json.MarshalIndent(out, "", "  ")
			require.NoError(t, err)
			golden.AssertFile(t, filepath.Join("testdata", "golden", "collect-"+name+".json"), append(got, '\n'))
		})
	}
}
