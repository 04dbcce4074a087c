package streamjoin

import (
	"errors"
	"math"

	"github.com/trtmc-qual/trtmc-qual/families"
)

var errMissing = errors.New("missing")

// metaFields are the metadata fields the join reads.
type metaFields struct {
	id, conv []byte
	phase    uint8
	startNs  int64
	canceled bool
}

// parseMetadata reads AIPerf's metadata object and applies qual/aiperf's
// required-field checks.
func parseMetadata(b []byte, i int, m *metaFields) (int, error) {
	i, empty, err := objectOpen(b, i)
	if err != nil || empty {
		return i, err
	}
	var phase []byte
	for more := true; more; {
		var key []byte
		if key, i, err = objectKey(b, i); err != nil {
			return 0, err
		}
		switch string(key) {
		case "x_request_id":
			m.id, i, _, err = readString(nil, b, i)
			err = inField("x_request_id", err)
		case "conversation_id":
			m.conv, i, _, err = readString(nil, b, i)
			err = inField("conversation_id", err)
		case "benchmark_phase":
			phase, i, _, err = readString(nil, b, i)
			err = inField("benchmark_phase", err)
		case "request_start_ns":
			m.startNs, i, _, err = readInt64(b, i)
			err = inField("request_start_ns", err)
		case "was_cancelled":
			m.canceled, i, err = readBool(b, i)
			err = inField("was_cancelled", err)
		default:
			i, err = skipValue(b, i)
		}
		if err != nil {
			return 0, err
		}
		if i, more, err = objectNext(b, i); err != nil {
			return 0, err
		}
	}
	switch string(phase) {
	case "warmup":
		m.phase = phaseWarmup
	case "profiling":
		m.phase = phaseMeasured
	}
	return i, nil
}

// check is qual/aiperf's RecordMetadata.check.
func (m *metaFields) check() error {
	switch {
	case len(m.id) == 0:
		return &fieldError{"x_request_id", errMissing}
	case len(m.conv) == 0:
		return &fieldError{"conversation_id", errMissing}
	case m.phase == phaseNone:
		return &fieldError{"benchmark_phase", errors.New("missing or unknown phase")}
	}
	return nil
}

// clientLine is what one profile_export.jsonl line contributes.
type clientLine struct {
	key       reqKey
	conv      []byte
	phase     uint8
	startNs   int64
	latencyMS float64
	failed    bool
	status    int32
}

func parseRecordLine(w *worker, line []byte, out *clientLine) error {
	i, empty, err := objectOpen(line, 0)
	if err != nil {
		return err
	}
	var m metaFields
	hasMetrics := false
	out.latencyMS = math.NaN()
	for more := !empty; more; {
		var key []byte
		if key, i, err = objectKey(line, i); err != nil {
			return err
		}
		switch string(key) {
		case "metadata":
			i, err = parseMetadata(line, i, &m)
			err = inField("metadata", err)
		case "metrics":
			var isnull bool
			if i, isnull = isNull(line, i); !isnull {
				hasMetrics = true
				i, err = parseMetrics(line, i, out)
				err = inField("metrics", err)
			}
		case "error":
			var isnull bool
			if i, isnull = isNull(line, i); !isnull {
				out.failed = true
				i, err = parseErrorCode(line, i, &out.status)
				err = inField("error", err)
			}
		default:
			i, err = skipValue(line, i)
		}
		if err != nil {
			return err
		}
		if i, more, err = objectNext(line, i); err != nil {
			return err
		}
	}
	if err := lineEnd(line, i); err != nil {
		return err
	}
	if err := m.check(); err != nil {
		return inField("metadata", err)
	}
	if !hasMetrics {
		return &fieldError{"metrics", errMissing}
	}
	if m.canceled {
		out.failed = true
	}
	out.key = w.h.key(m.id)
	out.conv, out.phase, out.startNs = m.conv, m.phase, m.startNs
	return nil
}

// parseMetrics reads metrics.request_latency.value the way
// aiperf.MetricValue.Float does: a number, else absent.
func parseMetrics(b []byte, i int, out *clientLine) (int, error) {
	i, empty, err := objectOpen(b, i)
	if err != nil || empty {
		return i, err
	}
	for more := true; more; {
		var key []byte
		if key, i, err = objectKey(b, i); err != nil {
			return 0, err
		}
		if string(key) == "request_latency" {
			i, err = parseMetricValue(b, i, &out.latencyMS)
		} else {
			i, err = skipValue(b, i)
		}
		if err != nil {
			return 0, err
		}
		if i, more, err = objectNext(b, i); err != nil {
			return 0, err
		}
	}
	return i, nil
}

func parseMetricValue(b []byte, i int, v *float64) (int, error) {
	i, empty, err := objectOpen(b, i)
	if err != nil || empty {
		return i, err
	}
	for more := true; more; {
		var key []byte
		if key, i, err = objectKey(b, i); err != nil {
			return 0, err
		}
		j := skipWS(b, i)
		if string(key) == "value" && j < len(b) && (b[j] == '-' || (b[j] >= '0' && b[j] <= '9')) {
			*v, i, _, err = readFloat(b, j)
		} else {
			i, err = skipValue(b, i)
		}
		if err != nil {
			return 0, err
		}
		if i, more, err = objectNext(b, i); err != nil {
			return 0, err
		}
	}
	return i, nil
}

