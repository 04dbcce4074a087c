package streamjoin

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// fixtureLines returns the lines of a gzipped AIPerf 0.13.0 fixture.
func fixtureLines(t testing.TB, rel string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "aiperf", "testdata", rel))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	data, err := io.ReadAll(zr)
	require.NoError(t, err)
	var out [][]byte
	for _, l := range bytes.Split(data, []byte{'\n'}) {
		if len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// bodyRecorder is an extractor that keeps the last HTTP body it saw.
type bodyRecorder struct{ body []byte }

func (r *bodyRecorder) FromHTTP(body []byte) (families.Answer, error) {
	r.body = body
	return families.Answer{Canonical: []byte(`"x"`)}, nil
}
func (r *bodyRecorder) FromNative(a json.RawMessage) (families.Answer, error) {
	return families.Answer{Canonical: a}, nil
}
func (r *bodyRecorder) NotMeaningful(families.Answer, *verdict.Semantics) string { return "" }

func testWorker(ex families.Extractor) *worker {
	return newWorker(newHasher(), ex, nil, false, "")
}

// writeLine writes one line to a temp file for qual/aiperf's scanners.
func writeLine(t testing.TB, line []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "line.jsonl")
	require.NoError(t, os.WriteFile(path, append(bytes.Clone(line), '\n'), 0o644))
	return path
}

// dupKeys reports whether any object repeats a key (up to case folding):
// encoding/json then merges or overwrites in ways the readers do not copy
// for every field.
func dupKeys(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		obj   bool
		keys  []string
		isKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.isKey {
			if s, ok := tok.(string); ok {
				for _, k := range top.keys {
					if strings.EqualFold(k, s) {
						return true
					}
				}
				top.keys = append(top.keys, s)
				top.isKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			if top != nil && top.obj {
				top.isKey = true
			}
			stack = append(stack, &frame{obj: true, isKey: true})
			continue
		case json.Delim('['):
			if top != nil && top.obj {
				top.isKey = true
			}
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].isKey = true
			}
			continue
		}
		if top != nil && top.obj {
			top.isKey = true
		}
	}
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// checkRecordLine asserts that parseRecordLine agrees with
// aiperf.ScanRecords on one line whenever encoding/json accepts it.
func checkRecordLine(t *testing.T, line []byte) {
	if bytes.ContainsAny(line, "\n") || isBlank(line) || dupKeys(line) {
		return
	}
	var want *aiperf.RecordLine
	stdErr := aiperf.ScanRecords(writeLine(t, line), func(_ int, r *aiperf.RecordLine) error { want = r; return nil })
	// parseMetrics guesses each key from the worker's last record: a
	// fresh worker, one that read a real AIPerf record and one that read
	// this very line must all read it as encoding/json does.
	body := bytes.TrimSuffix(line, []byte{'\r'})
	fresh, real, same := testWorker(&bodyRecorder{}), testWorker(&bodyRecorder{}), testWorker(&bodyRecorder{})
	var scratch clientLine
	_ = parseRecordLine(real, primeRecord, &scratch)
	_ = parseRecordLine(same, slices.Clone(body), &scratch)
	for _, w := range []*worker{fresh, real, same} {
		checkRecordWith(t, w, line, body, want, stdErr)
	}
}

// primeRecord is a real AIPerf 0.13.0 record, to prime a worker's guesses.
var primeRecord = []byte(`{"metadata":{"session_num":6,"x_request_id":"7eb8cf5d-d9b0-4a86-89f7-6d072e6b820d","x_correlation_id":"b2e83e8d-8245-4f35-8907-24ad61ea2756","conversation_id":"img-0006#0","turn_index":0,"credit_issued_ns":1796024903079638889,"request_start_ns":1796024903080441163,"request_ack_ns":1796024903093701271,"request_end_ns":1796024903093974205,"worker_id":"worker_a9a32895","record_processor_id":"record_processor_5d37a472","benchmark_phase":"profiling","phase_index":1,"profiling_index":1,"phase_name":"profiling","phase_kind":"profiling","was_cancelled":false,"context_overflow_skip":false,"agent_depth":0,"root_correlation_id":"b2e83e8d-8245-4f35-8907-24ad61ea2756"},"metrics":{"http_req_connecting":{"value":0.0,"unit":"ms"},"request_latency":{"value":13.533042,"unit":"ms"},"http_req_duration":{"value":13.503042,"unit":"ms"}}}`)

