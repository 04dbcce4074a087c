package aiperf

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/endpoint"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

func TestScanLines(t *testing.T) {
	long := strings.Repeat("x", 3*readBufferSize+17) // longer than the read buffer
	cases := []struct {
		name    string
		content string
		want    []string
		wantNo  []int
		err     string
	}{
		{"empty file", "", nil, nil, ""},
		{"two lines", "a\nb\n", []string{"a", "b"}, []int{1, 2}, ""},
		{"blank lines skipped, numbers kept", "a\n\n  \nb\n", []string{"a", "b"}, []int{1, 4}, ""},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}, []int{1, 2}, ""},
		{"line longer than the buffer", "a\n" + long + "\nb\n", []string{"a", long, "b"}, []int{1, 2, 3}, ""},
		{"unterminated last line", "a\nb", []string{"a"}, []int{1}, "t.jsonl:2: last line has no newline"},
		{"unterminated long last line", "a\n" + long, []string{"a"}, []int{1}, "t.jsonl:2: last line has no newline"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "t.jsonl", tc.content)
			var got []string
			var nos []int
			err := scanLines(path, func(n int, line []byte) error {
				got = append(got, string(line))
				nos = append(nos, n)
				return nil
			})
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantNo, nos)
		})
	}
	t.Run("callback error stops the scan", func(t *testing.T) {
		path := writeFile(t, "t.jsonl", "a\nb\nc\n")
		stop := errors.New("stop")
		n := 0
		err := scanLines(path, func(int, []byte) error { n++; return stop })
		assert.ErrorIs(t, err, stop)
		assert.Equal(t, 1, n)
	})
	t.Run("missing file", func(t *testing.T) {
		err := scanLines(filepath.Join(t.TempDir(), "nope"), func(int, []byte) error { return nil })
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
}

const goodRecord = `{"metadata":{"x_request_id":"r1","conversation_id":"c#0","turn_index":0,"benchmark_phase":"profiling","request_start_ns":10,"request_end_ns":20,"was_cancelled":false,"future_field":1},"metrics":{"request_latency":{"value":1.5,"unit":"ms"},"inter_chunk_latency":{"value":[1,2],"unit":"ms"}},"unknown":true}`

func TestScanRecords(t *testing.T) {
	path := writeFile(t, FileRecords, goodRecord+"\n")
	var got []RecordLine
	require.NoError(t, ScanRecords(path, func(_ int, r *RecordLine) error {
		got = append(got, *r)
		return nil
	}))
	require.Len(t, got, 1)
	r := got[0]
	assert.Equal(t, "r1", r.Metadata.XRequestID)
	assert.False(t, r.Metadata.Cancelled())
	v, ok := r.Metric("request_latency")
	assert.True(t, ok)
	assert.Equal(t, 1.5, v)
	_, ok = r.Metric("inter_chunk_latency")
	assert.False(t, ok, "a list is not a number")
	_, ok = r.Metric("absent")
	assert.False(t, ok)

	bad := []struct {
		name, line, err string
	}{
		{"truncated", goodRecord[:40], "profile_export.jsonl:2: invalid JSON"},
		{"not an object", `[1,2]`, "profile_export.jsonl:2: (top level): got JSON array"},
		{"no request id", strings.Replace(goodRecord, `"x_request_id":"r1",`, "", 1), "profile_export.jsonl:2: metadata.x_request_id: missing"},
		{"no conversation id", strings.Replace(goodRecord, `"conversation_id":"c#0",`, "", 1), "profile_export.jsonl:2: metadata.conversation_id: missing"},
		{"no phase", strings.Replace(goodRecord, `"benchmark_phase":"profiling",`, "", 1), "profile_export.jsonl:2: metadata.benchmark_phase: missing"},
		{"unknown phase", strings.Replace(goodRecord, `"profiling"`, `"cooldown"`, 1), `profile_export.jsonl:2: metadata.benchmark_phase: unknown phase "cooldown"`},
		{"wrong type", strings.Replace(goodRecord, `"turn_index":0`, `"turn_index":"0"`, 1), "profile_export.jsonl:2: metadata.turn_index: got JSON string, want int"},
		{"no metrics", `{"metadata":{"x_request_id":"r","conversation_id":"c","benchmark_phase":"warmup"}}`, "profile_export.jsonl:2: metrics: missing"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, FileRecords, goodRecord+"\n"+tc.line+"\n")
			n := 0
			err := ScanRecords(path, func(int, *RecordLine) error { n++; return nil })
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, 2, pe.Line)
			assert.Equal(t, tc.err, firstN(err.Error(), len(tc.err)))
			assert.Equal(t, 1, n, "lines before the bad one were delivered")
		})
	}
}

