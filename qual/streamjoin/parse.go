package streamjoin

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// The line readers below accept and reject what encoding/json accepts and
// rejects when it decodes into qual/aiperf's RecordLine and RawLine, a
// server record and families.NativeAnswer: every field of those structs is
// type-checked (null is "absent" for pointers and a no-op for values),
// keys match exactly or else case-insensitively, the last duplicate wins.
// Unknown keys and json.RawMessage fields (payload, cause_chain, details)
// are skipped structurally, not validated byte by byte: that is the one
// thing these readers accept that encoding/json would reject.

var errMissing = errors.New("missing")

// fieldSet is the field names of one struct, for encoding/json's key
// matching: exact first, else case-insensitive.
type fieldSet struct {
	names []string
	byLen [32][]string // exact matching without hashing: names by length
}

// ignored marks, in byLen, keys the writers are known to add that no
// field reads: they match exactly and skip the case-insensitive search.
const ignored = "\x00"

func newFieldSet(names ...string) *fieldSet {
	s := &fieldSet{names: names}
	for _, n := range names {
		s.byLen[len(n)] = append(s.byLen[len(n)], n)
	}
	return s
}

// ignoring adds known keys that are not fields (none of them may fold to
// a field name).
func (s *fieldSet) ignoring(keys ...string) *fieldSet {
	for _, k := range keys {
		for _, n := range s.names {
			if strings.EqualFold(k, n) {
				panic("streamjoin: ignored key " + k + " folds to field " + n)
			}
		}
		s.byLen[len(k)] = append(s.byLen[len(k)], ignored+k)
	}
	return s
}

func (s *fieldSet) exact(key []byte) (string, bool) {
	if len(key) >= len(s.byLen) {
		return "", false
	}
	for _, n := range s.byLen[len(key)] {
		if n[0] == 0 {
			if string(key) == n[1:] {
				return "", true
			}
			continue
		}
		if string(key) == n {
			return n, true
		}
	}
	return "", false
}

// match returns the field a raw (undecoded) key selects, or "".
func (s *fieldSet) match(raw []byte) string {
	if n, ok := s.exact(raw); ok {
		return n
	}
	key, err := decodeKey(raw)
	if err != nil {
		return ""
	}
	if n, ok := s.exact(key); ok {
		return n
	}
	ascii := true
	for _, c := range key {
		if c >= 0x80 {
			ascii = false
			break
		}
	}
	for _, n := range s.names {
		if (!ascii || len(n) == len(key)) && strings.EqualFold(string(key), n) {
			return n
		}
	}
	return ""
}

var (
	metadataFields = newFieldSet("x_request_id", "conversation_id", "benchmark_phase", "request_start_ns", "was_cancelled",
		"session_num", "turn_index", "credit_issued_ns", "request_ack_ns", "request_end_ns", "phase_index", "cancellation_time_ns",
		"x_correlation_id", "worker_id", "record_processor_id", "phase_name", "phase_kind").
		ignoring("profiling_index", "context_overflow_skip", "agent_depth", "root_correlation_id", "parent_correlation_id",
			"source_trace_id", "source_outer_idx", "source_inner_idx", "source_kind")
	recordFields = newFieldSet("metadata", "metrics", "error", "trace_data").ignoring("spec_decode_acceptance")
	// traceFields are qual/aiperf's TraceData; the ignored keys are the
	// rest of AIPerf 0.13.0's AioHttpTraceDataExport.
	traceFields = newFieldSet("request_headers", "response_headers", "request_send_start_ns", "request_send_end_ns",
		"response_receive_start_ns", "response_receive_end_ns").
		ignoring("trace_type", "request_headers_sent_ns", "request_chunks", "request_chunks_count", "request_bytes_total",
			"response_status_code", "response_reason", "response_headers_received_ns", "response_chunks", "response_chunks_count",
			"response_bytes_total", "error_timestamp_ns", "sending_ns", "waiting_ns", "receiving_ns", "duration_ns",
			"connection_pool_wait_start_ns", "connection_pool_wait_end_ns", "tcp_connect_start_ns", "tcp_connect_end_ns",
			"connection_reused_ns", "dns_cache_hit_ns", "dns_cache_miss_ns", "dns_lookup_start_ns", "dns_lookup_end_ns",
			"local_ip", "local_port", "remote_ip", "remote_port", "blocked_ns", "dns_lookup_ns", "connecting_ns")
	rawFields = newFieldSet("metadata", "status", "error", "responses", "payload", "start_perf_ns", "request_headers").
			ignoring("response_headers", "cache_bust_marker", "cache_bust_target")
	errorFields    = newFieldSet("code", "type", "message", "cause", "cause_chain", "details")
	metricFields   = newFieldSet("value", "unit")
	responseFields = newFieldSet("text", "packets", "perf_ns", "content_type")
	packetFields   = newFieldSet("name", "value")
	// serverFields: the reference server's records (task_ms) and the
	// public trtmc-server's (records.py idx@a9ed5f69: model_call_ms with
	// timing_scope, status the HTTP status number, no task_ms).
	// The public records' handler_ms, admission_ms and
	// worker_roundtrip_ms are read as numbers beside model_call_ms,
	// streaming as one of its strings and has_system_prompt as a bool
	// (records.py, app.py idx@a9ed5f69): a record of another type there
	// is malformed.
	serverFields = newFieldSet("request_id", "task_ms", "model_call_ms", "timing_scope", "image_width", "image_height", "route", "status",
		"handler_ms", "image_bytes", "completion_tokens", "admission_ms", "worker_roundtrip_ms", "streaming", "has_system_prompt").
		ignoring("model", "queue_ms", "warmup_marker", "prompt_tokens", "token_source", "error_type", "completion_token_source",
			"input_tokens", "input_token_source", "replica", "generation_config", "setup_ms",
			"prefill_ms", "decode_ms")
	// nativeFields are families.NativeAnswer's json names, the one
	// declaration of native_answers.jsonl (TestNativeFieldsAreNativeAnswer).
	nativeFields = newFieldSet("request_id", "answer", "error", "task_ms", "wall_ms")
)

