package aiperf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Phases as AIPerf 0.13.0 writes them in metadata.benchmark_phase.
const (
	PhaseWarmup    = "warmup"
	PhaseProfiling = "profiling"
)

// RecordMetadata is the metadata block shared by profile_export.jsonl and
// profile_export_raw.jsonl lines. AIPerf omits None fields, so everything
// that can be absent is a pointer; unknown fields are ignored.
type RecordMetadata struct {
	SessionNum         *int   `json:"session_num,omitempty"`
	XRequestID         string `json:"x_request_id"`
	XCorrelationID     string `json:"x_correlation_id,omitempty"`
	ConversationID     string `json:"conversation_id"`
	TurnIndex          *int   `json:"turn_index,omitempty"`
	CreditIssuedNs     *int64 `json:"credit_issued_ns,omitempty"`
	RequestStartNs     *int64 `json:"request_start_ns,omitempty"`
	RequestAckNs       *int64 `json:"request_ack_ns,omitempty"`
	RequestEndNs       *int64 `json:"request_end_ns,omitempty"`
	WorkerID           string `json:"worker_id,omitempty"`
	RecordProcessorID  string `json:"record_processor_id,omitempty"`
	BenchmarkPhase     string `json:"benchmark_phase"`
	PhaseIndex         *int   `json:"phase_index,omitempty"`
	PhaseName          string `json:"phase_name,omitempty"`
	PhaseKind          string `json:"phase_kind,omitempty"`
	WasCancelled       *bool  `json:"was_cancelled,omitempty"`
	CancellationTimeNs *int64 `json:"cancellation_time_ns,omitempty"`
}

// Cancelled reports whether AIPerf marked the request as cancelled.
func (m *RecordMetadata) Cancelled() bool { return m.WasCancelled != nil && *m.WasCancelled }

// check validates the fields every record must have.
func (m *RecordMetadata) check() (field string, err error) {
	switch {
	case m.XRequestID == "":
		return "metadata.x_request_id", errMissing
	case m.ConversationID == "":
		return "metadata.conversation_id", errMissing
	case m.BenchmarkPhase == "":
		return "metadata.benchmark_phase", errMissing
	case m.BenchmarkPhase != PhaseWarmup && m.BenchmarkPhase != PhaseProfiling:
		return "metadata.benchmark_phase", fmt.Errorf("unknown phase %q", m.BenchmarkPhase)
	}
	return "", nil
}

var errMissing = errors.New("missing")