// parseErrorCode reads an AIPerf error object; its code becomes the HTTP
// status when it is one (qual/aiperf: 100..599).
func parseErrorCode(b []byte, i int, status *int32) (int, error) {
	i, empty, err := objectOpen(b, i)
	if err != nil || empty {
		return i, err
	}
	for more := true; more; {
		var key []byte
		if key, i, err = objectKey(b, i); err != nil {
			return 0, err
		}
		if string(key) == "code" {
			var code int64
			var isnull bool
			code, i, isnull, err = readInt64(b, i)
			if !isnull && code >= 100 && code <= 599 {
				*status = int32(code)
			}
			err = inField("code", err)
		} else {
			i, err = skipValue(b, i)
		}
		if err != nil {
			return 0, err
		}
		if i, more, err = objectNext(b, i); err != nil {
			return 0, err
		}
	}
	return i, nil
}

// rawLine is what one profile_export_raw.jsonl line contributes.
type rawLine struct {
	key       reqKey
	status    int32
	hasStatus bool
	ans       answerInfo
}

// answerInfo is an extracted answer as the index keeps it.
type answerInfo struct {
	outcome uint8 // ansOK, ansBad, ansMeaningless
	hash    uint64
	tokens  uint32
	boxes   uint32
	// canon is the canonical answer, kept only until the line is merged
	// (for a comparator that is not byte equality).
	canon []byte
}

func parseRawLine(w *worker, line []byte, out *rawLine) error {
	i, empty, err := objectOpen(line, 0)
	if err != nil {
		return err
	}
	var m metaFields
	hasError := false
	w.body = w.body[:0]
	for more := !empty; more; {
		var key []byte
		if key, i, err = objectKey(line, i); err != nil {
			return err
		}
		switch string(key) {
		case "metadata":
			i, err = parseMetadata(line, i, &m)
			err = inField("metadata", err)
		case "status":
			var v int64
			var isnull bool
			v, i, isnull, err = readInt64(line, i)
			out.status, out.hasStatus = int32(v), !isnull
			err = inField("status", err)
		case "error":
			var isnull bool
			if i, isnull = isNull(line, i); !isnull {
				hasError = true
				i, err = skipValue(line, i)
			}
		case "responses":
			i, err = w.parseResponses(line, i)
			err = inField("responses", err)
		default: // payload (base64 images), headers, timings
			i, err = skipValue(line, i)
		}
		if err != nil {
			return err
		}
		if i, more, err = objectNext(line, i); err != nil {
			return err
		}
	}
	if err := lineEnd(line, i); err != nil {
		return err
	}
	if err := m.check(); err != nil {
		return inField("metadata", err)
	}
	if !out.hasStatus && !hasError {
		return &fieldError{"status", errors.New("missing on a record without error")}
	}
	out.key = w.h.key(m.id)
	out.ans = w.httpAnswer(w.body)
	return nil
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
	i, empty, err := objectOpen(b, i)
	if err != nil || empty {
		return i, err
	}
	textAt, packetsAt := -1, -1
	for more := true; more; {
		var key []byte
		if key, i, err = objectKey(b, i); err != nil {
			return 0, err
		}
		switch string(key) {
		case "text":
			if j, isnull := isNull(b, i); isnull {
				textAt = -1
				i = j
			} else {
				textAt = skipWS(b, i)
				i, err = skipValue(b, i)
			}
		case "packets":
			packetsAt = skipWS(b, i)
			i, err = skipValue(b, i)
		default:
			i, err = skipValue(b, i)
		}
		if err != nil {
			return 0, err
		}
		if i, more, err = objectNext(b, i); err != nil {
			return 0, err
		}
	}
	switch {
	case textAt >= 0:
		if w.body, _, _, err = appendString(w.body, b, textAt); err != nil {
			return 0, inField("text", err)
		}
	case packetsAt >= 0:
		if err := w.appendPackets(b, packetsAt); err != nil {
			return 0, inField("packets", err)
		}
	}
	return i, nil
}

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
	i, empty, err := objectOpen(b, i)
	if err != nil {
		return 0, err
	}
	nameAt, valueAt := -1, -1
	for more := !empty; more; {
		var key []byte
		if key, i, err = objectKey(b, i); err != nil {
			return 0, err
		}
		switch string(key) {
		case "name":
			nameAt = skipWS(b, i)
		case "value":
			valueAt = skipWS(b, i)
		}
		if i, err = skipValue(b, i); err != nil {
			return 0, err
		}
		if i, more, err = objectNext(b, i); err != nil {
			return 0, err
		}
	}
	if nameAt >= 0 {
		if w.body, _, _, err = appendString(w.body, b, nameAt); err != nil {
			return 0, inField("name", err)
		}
	}
	w.body = append(w.body, ": "...)
	if valueAt >= 0 {
		if w.body, _, _, err = appendString(w.body, b, valueAt); err != nil {
			return 0, inField("value", err)
		}
	}
	w.body = append(w.body, '\n')
	return i, nil
}