// Type checks for fields that are read only to reject what
// encoding/json rejects.
func checkString(b []byte, i int) (int, error) {
	i = skipWS(b, i)
	if i < len(b) && b[i] == '"' {
		return stringEnd(b, i)
	}
	if i < len(b) && b[i] == 'n' {
		return literal(b, i, "null")
	}
	if i >= len(b) {
		return 0, errEnd
	}
	return 0, typeError(b, i, "string")
}

func checkInt(b []byte, i int) (int, error) {
	_, next, _, err := readInt64(b, i)
	return next, err
}

// checkStringMap checks a map[string]string (request_headers).
func checkStringMap(b []byte, i int) (int, error) {
	o := walkNullable(b, i, nil)
	for o.next() {
		o.check(checkString)
	}
	return o.end()
}

// metaFields are the metadata fields the join reads.
type metaFields struct {
	id, conv, phase []byte
	startNs         int64
	canceled        bool
}

// parseMetadata reads AIPerf's metadata object into m (merging, as
// encoding/json does for a repeated key). Its keys are guessed from the
// last metadata object read (g, may be nil): AIPerf writes them in one
// order.
func parseMetadata(b []byte, i int, m *metaFields, g *keyGuess) (int, error) {
	// The walk is written out: it runs for every record and raw line, and
	// this loop is measurably faster than the fields walker.
	if j, isnull := isNull(b, i); isnull {
		return j, nil
	}
	i, empty, err := objectOpen(b, i)
	if err != nil || empty {
		return i, err
	}
	for n, more := 0, true; more; n++ {
		_, name, next, ok := g.at(b, i, n)
		if ok {
			i = next
		} else {
			at := skipWS(b, i)
			var key []byte
			if key, i, err = objectKey(b, i); err != nil {
				return 0, err
			}
			name = metadataFields.match(key)
			g.learn(n, b[at:i], name)
		}
		switch name {
		case "x_request_id":
			i, err = readOptString(b, i, &m.id)
		case "conversation_id":
			i, err = readOptString(b, i, &m.conv)
		case "benchmark_phase":
			i, err = readOptString(b, i, &m.phase)
		case "request_start_ns":
			m.startNs, i, _, err = readInt64(b, i)
		case "was_cancelled":
			m.canceled, i, err = readBool(b, i)
		case "session_num", "turn_index", "credit_issued_ns", "request_ack_ns", "request_end_ns", "phase_index", "cancellation_time_ns":
			i, err = checkInt(b, i)
		case "":
			i, err = skipValue(b, i)
		default:
			i, err = checkString(b, i)
		}
		if err != nil {
			return 0, inField(name, err)
		}
		if i, more, err = objectNext(b, i); err != nil {
			return 0, err
		}
	}
	return i, nil
}

// check is qual/aiperf's RecordMetadata.check; it returns the phase.
func (m *metaFields) check() (uint8, error) {
	switch {
	case len(m.id) == 0:
		return 0, &fieldError{"x_request_id", errMissing}
	case len(m.conv) == 0:
		return 0, &fieldError{"conversation_id", errMissing}
	case len(m.phase) == 0:
		return 0, &fieldError{"benchmark_phase", errMissing}
	case string(m.phase) == "warmup":
		return phaseWarmup, nil
	case string(m.phase) == "profiling":
		return phaseMeasured, nil
	}
	return 0, &fieldError{"benchmark_phase", errors.New("unknown phase " + strconv.Quote(string(m.phase)))}
}

// errorObj is what the join needs of AIPerf's error object.
type errorObj struct {
	present bool
	codeSet bool
	code    int64
	// typ and msg are read for the reason's example (they alias the line
	// or a fresh buffer).
	typ, msg []byte
}

// status is the HTTP status qual/aiperf derives from the error (100..599).
func (e *errorObj) status() int32 {
	if e.present && e.codeSet && e.code >= 100 && e.code <= 599 {
		return int32(e.code)
	}
	return 0
}