func checkRecordWith(t *testing.T, w *worker, line, body []byte, want *aiperf.RecordLine, stdErr error) {
	var got clientLine
	err := parseRecordLine(w, body, &got)
	if stdErr != nil {
		if err == nil && !isBlank(line) {
			t.Logf("accepted what encoding/json rejects (%v): %q", stdErr, line)
		}
		return
	}
	require.NoError(t, err, "line %q", line)
	m := want.Metadata
	assert.Equal(t, w.h.key([]byte(m.XRequestID)), got.key)
	assert.Equal(t, m.XRequestID, string(got.id))
	wantPhase := phaseMeasured
	if m.BenchmarkPhase == aiperf.PhaseWarmup {
		wantPhase = phaseWarmup
	}
	assert.Equal(t, wantPhase, got.phase)
	var start int64
	if m.RequestStartNs != nil {
		start = *m.RequestStartNs
	}
	assert.Equal(t, start, got.startNs)
	lat, ok := want.Metric("request_latency")
	if !ok {
		lat = math.NaN()
	}
	assert.True(t, sameFloat(lat, got.latencyMS), "latency %v vs %v", lat, got.latencyMS)
	assert.Equal(t, want.Error != nil || m.Cancelled(), got.failed)
	var status int32
	if e := want.Error; e != nil && e.Code != nil && *e.Code >= 100 && *e.Code <= 599 {
		status = int32(*e.Code)
	}
	assert.Equal(t, status, got.status)
	wantEcho, wantText := want.Echo()
	assert.Equal(t, wantEcho, got.echo, "echo of %q", line)
	assert.Equal(t, wantText, got.echoText)
	var split aiperf.HTTPSplit
	ok = false
	if td := want.TraceData; td != nil && td.RequestSendStartNs != nil && td.RequestSendEndNs != nil &&
		td.ResponseReceiveStartNs != nil && td.ResponseReceiveEndNs != nil {
		split, ok = aiperf.Split(*td.RequestSendStartNs, *td.RequestSendEndNs, *td.ResponseReceiveStartNs, *td.ResponseReceiveEndNs)
	}
	assert.Equal(t, ok, got.splitOK, "split of %q", line)
	if ok {
		assert.Equal(t, split, got.split)
	}
}

// checkRawLine asserts that parseRawLine agrees with aiperf.ScanRaw.
func checkRawLine(t *testing.T, line []byte) {
	if bytes.ContainsAny(line, "\n") || isBlank(line) || dupKeys(line) {
		return
	}
	var want *aiperf.RawLine
	stdErr := aiperf.ScanRaw(writeLine(t, line), func(_ int, r *aiperf.RawLine) error { want = r; return nil })
	// fields.next guesses keys from the worker's last line: a fresh
	// worker, one that read a real raw line and one that read this very
	// line must all read it as encoding/json does.
	body := bytes.TrimSuffix(line, []byte{'\r'})
	for _, prime := range [][]byte{nil, primeRaw, body} {
		rec := &bodyRecorder{}
		w := testWorker(rec)
		if prime != nil {
			var scratch rawLine
			_ = parseRawLine(w, slices.Clone(prime), &scratch)
		}
		rec.body = nil
		var got rawLine
		err := parseRawLine(w, body, &got)
		if stdErr != nil {
			return
		}
		require.NoError(t, err, "line %q", line)
		assert.Equal(t, w.h.key([]byte(want.Metadata.XRequestID)), got.key)
		assert.Equal(t, want.Status != nil, got.hasStatus)
		if want.Status != nil {
			assert.Equal(t, int32(*want.Status), got.status)
		}
		assert.Equal(t, want.Body(), rec.body)
	}
}