func firstN(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func TestScanRawFixture(t *testing.T) {
	dir, _ := fixture(t, endpoint.Chat)
	n := 0
	require.NoError(t, ScanRaw(filepath.Join(dir, FileRaw), func(_ int, r *RawLine) error {
		n++
		require.NotNil(t, r.Status)
		assert.Equal(t, 200, *r.Status)
		lat, ok := r.LatencyNs()
		assert.True(t, ok)
		assert.Positive(t, lat)
		assert.True(t, json.Valid(r.Payload))
		assert.Equal(t, r.Metadata.XRequestID, r.RequestHeaders["X-Request-ID"])
		assert.True(t, bytes.HasPrefix(r.Body(), []byte("{")))
		return nil
	}))
	assert.Equal(t, 55, n)
}

func TestRawBody(t *testing.T) {
	text := `{"a":1}`
	r := RawLine{Responses: []RawResponse{{Text: &text}}}
	assert.Equal(t, text, string(r.Body()))
	sse := RawLine{Responses: []RawResponse{
		{Packets: []SSEPacket{{Name: "data", Value: `{"x":1}`}}},
		{Packets: []SSEPacket{{Name: "data", Value: "[DONE]"}}},
	}}
	assert.Equal(t, "data: {\"x\":1}\n\ndata: [DONE]\n\n", string(sse.Body()))
	assert.Nil(t, (&RawLine{}).Body())
	_, ok := (&RawLine{}).LatencyNs()
	assert.False(t, ok)
}

func TestScanRawRequiresStatusOrError(t *testing.T) {
	line := `{"metadata":{"x_request_id":"r","conversation_id":"c","benchmark_phase":"warmup"},"responses":[]}`
	path := writeFile(t, FileRaw, line+"\n")
	err := ScanRaw(path, func(int, *RawLine) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "profile_export_raw.jsonl:1: status: missing")
}

func TestParseSummaryFixture(t *testing.T) {
	dir, _ := fixture(t, endpoint.ImageRetrieval)
	s, err := ParseSummary(filepath.Join(dir, FileSummary))
	require.NoError(t, err)
	assert.Equal(t, "1.4", s.SchemaVersion)
	assert.Equal(t, "0.13.0", s.AIPerfVersion)
	require.NotNil(t, s.IsComplete)
	assert.True(t, *s.IsComplete)
	assert.NotEmpty(t, s.InputConfig)
	assert.NotEmpty(t, s.RunInfo)

	lat, ok := s.Metric("request_latency")
	require.True(t, ok)
	assert.Equal(t, "ms", lat.Unit)
	require.NotNil(t, lat.Count)
	assert.Equal(t, int64(50), *lat.Count)
	for _, q := range SummaryQuantiles {
		_, ok := lat.Percentile(q)
		assert.True(t, ok, "p%d", q)
	}
	_, ok = lat.Percentile(42)
	assert.False(t, ok)

	// Aggregate metrics carry only avg: no invented zeros.
	rc, ok := s.Metric("request_count")
	require.True(t, ok)
	require.NotNil(t, rc.Avg)
	assert.Equal(t, 50.0, *rc.Avg)
	assert.Nil(t, rc.P50)
	assert.Nil(t, rc.Count)
	_, ok = s.Metric("error_request_count")
	assert.False(t, ok, "0.13.0 omits a zero error count")
	_, ok = s.Metric("time_to_first_token")
	assert.False(t, ok, "image_retrieval has no TTFT")
	_, ok = s.WarmupMetric("request_latency")
	assert.True(t, ok)
	for _, tag := range []string{"input_config", "run_info", "warmup_metrics", "error_summary"} {
		_, ok := s.Metric(tag)
		assert.False(t, ok, "%s is not a metric", tag)
	}
	assert.Contains(t, s.MetricTags(), "image_latency")
}

func TestParseSummaryErrors(t *testing.T) {
	cases := []struct{ name, content, err string }{
		{"not JSON", "{\n\"schema_version\": \"1.4\",\n oops", "profile_export_aiperf.json:3: invalid JSON"},
		{"truncated", `{"schema_version":"1.4"`, "profile_export_aiperf.json:1: invalid JSON"},
		{"array", `[]`, "profile_export_aiperf.json: (top level): got JSON array"},
		{"no schema", `{"aiperf_version":"0.13.0","was_cancelled":false,"error_summary":[]}`, "profile_export_aiperf.json: schema_version: missing"},
		{"null version", `{"schema_version":"1.4","aiperf_version":null,"was_cancelled":false,"error_summary":[]}`, "profile_export_aiperf.json: aiperf_version: missing"},
		{"no was_cancelled", `{"schema_version":"1.4","aiperf_version":"0.13.0","error_summary":[]}`, "profile_export_aiperf.json: was_cancelled: missing"},
		{"bad error_summary", `{"schema_version":"1.4","aiperf_version":"0.13.0","was_cancelled":false,"error_summary":{}}`, "profile_export_aiperf.json: error_summary: invalid"},
		{"bad metric", `{"schema_version":"1.4","aiperf_version":"0.13.0","was_cancelled":false,"error_summary":[],"request_latency":{"unit":"ms","p50":"fast"}}`, "profile_export_aiperf.json: request_latency: invalid metric block"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSummary(writeFile(t, FileSummary, tc.content))
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
	_, err := ParseSummary(filepath.Join(t.TempDir(), FileSummary))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestParseSummaryErrorSummary(t *testing.T) {
	s, err := ParseSummary(writeFile(t, FileSummary, `{"schema_version":"1.4","aiperf_version":"0.13.0","was_cancelled":false,
		"error_summary":[{"error_details":{"code":500,"type":"Internal Server Error","message":"boom"},"count":7}],
		"request_count":{"unit":"requests","avg":43.0},"error_request_count":{"unit":"requests","avg":7.0}}`))
	require.NoError(t, err)
	require.Len(t, s.ErrorSummary, 1)
	assert.Equal(t, 7, s.ErrorSummary[0].Count)
	assert.Equal(t, 500, *s.ErrorSummary[0].ErrorDetails.Code)
	n, ok := s.count("error_request_count")
	assert.True(t, ok)
	assert.Equal(t, int64(7), n)
}

func TestParseOutputs(t *testing.T) {
	dir, _ := fixture(t, endpoint.Chat)
	o, err := ParseOutputs(filepath.Join(dir, FileOutputs))
	require.NoError(t, err)
	assert.Equal(t, "1.0", o.SchemaVersion, "0.13.0 writes schema 1.0")
	assert.Len(t, o.Data, 50)
	assert.Empty(t, o.Warmup)
	for _, e := range o.Data {
		require.NotNil(t, e.ResponseText)
		assert.Contains(t, e.Metrics, "request_latency")
	}

	// Schema 1.1 (later AIPerf; hand-written): warmup array and phases.
	v11 := `{"schema_version":"1.1","data":[{"conversation_id":"a#0","x_request_id":"r2","benchmark_phase":"profiling","response_text":"3"}],
		"warmup":[{"conversation_id":"b#0","x_request_id":"r1","benchmark_phase":"warmup","response_text":null}]}`
	o, err = ParseOutputs(writeFile(t, FileOutputs, v11))
	require.NoError(t, err)
	require.Len(t, o.Warmup, 1)
	assert.Equal(t, "warmup", o.Warmup[0].BenchmarkPhase)
	assert.Nil(t, o.Warmup[0].ResponseText)
	assert.Equal(t, "3", *o.Data[0].ResponseText)

	bad := []struct{ name, content, err string }{
		{"unknown schema", `{"schema_version":"2.0","data":[]}`, `schema_version: unsupported "2.0"`},
		{"no schema", `{"data":[]}`, "schema_version: missing"},
		{"no data", `{"schema_version":"1.0"}`, "data: missing"},
		{"entry without id", `{"schema_version":"1.0","data":[{"conversation_id":"c"}]}`, "data[0].x_request_id: missing"},
		{"truncated", `{"schema_version":"1.0","data":[{"conversation_id":"c"`, "unexpected end of file"},
		{"data not an array", `{"schema_version":"1.0","data":{}}`, "data: want an array"},
		{"trailing garbage", `{"schema_version":"1.0","data":[]} {}`, "trailing data"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseOutputs(writeFile(t, FileOutputs, tc.content))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.err)
			assert.Contains(t, err.Error(), FileOutputs)
		})
	}
}

func TestScanInputs(t *testing.T) {
	dir, meta := fixture(t, endpoint.ImageRetrieval)
	var ids []string
	require.NoError(t, ScanInputs(filepath.Join(dir, FileInputs), func(_ int, e *InputEntry) error {
		ids = append(ids, e.SessionID)
		require.Len(t, e.Payloads, 1)
		var p struct {
			Input []struct{ Type, URL string }
		}
		require.NoError(t, json.Unmarshal(e.Payloads[0], &p))
		assert.Equal(t, "image_url", p.Input[0].Type)
		assert.True(t, strings.HasPrefix(p.Input[0].URL, "data:image/"))
		return nil
	}))
	var want []string
	for _, s := range meta.Dataset.Sessions {
		want = append(want, s.SessionID)
	}
	assert.Equal(t, want, ids, "inputs.json is in dataset order")

	_, err := os.Stat(filepath.Join(dir, FileInputs))
	require.NoError(t, err)
	err = ScanInputs(writeFile(t, FileInputs, `{"data":[{"payloads":[]}]}`), func(int, *InputEntry) error { return nil })
	assert.ErrorContains(t, err, "inputs.json: data[0].session_id: missing")
	err = ScanInputs(writeFile(t, FileInputs, `{"other":1}`), func(int, *InputEntry) error { return nil })
	assert.ErrorContains(t, err, "inputs.json: data: missing")
}

func TestPercentiles(t *testing.T) {
	// Expected values from the installed AIPerf 0.13.0:
	// aiperf.metrics.metric_dicts.metric_result_from_array.
	cases := []struct {
		in   []float64
		want []float64
	}{
		{[]float64{4, 2, 1, 3}, []float64{1.03, 1.15, 1.3, 1.75, 2.5, 3.25, 3.7, 3.8499999999999996, 3.9699999999999998}},
		{[]float64{7.5}, []float64{7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5, 7.5}},
		{[]float64{0.1, 0.2, 0.7, 0.3, 10.0, 5.5, 2.25}, []float64{0.10600000000000001, 0.13, 0.16000000000000003, 0.25, 0.7, 3.875, 7.300000000000002, 8.649999999999997, 9.729999999999997}},
	}
	for _, tc := range cases {
		in := append([]float64(nil), tc.in...)
		assert.Equal(t, tc.want, Percentiles(in, SummaryQuantiles...))
		assert.Equal(t, tc.in, in, "input not modified")
	}
	assert.Nil(t, Percentiles(nil, 50))
	assert.Nil(t, LatencyPercentilesMs(nil, 50))
}

// TestLatencyPercentilesMsNeedsNanoseconds shows why the ms values are
// converted back to integer nanoseconds: on the real chat fixture, at least
// one percentile of the raw ms values differs from the summary in the last
// bit, while LatencyPercentilesMs matches every one.
func TestLatencyPercentilesMsNeedsNanoseconds(t *testing.T) {
	matchedAll := true
	for _, name := range []string{endpoint.Chat, endpoint.ImageRetrieval} {
		dir, _ := fixture(t, name)
		s, err := ParseSummary(filepath.Join(dir, FileSummary))
		require.NoError(t, err)
		var lat []float64
		require.NoError(t, ScanRecords(filepath.Join(dir, FileRecords), func(_ int, r *RecordLine) error {
			if v, ok := r.Metric("request_latency"); ok && r.Metadata.BenchmarkPhase == PhaseProfiling {
				lat = append(lat, v)
			}
			return nil
		}))
		m, _ := s.Metric("request_latency")
		viaNs := LatencyPercentilesMs(lat, SummaryQuantiles...)
		direct := Percentiles(lat, SummaryQuantiles...)
		for i, q := range SummaryQuantiles {
			want, _ := m.Percentile(q)
			assert.Equal(t, want, viaNs[i], "%s p%d", name, q)
			matchedAll = matchedAll && direct[i] == want
		}
	}
	if matchedAll {
		t.Log("the ms values happened to match directly on these fixtures")
	}
}

func TestBodyJSON(t *testing.T) {
	q := Request{Response: Body(`{"data":[]}` + "\n")}
	b, err := json.Marshal(q)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"response":"{\"data\":[]}\n"`)
	var back Request
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, q.Response, back.Response)
	var raw []byte = q.Response // usable as []byte
	assert.True(t, json.Valid(bytes.TrimSpace(raw)))
}

func TestParseErrorFormat(t *testing.T) {
	assert.Equal(t, "f.jsonl:3: metadata.x: missing", (&ParseError{File: "/a/f.jsonl", Line: 3, Field: "metadata.x", Err: errMissing}).Error())
	assert.Equal(t, "f.json: missing", (&ParseError{File: "f.json", Err: errMissing}).Error())
	assert.ErrorIs(t, &ParseError{Err: errMissing}, errMissing)
}