func parseError(b []byte, i int, e *errorObj) (int, error) {
	if j, isnull := isNull(b, i); isnull {
		*e = errorObj{}
		return j, nil
	}
	o := walkObject(b, i, errorFields)
	if o.err == nil {
		e.present = true
	}
	for o.next() {
		switch o.name {
		case "code":
			var isnull bool
			e.code, o.i, isnull, o.err = readInt64(b, o.i)
			e.codeSet = !isnull
		case "type":
			o.str(&e.typ)
		case "message":
			o.str(&e.msg)
		case "cause":
			o.check(checkString)
		default:
			o.skip()
		}
	}
	return o.end()
}

// clientLine is what one profile_export.jsonl line contributes.
type clientLine struct {
	key       reqKey
	id        []byte // aliases the line: valid until it is merged
	phase     uint8
	startNs   int64
	latencyMS float64
	failed    bool
	// convHash identifies the conversation (hasConv: there is a dataset to
	// look it up in).
	convHash uint64
	hasConv  bool
	status   int32
	// errText says what the client reported for a failed request.
	errText string
	// echo is what the record's HTTP trace shows of the server's
	// X-Request-ID echo (echoText says what was wrong), split its HTTP
	// exchange (ok: the trace has the four timestamps in order).
	echo     aiperf.Echo
	echoText string
	split    aiperf.HTTPSplit
	splitOK  bool
	// srvErr is a failed request's HTTP answer, read from its body.
	srvErr serverError
}

// serverError is a failed request's HTTP answer as the server gave it:
// trtmc-server's error envelope {"error": {"message", "type", "param",
// "code"}} (app.py error_response, idx@a9ed5f69), or FastAPI's own
// {"detail": ...} (typ "detail").
type serverError struct {
	typ, code, message string
}