// primeRaw is a raw export line as AIPerf 0.13.0 writes it.
var primeRaw = []byte(`{"metadata":{"session_num":9,"x_request_id":"f65c5852-8868-440e-8bc1-833a2e759518","x_correlation_id":"05bf1ee9-e776-4e87-b079-ba36389b0740","conversation_id":"img-0009#0","turn_index":0,"credit_issued_ns":1796024903084738889,"request_start_ns":1796024903085118244,"request_ack_ns":1796024903099913407,"request_end_ns":1796024903100438686,"worker_id":"worker_a9a32895","record_processor_id":"record_processor_5d37a472","benchmark_phase":"profiling","phase_index":1,"profiling_index":4,"phase_name":"profiling","phase_kind":"profiling","was_cancelled":false,"context_overflow_skip":false,"agent_depth":0,"root_correlation_id":"05bf1ee9-e776-4e87-b079-ba36389b0740"},"start_perf_ns":828356392649,"request_headers":{"User-Agent":"aiperf/0.13.0","X-Request-ID":"f65c5852-8868-440e-8bc1-833a2e759518","Accept":"application/json","Content-Type":"application/json"},"status":200,"responses":[{"perf_ns":828371713091,"text":"{\"data\":[{\"index\":0}]}","content_type":"application/json"}],"payload":{"input":[{"type":"image_url","url":"data:image/png;base64,QUJD"}]}}`)

// TestServerLineGuesses reads server records with a fresh worker and with
// workers that read another record first (their keys are then guessed):
// every reading must be the same, value or error.
func TestServerLineGuesses(t *testing.T) {
	lines := []string{
		`{"request_id":"a","route":"/v1/infer","model":"m","status":200,"handler_ms":1.5,"queue_ms":0,"task_ms":0.8,"image_bytes":10,"image_width":4,"image_height":3,"warmup_marker":false,"prompt_tokens":0,"completion_tokens":7}`,
		`{"request_id":"b","route":"/v1/infer","model":"m","status":200,"handler_ms":1.5,"queue_ms":0,"task_ms":null,"image_bytes":10,"image_width":4,"image_height":3,"warmup_marker":false,"prompt_tokens":0,"completion_tokens":0}`,
		`{"request_id":"c","route":"/v1/infer","model":"m","status":"200","handler_ms":1.5}`,
		`{"request_id":"d","route":"/v1/infer","Task_MS":2.5,"image_width":4.5}`,
		`{"request_id":"e" ,"route" : "/v1/infer","task_ms":3,"completion_tokens":-1}`,
		`{"request_id":"f","route":"/v1/infer","model":"m","status":200,"handler_ms":1.5,"queue_ms":0,"task_ms":0.8,"image_bytes":10,"image_width":4,"image_height":3,"warmup_marker":false,"prompt_tokens":0,"completion_tokens":7,"extra":[1,{"a":"b"}]}`,
		`{"request_id":"g","route":"/v1/infer","model":"m","status":200,"handler_ms":1.5,"queue_ms":0,"task_ms":0.8,"image_bytes":10,"image_width":4,"image_height":3,"warmup_marker":false,"prompt_tokens":0,"completion_tokens":`,
		publicRecord,
		strings.Replace(publicRecord, `"streaming":"none"`, `"streaming":false`, 1),
		strings.Replace(publicRecord, `"has_system_prompt":true`, `"has_system_prompt":"yes"`, 1),
	}
	read := func(w *worker, line string) string {
		var out serverLine
		var id string
		if err := parseServerLineID(w, []byte(line), &out, &id); err != nil {
			return "error: " + err.Error()
		}
		return fmt.Sprintf("%q %v %d %d %d %v %v %v %d %v", id, out.taskMS, out.w, out.h, out.tokens, out.handlerMS, out.admissionMS,
			out.roundtripMS, out.streaming, out.systemPrompt)
	}
	for _, line := range lines {
		want := read(testWorker(nil), line)
		for _, prime := range lines {
			w := testWorker(nil)
			read(w, prime)
			assert.Equal(t, want, read(w, line), "%s after %s", line, prime)
			assert.Equal(t, want, read(w, line), "%s twice after %s", line, prime)
		}
	}
}

