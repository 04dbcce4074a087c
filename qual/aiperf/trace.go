package aiperf

import (
	"fmt"
	"strings"
)

// HeaderRequestID is the header AIPerf 0.13.0 sends with every request
// (a fresh uuid4, equal to metadata.x_request_id) and that trtmc-server
// echoes in its answer (records.py RequestPolicy, idx@a9ed5f69).
const HeaderRequestID = "X-Request-ID"

// TraceData is what the join reads of a record's trace_data, the HTTP trace
// AIPerf 0.13.0 writes into profile_export.jsonl with --export-http-trace
// (common/models/trace_models.py, AioHttpTraceDataExport): the request and
// response headers as aiohttp saw them and the wall-clock timestamps of the
// exchange. Headers are a plain dict there (dict() of aiohttp's
// CIMultiDictProxy, checked with the installed aiohttp): a well-known name
// is spelled aiohttp's way whatever case the server sent (X-Request-ID
// among them), and a repeated header keeps its first value only — a second,
// different X-Request-ID in an answer is not visible. Everything else of
// the trace (chunk counts, socket addresses, AIPerf's computed *_ns
// durations) is not read.
type TraceData struct {
	RequestHeaders  map[string]string `json:"request_headers,omitempty"`
	ResponseHeaders map[string]string `json:"response_headers,omitempty"`
	// The exchange's timestamps (time.time_ns() of the client): the request
	// started being sent (aiohttp's on_request_start: before a new
	// connection is opened, so sending includes connecting), its last byte
	// was written, the response body's first byte arrived, and the body was
	// read whole (for a non-streamed answer, the same instant as the raw
	// response's perf_ns).
	RequestSendStartNs     *int64 `json:"request_send_start_ns,omitempty"`
	RequestSendEndNs       *int64 `json:"request_send_end_ns,omitempty"`
	ResponseReceiveStartNs *int64 `json:"response_receive_start_ns,omitempty"`
	ResponseReceiveEndNs   *int64 `json:"response_receive_end_ns,omitempty"`
}

// Echo is what the trace shows of a request's identity: whether the
// server's answer echoed the X-Request-ID the client sent.
type Echo string

// Echo outcomes.
const (
	// EchoMatch: the answer echoes exactly the id sent.
	EchoMatch Echo = "match"
	// EchoNoTrace: the record has no trace_data (AIPerf ran without
	// --export-http-trace, or the request failed before it was traced).
	EchoNoTrace Echo = "no_trace"
	// EchoMissing: the answer carries no X-Request-ID header.
	EchoMissing Echo = "missing"
	// EchoDiffers: the answer echoes another id, or the id in the request's
	// own headers is not metadata.x_request_id.
	EchoDiffers Echo = "differs"
)

// ClassifyEcho is the one rule of the echo: id is the record's
// metadata.x_request_id, traced whether it has trace_data, sent and echoed
// the values of every request and response header named X-Request-ID in
// any case. detail says what was wrong ("" for a match).
func ClassifyEcho(id string, traced bool, sent, echoed []string) (Echo, string) {
	if !traced {
		return EchoNoTrace, "the records export has no HTTP trace (trace_data) for this request: AIPerf ran without --export-http-trace, so nothing shows the server answered this id"
	}
	for _, s := range sent {
		if s != id {
			return EchoDiffers, fmt.Sprintf("the request's own %s header is %q, not the record's x_request_id", HeaderRequestID, s)
		}
	}
	if len(echoed) == 0 {
		return EchoMissing, fmt.Sprintf("the server's answer carries no %s header: nothing shows it answered this id", HeaderRequestID)
	}
	for _, e := range echoed {
		if e != id {
			return EchoDiffers, fmt.Sprintf("the server's answer echoes %s %q, not the id sent", HeaderRequestID, e)
		}
	}
	return EchoMatch, ""
}

// IsRequestIDHeader reports whether a header name is X-Request-ID (header
// names are case-insensitive; aiohttp spells this one X-Request-ID, but a
// trace written otherwise may not).
func IsRequestIDHeader(name string) bool { return strings.EqualFold(name, HeaderRequestID) }

// Echo classifies the record's X-Request-ID echo (ClassifyEcho).
func (r *RecordLine) Echo() (Echo, string) {
	if r.TraceData == nil {
		return ClassifyEcho(r.Metadata.XRequestID, false, nil, nil)
	}
	return ClassifyEcho(r.Metadata.XRequestID, true, headerValues(r.TraceData.RequestHeaders), headerValues(r.TraceData.ResponseHeaders))
}

func headerValues(h map[string]string) []string {
	var out []string
	for k, v := range h {
		if IsRequestIDHeader(k) {
			out = append(out, v)
		}
	}
	return out
}

// HTTPSplit is one request's HTTP time split at the trace's timestamps, in
// milliseconds: sending (first byte of the request, a new connection's set
// up included, to its last byte), waiting (to the first byte of the
// answer's body: the server's time, the Task call inside it, plus the
// network) and receiving (to the body read whole). Their sum is the
// exchange; AIPerf's request_latency adds the client's own time before the
// exchange starts (the joined line's client_ms).
type HTTPSplit struct {
	SendingMS, WaitingMS, ReceivingMS float64
}

// Split computes the HTTP split from the four timestamps (start of send,
// end of send, start and end of receive). ok is false when one is missing
// or they are out of order: then nothing is split.
//
// AIPerf's own receiving_ns is not used: it is 0 whenever the body came
// in one chunk, although reading it took time, so sending_ns + waiting_ns
// + receiving_ns falls short of duration_ns. The timestamps add up
// exactly.
func Split(sendStart, sendEnd, recvStart, recvEnd int64) (HTTPSplit, bool) {
	if sendStart <= 0 || sendEnd < sendStart || recvStart < sendEnd || recvEnd < recvStart {
		return HTTPSplit{}, false
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	return HTTPSplit{SendingMS: ms(sendEnd - sendStart), WaitingMS: ms(recvStart - sendEnd), ReceivingMS: ms(recvEnd - recvStart)}, true
}