// readServerError reads the error answer AIPerf kept as the record's
// error message (its body text, aiohttp_client.py); zero when the body is
// neither shape.
func readServerError(body []byte) serverError {
	var env struct {
		Error *struct {
			Message any    `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		} `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &env) != nil {
		return serverError{}
	}
	switch {
	case env.Error != nil:
		e := serverError{typ: env.Error.Type}
		if c, ok := env.Error.Code.(string); ok {
			e.code = c
		}
		if m, ok := env.Error.Message.(string); ok {
			e.message = text.Clip(m, 200)
		}
		return e
	case len(env.Detail) > 0:
		var d string
		_ = json.Unmarshal(env.Detail, &d)
		return serverError{typ: "detail", message: text.Clip(d, 200)}
	}
	return serverError{}
}

// traceInfo is what the join reads of a record's trace_data.
type traceInfo struct {
	present      bool
	sent, echoed []string // the values of every X-Request-ID header
	ts           [4]int64 // send start, send end, receive start, receive end
	has          [4]bool
}

// traceTimes are the timestamp fields of traceInfo.ts, in order.
var traceTimes = [4]string{"request_send_start_ns", "request_send_end_ns", "response_receive_start_ns", "response_receive_end_ns"}

// parseTrace reads trace_data as encoding/json decodes it into
// *aiperf.TraceData: null is no trace; the header maps keep every
// X-Request-ID value (a null value is "").
func parseTrace(b []byte, i int, t *traceInfo) (int, error) {
	if j, isnull := isNull(b, i); isnull {
		*t = traceInfo{}
		return j, nil
	}
	o := walkObject(b, i, traceFields)
	if o.err == nil {
		t.present = true
	}
	for o.next() {
		switch o.name {
		case "request_headers":
			o.i, o.err = readRequestIDs(b, o.i, &t.sent)
		case "response_headers":
			o.i, o.err = readRequestIDs(b, o.i, &t.echoed)
		case "":
			o.skip()
		default:
			k := slices.Index(traceTimes[:], o.name)
			var isnull bool
			t.ts[k], o.i, isnull, o.err = readInt64(b, o.i)
			t.has[k] = !isnull
		}
	}
	return o.end()
}

// readRequestIDs reads a header map (map[string]string; null is none) and
// sets *ids to the values of its X-Request-ID headers, in any case.
func readRequestIDs(b []byte, i int, ids *[]string) (int, error) {
	*ids = (*ids)[:0]
	o := walkNullable(b, i, nil)
	for o.next() {
		key, err := decodeKey(o.key)
		if err != nil || !aiperf.IsRequestIDHeader(string(key)) {
			o.check(checkString)
			continue
		}
		var v []byte
		o.str(&v)
		*ids = append(*ids, string(v))
	}
	return o.end()
}

func parseRecordLine(w *worker, line []byte, out *clientLine) error {
	o := walkObject(line, 0, recordFields)
	if o.err != nil {
		return o.err
	}
	var m metaFields
	var eo errorObj
	tr := &w.trace
	*tr = traceInfo{sent: tr.sent[:0], echoed: tr.echoed[:0]}
	hasMetrics := false
	out.latencyMS = math.NaN()
	for o.next() {
		switch o.name {
		case "metadata":
			o.i, o.err = parseMetadata(line, o.i, &m, &w.guessMeta)
		case "trace_data":
			o.i, o.err = parseTrace(line, o.i, tr)
		case "metrics":
			var isnull bool
			if o.i, isnull = isNull(line, o.i); isnull {
				hasMetrics = false
				out.latencyMS = math.NaN()
			} else {
				hasMetrics = true
				o.i, o.err = w.parseMetrics(line, o.i, out)
			}
		case "error":
			o.i, o.err = parseError(line, o.i, &eo)
		default:
			o.skip()
		}
	}
	if err := o.endLine(); err != nil {
		return err
	}
	phase, err := m.check()
	if err != nil {
		return inField("metadata", err)
	}
	if !hasMetrics {
		return &fieldError{"metrics", errMissing}
	}
	out.key = w.h.key(m.id)
	out.id, out.phase, out.startNs = m.id, phase, m.startNs
	out.convHash, out.hasConv = 0, w.sessions != nil
	if out.hasConv {
		// The session's slot is looked up by the merge, after a prefetch
		// (touchRecords).
		out.convHash = w.sessions.hash(m.conv)
	}
	out.failed = eo.present || m.canceled
	out.errText, out.srvErr = "", serverError{}
	switch {
	case eo.present:
		if eo.status() != 0 {
			out.srvErr = readServerError(eo.msg)
		}
		code := "no code"
		if eo.codeSet {
			code = strconv.FormatInt(eo.code, 10)
		}
		out.errText = string(eo.typ) + " (" + code + "): " + string(eo.msg)
	case m.canceled:
		out.errText = "cancelled by the client"
	}
	out.status = eo.status()
	out.echo, out.echoText = aiperf.ClassifyEcho(string(m.id), tr.present, tr.sent, tr.echoed)
	out.split, out.splitOK = aiperf.HTTPSplit{}, tr.has == [4]bool{true, true, true, true}
	if out.splitOK {
		out.split, out.splitOK = aiperf.Split(tr.ts[0], tr.ts[1], tr.ts[2], tr.ts[3])
	}
	return nil
}

// parseMetrics walks the metrics map; request_latency's value is read the
// way aiperf.MetricValue.Float reads it: a number, else absent.
//
// Its keys are guessed from the record before (w.guessMetrics), as
// parseMetadata's.
func (w *worker) parseMetrics(b []byte, i int, out *clientLine) (int, error) {
	// The walk is written out, as in parseMetadata: a record has dozens
	// of metrics.
	i, empty, err := objectOpen(b, i)
	if err != nil || empty {
		return i, err
	}
	for n, more := 0, true; more; n++ {
		key, _, next, ok := w.guessMetrics.at(b, i, n)
		if ok {
			i = next
		} else {
			at := skipWS(b, i)
			if key, i, err = objectKey(b, i); err != nil {
				return 0, err
			}
			w.guessMetrics.learn(n, b[at:i], "")
		}
		if keyIs(key, "request_latency") {
			out.latencyMS = math.NaN() // a map element is decoded afresh
			i, err = parseMetricValue(b, i, &out.latencyMS)
		} else {
			i, err = parseMetricValue(b, i, nil)
		}
		if err != nil {
			return 0, inField(string(key), err) // a metric tag
		}
		if i, more, err = objectNext(b, i); err != nil {
			return 0, err
		}
	}
	return i, nil
}

func parseMetricValue(b []byte, i int, v *float64) (int, error) {
	if end, ok := metricFast(b, i, v); ok {
		return end, nil
	}
	o := walkNullable(b, i, metricFields)
	for o.next() {
		switch o.name {
		case "value":
			j := skipWS(b, o.i)
			if o.skip(); o.err == nil && v != nil {
				*v = math.NaN()
				if c := b[j]; c == '-' || (c >= '0' && c <= '9') {
					if f, perr := strconv.ParseFloat(string(b[j:o.i]), 64); perr == nil {
						*v = f
					}
				}
			}
		case "unit":
			o.check(checkString)
		default:
			o.skip()
		}
	}
	return o.end()
}

// metricFast reads AIPerf's own metric shape, {"value":<number>,"unit":
// "<plain text>"}, without the general walk; ok is false for any other
// shape, which the general walk then reads.
func metricFast(b []byte, i int, v *float64) (end int, ok bool) {
	const open, unit = `{"value":`, `,"unit":"`
	if len(b)-i < len(open) || string(b[i:i+len(open)]) != open {
		return 0, false
	}
	k := i + len(open)
	if k >= len(b) || (b[k] != '-' && (b[k] < '0' || b[k] > '9')) {
		return 0, false
	}
	e := numberEnd(b, k)
	if len(b)-e < len(unit) || string(b[e:e+len(unit)]) != unit {
		return 0, false
	}
	u := e + len(unit)
	for u < len(b) && strClass[b[u]] == 0 {
		u++
	}
	if u+1 >= len(b) || b[u] != '"' || b[u+1] != '}' {
		return 0, false
	}
	if v != nil {
		*v = math.NaN()
		if f, err := strconv.ParseFloat(string(b[k:e]), 64); err == nil {
			*v = f
		}
	}
	return u + 2, true
}

// rawLine is what one profile_export_raw.jsonl line contributes.
type rawLine struct {
	key       reqKey
	id        []byte // aliases the line: valid until it is merged
	phase     uint8
	convHash  uint64
	status    int32
	hasStatus bool
	ans       answerInfo
}

// answerInfo is an extracted answer as the index keeps it.
type answerInfo struct {
	outcome uint8     // ansOK, ansBad, ansMeaningless, ansTooLarge, ansWrongModel
	model   string    // ansWrongModel: the model the answer names
	hash    [2]uint64 // 128-bit keyed hash of the canonical answer
	tokens  uint32
	boxes   uint32
	// canon is the canonical answer, kept only until the line is merged
	// (for a comparator that is not byte equality).
	canon []byte
}

func parseRawLine(w *worker, line []byte, out *rawLine) error {
	o := walkGuessing(line, 0, rawFields, &w.guessRaw)
	if o.err != nil {
		return o.err
	}
	var m metaFields
	var eo errorObj
	w.spans = w.spans[:0]
	for o.next() {
		switch o.name {
		case "metadata":
			o.i, o.err = parseMetadata(line, o.i, &m, &w.guessMeta)
		case "status":
			var v int64
			var isnull bool
			v, o.i, isnull, o.err = readInt64(line, o.i)
			out.status, out.hasStatus = int32(v), !isnull
		case "error":
			o.i, o.err = parseError(line, o.i, &eo)
		case "responses":
			w.spans = w.spans[:0]
			o.i, o.err = w.parseResponses(line, o.i)
		case "start_perf_ns":
			o.check(checkInt)
		case "request_headers":
			o.check(checkStringMap)
		default: // payload (base64 images) and unknown keys
			o.skip()
		}
	}
	if err := o.endLine(); err != nil {
		return err
	}
	phase, err := m.check()
	if err != nil {
		return inField("metadata", err)
	}
	if !out.hasStatus && !eo.present {
		return &fieldError{"status", errors.New("missing on a record without error")}
	}
	out.key = w.h.key(m.id)
	out.id, out.phase = m.id, phase
	if w.sessions != nil {
		out.convHash = w.sessions.hash(m.conv)
	}
	ans, err := w.httpAnswer(line)
	out.ans = ans
	return inField("responses", err)
}

// parseResponses assembles the response body exactly as aiperf.RawLine.Body
// does: each response's text, or its SSE packets as "name: value" lines
// with a blank line after each event.
func (w *worker) parseResponses(b []byte, i int) (int, error) {
	if j, isnull := isNull(b, i); isnull {
		return j, nil
	}
	i, empty, err := arrayOpen(b, i)
	if err != nil || empty {
		return i, err
	}
	for more := true; more; {
		if i, err = w.parseResponse(b, i); err != nil {
			return 0, err
		}
		if i, more, err = arrayNext(b, i); err != nil {
			return 0, err
		}
	}
	return i, nil
}

func (w *worker) parseResponse(b []byte, i int) (int, error) {
	o := walkNullable(b, i, responseFields)
	o.guess = &w.guessResp
	textAt, packetsAt, textEnd, packetsEnd := -1, -1, 0, 0
	for o.next() {
		switch o.name {
		case "text":
			textAt = -1
			if j, isnull := isNull(b, o.i); isnull {
				o.i = j
			} else {
				textAt = skipWS(b, o.i)
				o.check(checkString)
				textEnd = o.i
			}
		case "packets":
			packetsAt = skipWS(b, o.i)
			o.check(checkPackets)
			packetsEnd = o.i
		case "perf_ns":
			o.check(checkInt)
		case "content_type":
			o.check(checkString)
		default:
			o.skip()
		}
	}
	i, err := o.end()
	if err != nil {
		return 0, err
	}
	switch {
	case textAt >= 0:
		w.spans = append(w.spans, span{text: true, start: textAt, end: textEnd})
	case packetsAt >= 0:
		w.spans = append(w.spans, span{start: packetsAt, end: packetsEnd})
	}
	return i, nil
}

// span is one response's text (a JSON string) or SSE packet list (a JSON
// array) in the line: the body is decoded from spans only when the memo
// does not already know its answer.
type span struct {
	text       bool
	start, end int
}

// body assembles the response body from the spans.
func (w *worker) assembleBody(line []byte) ([]byte, error) {
	w.body = w.body[:0]
	var err error
	for _, sp := range w.spans {
		if sp.text {
			if w.body, _, _, err = appendString(w.body, line, sp.start); err != nil {
				return nil, inField("text", err)
			}
			continue
		}
		if err := w.appendPackets(line, sp.start); err != nil {
			return nil, inField("packets", err)
		}
	}
	return w.body, nil
}

// checkPackets type-checks an SSE packet list.
func checkPackets(b []byte, i int) (int, error) {
	if j, isnull := isNull(b, i); isnull {
		return j, nil
	}
	i, empty, err := arrayOpen(b, i)
	if err != nil || empty {
		return i, err
	}
	for more := true; more; {
		o := walkNullable(b, i, nil) // errors are not named by field here
		for o.next() {
			if packetFields.match(o.key) != "" {
				o.check(checkString)
			} else {
				o.skip()
			}
		}
		if i, err = o.end(); err != nil {
			return 0, err
		}
		if i, more, err = arrayNext(b, i); err != nil {
			return 0, err
		}
	}
	return i, nil
}

// appendPackets appends a checked packet list to the body.
func (w *worker) appendPackets(b []byte, i int) error {
	if _, isnull := isNull(b, i); isnull {
		return nil
	}
	i, empty, err := arrayOpen(b, i)
	if err != nil || empty {
		return err
	}
	for more := true; more; {
		if i, err = w.appendPacket(b, i); err != nil {
			return err
		}
		if i, more, err = arrayNext(b, i); err != nil {
			return err
		}
	}
	w.body = append(w.body, '\n')
	return nil
}

func (w *worker) appendPacket(b []byte, i int) (int, error) {
	nameAt, valueAt := -1, -1
	o := walkNullable(b, i, nil)
	for o.next() {
		at := skipWS(b, o.i)
		_, isnull := isNull(b, at)
		switch packetFields.match(o.key) {
		case "name":
			if !isnull {
				nameAt = at
			}
		case "value":
			if !isnull {
				valueAt = at
			}
		}
		o.skip()
	}
	i, err := o.end()
	if err != nil {
		return 0, err
	}
	if nameAt >= 0 {
		if w.body, _, _, err = appendString(w.body, b, nameAt); err != nil {
			return 0, err
		}
	}
	w.body = append(w.body, ": "...)
	if valueAt >= 0 {
		if w.body, _, _, err = appendString(w.body, b, valueAt); err != nil {
			return 0, err
		}
	}
	w.body = append(w.body, '\n')
	return i, nil
}

// serverLine is what one server record contributes.
type serverLine struct {
	key reqKey
	// taskMS is the record's task_ms (the reference server), callMS its
	// model_call_ms (the public trtmc-server), NaN when absent or null;
	// scope is its timing_scope (scopeNone, scopeTaskCall or scopeOther,
	// scopeText then holding it).
	taskMS, callMS float64
	scope          uint8
	scopeText      string
	w, h           int32
	// tokens is the record's completion_tokens (0: not counted).
	tokens uint32
	// handlerMS, admissionMS and roundtripMS are the public records'
	// handler_ms (the whole request in the server), admission_ms (the
	// replica lease) and worker_roundtrip_ms (the worker call as the
	// control plane timed it), NaN when absent or null. handler_ms and
	// worker_roundtrip_ms enclose the Task call: a Task time is never
	// longer than either.
	handlerMS, admissionMS, roundtripMS float64
	// streaming is the record's streaming (streamingUnset when absent or
	// null); systemPrompt its has_system_prompt.
	streaming    uint8
	systemPrompt bool
}

// Values of a record's streaming (app.py idx@a9ed5f69: "none" for a plain
// answer, "buffered" for SSE of a finished answer, "incremental" for
// deltas as they come).
const (
	streamingUnset uint8 = iota
	streamingNone
	streamingBuffered
	streamingIncremental
)

// readTime reads one of the record's handler_ms, admission_ms and
// worker_roundtrip_ms (a number; null is NaN).
func (v *serverLine) readTime(name string, b []byte, i int) (int, error) {
	dst := &v.handlerMS
	switch name {
	case "admission_ms":
		dst = &v.admissionMS
	case "worker_roundtrip_ms":
		dst = &v.roundtripMS
	}
	f, next, isnull, err := readFloat(b, i)
	*dst = f
	if isnull {
		*dst = math.NaN()
	}
	return next, err
}

// readStreaming reads a record's streaming: null, or one of its strings.
func readStreaming(b []byte, i int, dst *uint8, buf *[]byte) (int, error) {
	*buf = (*buf)[:0]
	j, err := readOptString(b, i, buf)
	if err != nil {
		return j, err
	}
	if _, isnull := isNull(b, i); isnull {
		*dst = streamingUnset
		return j, nil
	}
	switch string(*buf) {
	case "none":
		*dst = streamingNone
	case "buffered":
		*dst = streamingBuffered
	case "incremental":
		*dst = streamingIncremental
	default:
		return j, &wantError{got: "string " + strconv.Quote(string(*buf)), want: `"none", "buffered" or "incremental"`}
	}
	return j, nil
}

// timing is the field of a server record's timing of that name.
func (v *serverLine) timing(name string) *float64 {
	switch name {
	case "model_call_ms":
		return &v.callMS
	}
	return &v.taskMS
}

// Timing scopes of a server record.
const (
	scopeNone uint8 = iota
	scopeTaskCall
	scopeOther
)

// ScopeTaskCall is the public Task call's wall time, the one timing_scope
// whose model_call_ms is a Task time (trtmc-server app.py idx@a9ed5f69).
const ScopeTaskCall = "public_task_call_wall"

func parseServerLine(w *worker, line []byte, out *serverLine) error {
	return parseServerLineID(w, line, out, nil)
}

// parseServerLineID parses a server record; idOut, when set, receives the
// request id as a string.
func parseServerLineID(w *worker, line []byte, out *serverLine, idOut *string) error {
	o := walkGuessing(line, 0, serverFields, &w.guessServer)
	if o.err != nil {
		return o.err
	}
	var id, scope, streaming []byte
	out.taskMS, out.callMS = math.NaN(), math.NaN()
	out.handlerMS, out.admissionMS, out.roundtripMS = math.NaN(), math.NaN(), math.NaN()
	out.streaming, out.systemPrompt = streamingUnset, false
	for o.next() {
		switch o.name {
		case "request_id":
			o.str(&id)
		case "task_ms", "model_call_ms":
			v := out.timing(o.name)
			var isnull bool
			*v, o.i, isnull, o.err = readFloat(line, o.i)
			if isnull {
				*v = math.NaN()
			}
		case "timing_scope":
			scope = scope[:0]
			o.str(&scope)
			switch {
			case len(scope) == 0:
				out.scope = scopeNone
			case string(scope) == ScopeTaskCall:
				out.scope = scopeTaskCall
			default:
				out.scope, out.scopeText = scopeOther, string(scope)
			}
		case "image_width":
			o.int32(&out.w)
		case "image_height":
			o.int32(&out.h)
		case "completion_tokens":
			var v int64
			var isnull bool
			v, o.i, isnull, o.err = readInt64(line, o.i)
			if o.err == nil && !isnull {
				if v < 0 || v > math.MaxUint32 {
					o.err = &wantError{got: "number " + strconv.FormatInt(v, 10), want: "a token count (0 to 2^32-1)"}
				}
				out.tokens = uint32(v)
			}
		case "route":
			o.check(checkString)
		case "status", "image_bytes":
			o.check(checkInt)
		case "handler_ms", "admission_ms", "worker_roundtrip_ms":
			o.i, o.err = out.readTime(o.name, line, o.i)
		case "streaming":
			o.i, o.err = readStreaming(line, o.i, &out.streaming, &streaming)
		case "has_system_prompt":
			out.systemPrompt, o.i, o.err = readBool(line, o.i)
		default:
			o.skip()
		}
	}
	if err := o.endLine(); err != nil {
		return err
	}
	// A record without its id can be matched to nothing: malformed
	// evidence naming the line, never an empty id nobody sent.
	if len(id) == 0 {
		return &fieldError{"request_id", errMissing}
	}
	if idOut != nil {
		*idOut = string(id)
		return nil
	}
	out.key = w.h.key(id)
	return nil
}

// nativeLine is what one native answer line contributes.
type nativeLine struct {
	key     reqKey
	failed  bool
	errText []byte  // an error line's error
	taskMS  float64 // NaN: none
	wallMS  float64 // NaN: none
	ans     answerInfo
}

// nativeRecord is one native answer line as read: request_id, the raw
// answer value, task_ms and wall_ms (NaN when absent or null) and the
// error text (a line with one is an error line).
type nativeRecord struct {
	id, answer, errText []byte
	taskMS, wallMS      float64
}

func readNativeRecord(line []byte) (nativeRecord, error) {
	o := walkObject(line, 0, nativeFields)
	r := nativeRecord{taskMS: math.NaN(), wallMS: math.NaN()}
	for o.next() {
		switch o.name {
		case "request_id":
			o.str(&r.id)
		case "answer":
			start := skipWS(line, o.i)
			o.skip()
			if o.err == nil { // after an error o.i is 0: nothing to slice
				r.answer = line[start:o.i]
			}
		case "error":
			r.errText = r.errText[:0] // the last non-null error
			o.str(&r.errText)
		case "task_ms", "wall_ms":
			v := &r.taskMS
			if o.name == "wall_ms" {
				v = &r.wallMS
			}
			var isnull bool
			*v, o.i, isnull, o.err = readFloat(line, o.i)
			if isnull {
				*v = math.NaN()
			}
		default:
			o.skip()
		}
	}
	if err := o.endLine(); err != nil {
		return nativeRecord{}, err
	}
	if len(r.id) == 0 {
		// An answer nobody can claim is malformed evidence, not an
		// unclaimed one (issue 25 item 18).
		return nativeRecord{}, &fieldError{"request_id", errMissing}
	}
	return r, nil
}

// readNativeLine reads request_id, the raw answer value, task_ms (NaN when
// absent or null) and whether the line is an error line.
func readNativeLine(line []byte) (id, answer []byte, taskMS float64, failed bool, err error) {
	r, err := readNativeRecord(line)
	if err != nil {
		return nil, nil, 0, false, err
	}
	return r.id, r.answer, r.taskMS, len(r.errText) > 0, nil
}

func parseNativeLine(w *worker, line []byte, out *nativeLine) error {
	r, err := readNativeRecord(line)
	if err != nil {
		return err
	}
	out.key = w.h.key(r.id)
	out.failed, out.errText, out.taskMS, out.wallMS = len(r.errText) > 0, r.errText, r.taskMS, r.wallMS
	if !out.failed {
		out.ans = w.nativeAnswer(r.answer)
	}
	return nil
}

// httpAnswer extracts, judges and hashes the HTTP answer of a raw line
// with the family's own extractor. It is memoised by the exact bytes of
// the response spans, so a repeated answer is neither decoded nor
// extracted again.
func (w *worker) httpAnswer(line []byte) (answerInfo, error) {
	if w.memo == nil {
		body, err := w.assembleBody(line)
		if err != nil {
			return answerInfo{}, err
		}
		return w.extractHTTP(body), nil
	}
	k := w.spanKey(line)
	if v, ok := w.memo.http[k]; ok {
		return v, nil
	}
	body, err := w.assembleBody(line)
	if err != nil {
		return answerInfo{}, err
	}
	v := w.extractHTTP(body)
	w.memo.put(w.memo.http, k, v)
	return v, nil
}

// spanKey is a 128-bit hash of the spans' kinds and bytes: equal keys
// mean equal bodies.
func (w *worker) spanKey(line []byte) [2]uint64 {
	if len(w.spans) == 1 {
		sp := w.spans[0]
		k := w.h.sum128(line[sp.start:sp.end])
		if sp.text {
			k[1] ^= 0x9e3779b97f4a7c15
		}
		return k
	}
	w.ha.Reset()
	w.hb.Reset()
	var hdr [9]byte
	for _, sp := range w.spans {
		hdr[0] = 0
		if sp.text {
			hdr[0] = 1
		}
		binary.LittleEndian.PutUint64(hdr[1:], uint64(sp.end-sp.start))
		w.ha.Write(hdr[:])
		w.hb.Write(hdr[:])
		w.ha.Write(line[sp.start:sp.end])
		w.hb.Write(line[sp.start:sp.end])
	}
	return [2]uint64{w.ha.Sum64(), w.hb.Sum64() ^ uint64(len(w.spans))}
}

func (w *worker) extractHTTP(body []byte) answerInfo {
	if len(body) > fileio.MaxAnswerBytes {
		return answerInfo{outcome: ansTooLarge}
	}
	var in []byte
	if len(body) > 0 {
		// A copy: the extractor may keep it, and body is reused. An empty
		// body stays nil, as aiperf.RawLine.Body returns it.
		in = bytes.Clone(body)
	}
	a, err := w.ex.FromHTTP(in)
	if err != nil {
		return answerInfo{outcome: ansBad}
	}
	if why := w.ex.NotMeaningful(a, w.sem); why != "" {
		return answerInfo{outcome: ansMeaningless}
	}
	// Answers name the model that was served (issue 25 item 8).
	if a.NamesModel && w.served != "" && a.Model != w.served {
		return answerInfo{outcome: ansWrongModel, model: a.Model}
	}
	return w.info(a)
}

func (w *worker) nativeAnswer(answer []byte) answerInfo {
	if w.memo == nil {
		return w.extractNative(answer)
	}
	k := w.h.sum128(answer)
	if answer == nil {
		k[0] ^= 1 // absent differs from empty
	}
	if v, ok := w.memo.native[k]; ok {
		return v
	}
	v := w.extractNative(answer)
	w.memo.put(w.memo.native, k, v)
	return v
}

func (w *worker) extractNative(answer []byte) answerInfo {
	a, err := w.ex.FromNative(bytes.Clone(answer)) // the extractor may keep it
	if err != nil {
		return answerInfo{outcome: ansBad}
	}
	return w.info(a)
}

func (w *worker) info(a families.Answer) answerInfo {
	return answerInfo{outcome: ansOK, hash: w.h.sum128(a.Canonical), tokens: uint32(a.Tokens), boxes: uint32(a.Boxes), canon: a.Canonical}
}

// memo remembers extractions by the exact bytes extracted from: a corpus
// of a few dozen images answered a million times is extracted a few dozen
// times. It is bounded; when full it starts over.
type memo struct {
	http, native map[[2]uint64]answerInfo
}

const memoMax = 1 << 12

func newMemo() *memo {
	return &memo{http: map[[2]uint64]answerInfo{}, native: map[[2]uint64]answerInfo{}}
}

func (m *memo) put(t map[[2]uint64]answerInfo, k [2]uint64, v answerInfo) {
	if len(t) >= memoMax {
		clear(t)
	}
	t[k] = v
}