// publicRecord is a record as the public trtmc-server writes it
// (records.py, app.py idx@a9ed5f69), for AIPerf's warmup system message.
const publicRecord = `{"request_id":"p","route":"/v1/chat/completions","model":"m","replica":"m-1","input_tokens":null,` +
	`"input_token_source":"unavailable","completion_tokens":7,"completion_token_source":"native_task","admission_ms":0.02,` +
	`"generation_config":{"max_new_tokens":32,"min_p":0.05,"enable_thinking":false,"use_chat_template":true},` +
	`"has_system_prompt":true,"setup_ms":0,"prefill_ms":1.5,"decode_ms":4,"model_call_ms":5.5,"timing_scope":"public_task_call_wall",` +
	`"worker_roundtrip_ms":6.25,"streaming":"none","status":200,"handler_ms":7.5}`

// The public records' timing fields beside model_call_ms, streaming and
// has_system_prompt are read with their types; a record of another type
// there (streaming as a bool, an unknown streaming mode, a string for a
// time or a flag) is malformed, naming the field.
func TestServerRecordFieldsAreTyped(t *testing.T) {
	var out serverLine
	require.NoError(t, parseServerLine(testWorker(nil), []byte(publicRecord), &out))
	assert.Equal(t, 7.5, out.handlerMS)
	assert.Equal(t, 0.02, out.admissionMS)
	assert.Equal(t, 6.25, out.roundtripMS)
	assert.Equal(t, 5.5, out.callMS)
	assert.Equal(t, streamingNone, out.streaming)
	assert.True(t, out.systemPrompt)
	for _, mode := range []struct {
		text string
		want uint8
	}{{`"buffered"`, streamingBuffered}, {`"incremental"`, streamingIncremental}, {`null`, streamingUnset}} {
		require.NoError(t, parseServerLine(testWorker(nil), []byte(strings.Replace(publicRecord, `"streaming":"none"`, `"streaming":`+mode.text, 1)), &out))
		assert.Equal(t, mode.want, out.streaming, mode.text)
	}
	// A record of the reference server, without these fields: NaN, unset.
	require.NoError(t, parseServerLine(testWorker(nil), []byte(`{"request_id":"r","task_ms":1}`), &out))
	assert.True(t, math.IsNaN(out.handlerMS) && math.IsNaN(out.admissionMS) && math.IsNaN(out.roundtripMS))
	assert.Equal(t, streamingUnset, out.streaming)
	assert.False(t, out.systemPrompt)
	for name, tt := range map[string]struct{ old, new, field string }{
		"streaming as a bool":        {`"streaming":"none"`, `"streaming":false`, "streaming"},
		"an unknown streaming":       {`"streaming":"none"`, `"streaming":"sse"`, "streaming"},
		"has_system_prompt a string": {`"has_system_prompt":true`, `"has_system_prompt":"true"`, "has_system_prompt"},
		"handler_ms a string":        {`"handler_ms":7.5`, `"handler_ms":"7.5"`, "handler_ms"},
		"admission_ms a bool":        {`"admission_ms":0.02`, `"admission_ms":true`, "admission_ms"},
		"worker_roundtrip_ms a list": {`"worker_roundtrip_ms":6.25`, `"worker_roundtrip_ms":[6.25]`, "worker_roundtrip_ms"},
	} {
		err := parseServerLine(testWorker(nil), []byte(strings.Replace(publicRecord, tt.old, tt.new, 1)), &out)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), tt.field, name)
	}
}

func TestReadersAgreeOnFixtures(t *testing.T) {
	for _, dir := range []string{"chat", "image_retrieval", "all_failed"} {
		if dir != "all_failed" {
			for _, l := range fixtureLines(t, dir+"/profile_export_raw.jsonl.gz") {
				checkRawLine(t, l)
			}
		}
		for _, l := range fixtureLines(t, dir+"/profile_export.jsonl.gz") {
			checkRecordLine(t, l)
		}
	}
}