// RequestError is AIPerf's error details object: code is the HTTP status for
// HTTP failures, 499 for cancellations, absent for client-side exceptions.
type RequestError struct {
	Code       *int            `json:"code,omitempty"`
	Type       string          `json:"type,omitempty"`
	Message    string          `json:"message,omitempty"`
	Cause      string          `json:"cause,omitempty"`
	CauseChain json.RawMessage `json:"cause_chain,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
}

func (e *RequestError) String() string {
	code := "no code"
	if e.Code != nil {
		code = strconv.Itoa(*e.Code)
	}
	return fmt.Sprintf("%s (%s): %s", e.Type, code, e.Message)
}

// MetricValue is one per-record metric: a number or, for a few streaming
// metrics, a list of numbers, with its display unit.
type MetricValue struct {
	Value json.RawMessage `json:"value"`
	Unit  string          `json:"unit"`
}

// Float returns the value as a number; ok is false for lists and nulls.
func (v MetricValue) Float() (float64, bool) {
	if len(v.Value) == 0 || v.Value[0] == '[' || v.Value[0] == 'n' {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v.Value), 64)
	return f, err == nil
}

// RecordLine is one line of profile_export.jsonl.
type RecordLine struct {
	Metadata RecordMetadata         `json:"metadata"`
	Metrics  map[string]MetricValue `json:"metrics"`
	Error    *RequestError          `json:"error,omitempty"`
	// TraceData is the request's HTTP trace (--export-http-trace).
	TraceData *TraceData `json:"trace_data,omitempty"`
}

// Metric returns a numeric metric of the record.
func (r *RecordLine) Metric(tag string) (float64, bool) {
	v, ok := r.Metrics[tag]
	if !ok {
		return 0, false
	}
	return v.Float()
}

// RawResponse is one element of a raw record's responses: a non-streaming
// body (text), or one SSE event (packets).
type RawResponse struct {
	PerfNs      int64       `json:"perf_ns"`
	Text        *string     `json:"text,omitempty"`
	ContentType string      `json:"content_type,omitempty"`
	Packets     []SSEPacket `json:"packets,omitempty"`
}

// SSEPacket is one field of a server-sent event.
type SSEPacket struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// RawLine is one line of profile_export_raw.jsonl.
type RawLine struct {
	Metadata       RecordMetadata    `json:"metadata"`
	StartPerfNs    *int64            `json:"start_perf_ns,omitempty"`
	Payload        json.RawMessage   `json:"payload,omitempty"`
	RequestHeaders map[string]string `json:"request_headers,omitempty"`
	Status         *int              `json:"status,omitempty"`
	Responses      []RawResponse     `json:"responses"`
	Error          *RequestError     `json:"error,omitempty"`
}

// Body is the response body as received: the concatenated text of a
// non-streaming response, or the SSE events re-serialised as
// "name: value" lines with a blank line after each event.
func (r *RawLine) Body() []byte {
	var b bytes.Buffer
	for _, resp := range r.Responses {
		if resp.Text != nil {
			b.WriteString(*resp.Text)
			continue
		}
		for _, p := range resp.Packets {
			b.WriteString(p.Name)
			b.WriteString(": ")
			b.WriteString(p.Value)
			b.WriteByte('\n')
		}
		if len(resp.Packets) > 0 {
			b.WriteByte('\n')
		}
	}
	if b.Len() == 0 {
		return nil
	}
	return b.Bytes()
}

// BodyLen is len(Body()) without building it.
func (r *RawLine) BodyLen() int {
	n := 0
	for _, resp := range r.Responses {
		if resp.Text != nil {
			n += len(*resp.Text)
			continue
		}
		for _, p := range resp.Packets {
			n += len(p.Name) + 2 + len(p.Value) + 1
		}
		if len(resp.Packets) > 0 {
			n++
		}
	}
	return n
}

// LatencyNs is the exact request latency AIPerf measured, in nanoseconds of
// its perf counter: the last response's perf_ns minus start_perf_ns.
func (r *RawLine) LatencyNs() (int64, bool) {
	if r.StartPerfNs == nil || len(r.Responses) == 0 {
		return 0, false
	}
	return r.Responses[len(r.Responses)-1].PerfNs - *r.StartPerfNs, true
}

// ScanRecords streams profile_export.jsonl, calling fn for each record in
// file order (completion order, not dataset order). Required fields are
// checked; the first bad line stops the scan with a *ParseError.
func ScanRecords(path string, fn func(lineNo int, r *RecordLine) error) error {
	return scanLines(path, recordsLineFunc(path, fn))
}

func recordsLineFunc(path string, fn func(lineNo int, r *RecordLine) error) func(int, []byte) error {
	return func(lineNo int, line []byte) error {
		var r RecordLine
		if err := decodeLine(path, lineNo, line, &r); err != nil {
			return err
		}
		if field, err := r.Metadata.check(); err != nil {
			return &ParseError{File: path, Line: lineNo, Field: field, Err: err}
		}
		if r.Metrics == nil {
			return &ParseError{File: path, Line: lineNo, Field: "metrics", Err: errMissing}
		}
		return fn(lineNo, &r)
	}
}

// ScanRaw streams profile_export_raw.jsonl (or one raw_records shard),
// calling fn for each record. Lines can be many megabytes (payloads carry
// base64 images); there is no length limit.
func ScanRaw(path string, fn func(lineNo int, r *RawLine) error) error {
	return scanLines(path, func(lineNo int, line []byte) error {
		var r RawLine
		if err := decodeLine(path, lineNo, line, &r); err != nil {
			return err
		}
		if field, err := r.Metadata.check(); err != nil {
			return &ParseError{File: path, Line: lineNo, Field: field, Err: err}
		}
		if r.Status == nil && r.Error == nil {
			return &ParseError{File: path, Line: lineNo, Field: "status", Err: errors.New("missing on a record without error")}
		}
		return fn(lineNo, &r)
	})
}

// decodeLine unmarshals one JSON line, turning decoder errors into
// "file:line: field: problem".
func decodeLine(path string, lineNo int, line []byte, v any) error {
	err := json.Unmarshal(line, v)
	if err == nil {
		return nil
	}
	return jsonError(path, lineNo, line, err)
}

func jsonError(path string, lineNo int, data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		if lineNo == 0 {
			lineNo = 1 + bytes.Count(data[:min(int(syn.Offset), len(data))], []byte{'\n'})
		}
		return &ParseError{File: path, Line: lineNo, Err: fmt.Errorf("invalid JSON: %w", err)}
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "(top level)"
		}
		return &ParseError{File: path, Line: lineNo, Field: field,
			Err: fmt.Errorf("got JSON %s, want %s", typ.Value, typ.Type)}
	case err.Error() == "unexpected end of JSON input":
		return &ParseError{File: path, Line: lineNo, Err: fmt.Errorf("invalid JSON: %w", err)}
	}
	return &ParseError{File: path, Line: lineNo, Err: err}
}