// serverLine is what one server record contributes.
type serverLine struct {
	key    reqKey
	taskMS float64
	w, h   int32
}

func parseServerLine(w *worker, line []byte, out *serverLine) error {
	i, empty, err := objectOpen(line, 0)
	if err != nil {
		return err
	}
	var id []byte
	out.taskMS = math.NaN()
	for more := !empty; more; {
		var key []byte
		if key, i, err = objectKey(line, i); err != nil {
			return err
		}
		switch string(key) {
		case "request_id":
			id, i, _, err = readString(nil, line, i)
			err = inField("request_id", err)
		case "task_ms":
			var v float64
			var isnull bool
			v, i, isnull, err = readFloat(line, i)
			if !isnull {
				out.taskMS = v
			}
			err = inField("task_ms", err)
		case "image_width":
			var v int64
			v, i, _, err = readInt64(line, i)
			out.w = int32(v)
			err = inField("image_width", err)
		case "image_height":
			var v int64
			v, i, _, err = readInt64(line, i)
			out.h = int32(v)
			err = inField("image_height", err)
		default:
			i, err = skipValue(line, i)
		}
		if err != nil {
			return err
		}
		if i, more, err = objectNext(line, i); err != nil {
			return err
		}
	}
	if err := lineEnd(line, i); err != nil {
		return err
	}
	out.key = w.h.key(id)
	return nil
}

// nativeLine is what one native answer line contributes.
type nativeLine struct {
	key    reqKey
	failed bool
	ans    answerInfo
}

// nativeFields reads request_id, the raw answer value and error.
func nativeFields(w *worker, line []byte) (id, answer []byte, failed bool, err error) {
	i, empty, err := objectOpen(line, 0)
	if err != nil {
		return nil, nil, false, err
	}
	for more := !empty; more; {
		var key []byte
		if key, i, err = objectKey(line, i); err != nil {
			return nil, nil, false, err
		}
		switch string(key) {
		case "request_id":
			id, i, _, err = readString(nil, line, i)
			err = inField("request_id", err)
		case "answer":
			start := skipWS(line, i)
			i, err = skipValue(line, i)
			answer = line[start:i]
		case "error":
			var s []byte
			s, i, _, err = readString(nil, line, i)
			failed = len(s) > 0
			err = inField("error", err)
		default:
			i, err = skipValue(line, i)
		}
		if err != nil {
			return nil, nil, false, err
		}
		if i, more, err = objectNext(line, i); err != nil {
			return nil, nil, false, err
		}
	}
	if err := lineEnd(line, i); err != nil {
		return nil, nil, false, err
	}
	return id, answer, failed, nil
}

func parseNativeLine(w *worker, line []byte, out *nativeLine) error {
	id, answer, failed, err := nativeFields(w, line)
	if err != nil {
		return err
	}
	out.key = w.h.key(id)
	out.failed = failed
	if !failed {
		out.ans = w.nativeAnswer(answer)
	}
	return nil
}

// httpAnswer extracts, judges and hashes an HTTP answer with the family's
// own extractor, memoised by the exact body bytes.
func (w *worker) httpAnswer(body []byte) answerInfo {
	if w.memo != nil {
		k := w.h.sum128(body)
		if v, ok := w.memo.http[k]; ok {
			return v
		}
		v := w.extractHTTP(body)
		w.memo.put(w.memo.http, k, v)
		return v
	}
	return w.extractHTTP(body)
}

func (w *worker) extractHTTP(body []byte) answerInfo {
	var in []byte
	if len(body) > 0 {
		// A copy: the extractor may keep it, and body is reused. An empty
		// body stays nil, as aiperf.RawLine.Body returns it.
		in = append([]byte(nil), body...)
	}
	a, err := w.ex.FromHTTP(in)
	if err != nil {
		return answerInfo{outcome: ansBad}
	}
	if why := w.ex.Meaningful(a, w.fam); why != "" {
		return answerInfo{outcome: ansMeaningless}
	}
	return w.info(a)
}

func (w *worker) nativeAnswer(answer []byte) answerInfo {
	if w.memo != nil {
		k := w.h.sum128(answer)
		if v, ok := w.memo.native[k]; ok {
			return v
		}
		v := w.extractNative(answer)
		w.memo.put(w.memo.native, k, v)
		return v
	}
	return w.extractNative(answer)
}

func (w *worker) extractNative(answer []byte) answerInfo {
	var in []byte
	if answer != nil {
		in = append([]byte(nil), answer...) // the extractor may keep it
	}
	a, err := w.ex.FromNative(in)
	if err != nil {
		return answerInfo{outcome: ansBad}
	}
	return w.info(a)
}

func (w *worker) info(a families.Answer) answerInfo {
	return answerInfo{outcome: ansOK, hash: w.h.sum64(a.Canonical), tokens: uint32(a.Tokens), boxes: uint32(a.Boxes), canon: a.Canonical}
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