var recordSeeds = []string{
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup","request_start_ns":5},"metrics":{"request_latency":{"value":1.5,"unit":"ms"}}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"profiling","was_cancelled":true},"metrics":{}}`,
	`{"Metadata":{"X_Request_ID":"a\u00e9","conversation_id":"c\ud800","benchmark_phase":"profiling"},"metrics":{"request_latency":{"value":[1]}},"error":{"code":503}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"profiling"},"metrics":{"request_latency":null},"error":{"code":null,"type":"X"}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"profiling"},"metrics":{"request_latency":{"value":1e400}},"error":{"code":42}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"profiling","session_num":1.5},"metrics":{}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"bogus"},"metrics":{}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{},"trace_data":null}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{},"trace_data":{}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{},"trace_data":{"response_headers":null,"request_headers":{"X-Request-ID":"a"}}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{},"trace_data":{"response_headers":{"x-request-id":"a","Date":"d"},"request_send_start_ns":10,"request_send_end_ns":20,"response_receive_start_ns":30,"response_receive_end_ns":45}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{},"trace_data":{"Response_Headers":{"X-Request-\u0049D":"b"},"request_send_start_ns":10,"request_send_end_ns":null}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{},"trace_data":{"response_headers":{"X-Request-ID":null}}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{},"trace_data":{"response_headers":{"X-Request-ID":5}}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{},"trace_data":{"request_send_start_ns":1.5}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{},"trace_data":{"request_send_start_ns":30,"request_send_end_ns":20,"response_receive_start_ns":30,"response_receive_end_ns":45,"sending_ns":-10}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{},"trace_data":[1]}`,
}

var rawSeeds = []string{
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"status":200,"responses":[{"perf_ns":1,"text":"{\"a\":\"\\u00e9\"}"}],"payload":{"x":"` + strings.Repeat("QUJD", 50) + `"}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"profiling"},"status":null,"error":{},"responses":null}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"profiling"},"status":200,"responses":[{"packets":[{"name":"data","value":"{}"},null,{"value":"[DONE]"}]},{"text":null,"packets":[]},null,{"text":"tail"}]}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"profiling"},"STATUS":201,"Responses":[{"Text":"x\ud83d\ude00\ud800y"}],"request_headers":{"a":"b","c":null}}`,
	`{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"profiling"},"status":200,"request_headers":{"a":1}}`,
}

func FuzzRecordLine(f *testing.F) {
	for _, s := range recordSeeds {
		f.Add([]byte(s))
	}
	for _, l := range fixtureLines(f, "chat/profile_export.jsonl.gz")[:3] {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkRecordLine(t, line) })
}

func FuzzRawLine(f *testing.F) {
	for _, s := range rawSeeds {
		f.Add([]byte(s))
	}
	for _, l := range fixtureLines(f, "image_retrieval/profile_export_raw.jsonl.gz")[:2] {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkRawLine(t, line) })
}

func TestSeedsAgree(t *testing.T) {
	for _, s := range recordSeeds {
		checkRecordLine(t, []byte(s))
	}
	for _, s := range rawSeeds {
		checkRawLine(t, []byte(s))
	}
}

func FuzzReadString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b\\c\/\b\f\n\r\t"`, `"\u00e9\u20ac"`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\xfe\"", `"a` + "\t" + `b"`, `"\x"`, `null`, `"unterminated`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, q []byte) {
		var want string
		stdErr := json.Unmarshal(q, &want)
		got, next, isnull, err := readString(nil, q, 0)
		ok := err == nil && skipWS(q, next) == len(q)
		if stdErr == nil {
			require.True(t, ok, "readString(%q): %v", q, err)
			if !isnull {
				assert.Equal(t, want, string(got))
			}
			return
		}
		assert.False(t, ok && !isnull, "readString(%q) accepted what encoding/json rejects: %v", q, stdErr)
	})
}

// TestScanFileLines checks line numbers, offsets, CRLF, blank lines and
// lines longer than a chunk.
func TestScanFileLines(t *testing.T) {
	var buf bytes.Buffer
	type want struct {
		lineNo int
		off    int64
		id     string
	}
	var wants []want
	lineNo := 0
	add := func(s string) {
		lineNo++
		if strings.TrimSpace(s) != "" {
			wants = append(wants, want{lineNo, int64(buf.Len()), s})
		}
		buf.WriteString(s)
		buf.WriteByte('\n')
	}
	for i := range 40000 {
		switch {
		case i%1000 == 7:
			add("  ")
		case i == 20000:
			add(strings.Repeat("L", chunkSize+12345)) // a line longer than a chunk
		default:
			add(fmt.Sprintf("line-%d-%s", i, strings.Repeat("x", i%300)))
		}
	}
	buf.WriteString("crlf\r\n")
	wants = append(wants, want{lineNo + 1, int64(buf.Len() - 6), "crlf"})
	path := filepath.Join(t.TempDir(), "lines.jsonl")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))

	ws := []*worker{testWorker(nil), testWorker(nil), testWorker(nil)}
	var got []want
	var digest string
	n, err := scanFile(context.Background(), path, 3, ws,
		func(_ *worker, line []byte, out *string) error { *out = string(line); return nil },
		func(lineNo int, off int64, v *string) error { got = append(got, want{lineNo, off, *v}); return nil }, nil, evidence.Default(), &digest)
	require.NoError(t, err)
	assert.Equal(t, int64(buf.Len()), n)
	// The digest computed from the chunks as they were parsed is the
	// evidence digest of the file.
	whole, err := evidence.Default().File(path)
	require.NoError(t, err)
	assert.Equal(t, whole, digest)
	// Also in the earlier seals' algorithm, which a rejudge of old
	// evidence digests in.
	old, _ := evidence.DigesterFor(evidence.AlgoSHA256Tree)
	_, err = scanFile(context.Background(), path, 3, ws,
		func(_ *worker, line []byte, out *string) error { return nil },
		func(int, int64, *string) error { return nil }, nil, old, &digest)
	require.NoError(t, err)
	whole, err = old.File(path)
	require.NoError(t, err)
	assert.Equal(t, whole, digest)
	require.Equal(t, len(wants), len(got))
	for i := range wants {
		if wants[i] != got[i] {
			t.Fatalf("line %d: got %d@%d, want %d@%d", i, got[i].lineNo, got[i].off, wants[i].lineNo, wants[i].off)
		}
	}
}

func TestScanFileErrors(t *testing.T) {
	dir := t.TempDir()
	parse := func(_ *worker, line []byte, out *int) error {
		if bytes.HasPrefix(line, []byte("bad")) {
			return &fieldError{"metadata.x_request_id", errMissing}
		}
		return nil
	}
	merge := func(int, int64, *int) error { return nil }
	ws := []*worker{testWorker(nil), testWorker(nil)}

	var b strings.Builder
	for i := range 100000 {
		if i == 77777 {
			b.WriteString("bad line\n")
			continue
		}
		fmt.Fprintf(&b, "ok %d %s\n", i, strings.Repeat("y", 80))
	}
	path := filepath.Join(dir, "profile_export.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	_, err := scanFile(context.Background(), path, 2, ws, parse, merge, nil, evidence.Default(), nil)
	var pe *aiperf.ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "profile_export.jsonl:77778: metadata.x_request_id: missing", err.Error())

	require.NoError(t, os.WriteFile(path, []byte("ok\nok\nok no newline"), 0o644))
	_, err = scanFile(context.Background(), path, 2, ws, parse, merge, nil, evidence.Default(), nil)
	assert.EqualError(t, err, "profile_export.jsonl:3: last line has no newline (file truncated?)")

	_, err = scanFile(context.Background(), filepath.Join(dir, "absent.jsonl"), 2, ws, parse, merge, nil, evidence.Default(), nil)
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

// TestJoinReportsLineErrors: a malformed artifact stops the join with
// "file:line: field: problem".
func TestJoinReportsLineErrors(t *testing.T) {
	dir := t.TempDir()
	files := Files{Dataset: filepath.Join(dir, "d.jsonl"), Records: filepath.Join(dir, "r.jsonl"), Raw: filepath.Join(dir, "raw.jsonl"),
		ServerRecords: filepath.Join(dir, "s.jsonl"), Native: filepath.Join(dir, "n.jsonl")}
	write := func(path string, lines ...string) {
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	}
	reg := families.DefaultRegistry()
	opts := Options{Extractor: reg.Extractors["openai-chat-text"], Comparator: reg.Comparators["exact"]}
	write(files.Dataset, `{"session_id":"c#0","image":"data:,"}`, `{"image":"data:,"}`)
	_, err := Join(context.Background(), files, opts)
	assert.EqualError(t, err, "d.jsonl:2: session_id: missing")
	write(files.Dataset, `{"session_id":"c#0","image":"data:,"}`, `{"session_id":"c#0","image":"data:,"}`)
	_, err = Join(context.Background(), files, opts)
	assert.EqualError(t, err, "d.jsonl:2: session_id: duplicate of line 1")
	write(files.Dataset, `{"session_id":"c","image":"data:,"}`)
	write(files.Native, `{"request_id":"a","answer":"x"}`)
	write(files.ServerRecords, `{"request_id":"a","task_ms":1}`, `{"request_id":"b","image_width":"wide"}`)
	write(files.Records, `{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{}}`)
	write(files.Raw, `{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"status":200}`)
	_, err = Join(context.Background(), files, opts)
	assert.EqualError(t, err, "s.jsonl:2: image_width: got JSON string, want number")

	write(files.ServerRecords, `{"request_id":"a","task_ms":1}`)
	write(files.Records, `{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{}}`,
		`{"metadata":{"x_request_id":"b","benchmark_phase":"warmup"},"metrics":{}}`)
	_, err = Join(context.Background(), files, opts)
	assert.EqualError(t, err, "r.jsonl:2: metadata.conversation_id: missing")

	write(files.Records, `{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{}}`)
	write(files.Raw, `{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"}}`)
	_, err = Join(context.Background(), files, opts)
	assert.EqualError(t, err, "raw.jsonl:1: status: missing on a record without error")
}

// TestReadNativeLineMalformedAnswer is a regression test: a malformed
// answer value used to panic (slice bounds out of range) instead of
// returning an error.
func TestReadNativeLineMalformedAnswer(t *testing.T) {
	for _, line := range []string{`{"request_id":"a","answer": tru}`, `{"request_id":"a","answer": [1,}`, `{"answer": "x`} {
		require.NotPanics(t, func() {
			_, _, _, _, err := readNativeLine([]byte(line))
			assert.Error(t, err, line)
		}, line)
	}
	id, answer, taskMS, failed, err := readNativeLine([]byte(`{"request_id":"a","answer":["x"],"task_ms":1.5}`))
	require.NoError(t, err)
	assert.Equal(t, "a", string(id))
	assert.Equal(t, `["x"]`, string(answer))
	assert.Equal(t, 1.5, taskMS)
	assert.False(t, failed)
	_, _, taskMS, _, err = readNativeLine([]byte(`{"request_id":"a","answer":["x"],"task_ms":null}`))
	require.NoError(t, err)
	assert.True(t, math.IsNaN(taskMS), "null task_ms is no value")
}

// TestStringEndEscapes checks stringEnd, whose escaped path jumps 8 bytes
// at a time, against a byte-by-byte walk: strings of every length up to
// 200 bytes with escapes at every offset, terminated or not.
func TestStringEndEscapes(t *testing.T) {
	walk := func(b []byte) int { // the index past the closing quote, or -1
		for j := 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	}
	pieces := []string{`a`, `\"`, `\\`, `\n`, `xyzxyzx`, `\u00e9`}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 2000 {
		var b []byte
		b = append(b, '"')
		for len(b) < n%200 {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		if n%7 != 0 {
			b = append(b, '"')
		}
		b = append(b, `,"k":1}`[:rng.IntN(8)]...)
		want := walk(b)
		got, err := stringEnd(b, 0)
		if want < 0 {
			assert.Error(t, err, "%q", b)
			continue
		}
		require.NoError(t, err, "%q", b)
		assert.Equal(t, want, got, "%q", b)
	}
}

// TestNonJSONNumbersAreInvalidJSON (issue 32 item 16): NaN, Infinity and
// -Infinity — what Python's json.dumps writes for a float nan or inf by
// default — are not JSON; wherever they stand, read or skipped, the join
// names them invalid JSON with file, line and field (it used to say "got
// JSON number, want number"). Other bytes that begin no value are named
// by the character.
func TestNonJSONNumbersAreInvalidJSON(t *testing.T) {
	dir := t.TempDir()
	files := Files{Dataset: filepath.Join(dir, "d.jsonl"), Records: filepath.Join(dir, "r.jsonl"), Raw: filepath.Join(dir, "raw.jsonl"),
		ServerRecords: filepath.Join(dir, "s.jsonl"), Native: filepath.Join(dir, "n.jsonl")}
	write := func(path string, lines ...string) {
		require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	}
	reg := families.DefaultRegistry()
	opts := Options{Extractor: reg.Extractors["openai-chat-text"], Comparator: reg.Comparators["exact"]}
	good := func() {
		write(files.Dataset, `{"session_id":"c","image":"data:,"}`)
		write(files.Native, `{"request_id":"a","answer":"x","task_ms":1}`)
		write(files.ServerRecords, `{"request_id":"a","task_ms":1}`)
		write(files.Records, `{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"metrics":{}}`)
		write(files.Raw, `{"metadata":{"x_request_id":"a","conversation_id":"c","benchmark_phase":"warmup"},"status":200}`)
	}
	const why = " is not a JSON number (JSON has no NaN or Infinity; Python's json.dumps writes them unless allow_nan=False)"
	for _, tc := range []struct {
		file *string
		line string
		want string
	}{
		{&files.ServerRecords, `{"request_id":"a","task_ms":NaN}`, "s.jsonl:1: task_ms: invalid JSON: NaN" + why},
		{&files.ServerRecords, `{"request_id":"a","model_call_ms":Infinity,"timing_scope":"public_task_call_wall"}`, "s.jsonl:1: model_call_ms: invalid JSON: Infinity" + why},
		{&files.ServerRecords, `{"request_id":"a","task_ms":-Infinity}`, "s.jsonl:1: task_ms: invalid JSON: -Infinity" + why},
		{&files.ServerRecords, `{"request_id":"a","task_ms":1,"handler_ms":NaN}`, "s.jsonl:1: handler_ms: invalid JSON: NaN" + why},
		{&files.ServerRecords, `{"request_id":"a","task_ms":1,"queue_ms":NaN}`, "s.jsonl:1: queue_ms: invalid JSON: NaN" + why},
		{&files.Native, `{"request_id":"a","answer":"x","task_ms":NaN}`, "n.jsonl:1: task_ms: invalid JSON: NaN" + why},
		{&files.Native, `{"request_id":"a","answer":"x","wall_ms":Infinity}`, "n.jsonl:1: wall_ms: invalid JSON: Infinity" + why},
		{&files.ServerRecords, `{"request_id":"a","image_width":NaN}`, "s.jsonl:1: image_width: invalid JSON: NaN" + why},
		{&files.ServerRecords, `{"request_id":"a","task_ms":1,"route":x}`, "s.jsonl:1: route: invalid JSON: 'x' does not begin a JSON value"},
	} {
		good()
		write(*tc.file, tc.line)
		_, err := Join(context.Background(), files, opts)
		assert.EqualError(t, err, tc.want, tc.line)
	}
}
