package server

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/detect"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/task"
)

// tokenSource names how token counts are obtained.
const tokenSource = "whitespace_words"

// reply is an answer the inference handler is about to write.
type reply struct {
	status    int
	body      []byte
	errorType string
}

func errorReply(status int, typ, format string, args ...any) reply {
	var body errorBody
	body.Error.Type, body.Error.Message = typ, fmt.Sprintf(format, args...)
	b, _ := json.Marshal(body) // a struct of strings always encodes
	return reply{status: status, body: b, errorType: typ}
}

// handleInference serves the family's inference route. Every request that
// reaches it as a POST counts as an inference request: it gets a sequence
// number (for the every-N faults) and a record.
func (s *Server) handleInference(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.URL.Path != s.route {
		writeError(w, http.StatusNotFound, "not_found",
			fmt.Sprintf("route %s is not served by model %s (family %s serves %s)", r.URL.Path, s.cfg.ModelName, s.cfg.Bundle.Family, s.route))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s only accepts POST", r.URL.Path))
		return
	}
	seq := s.seq.Add(1)
	if s.cfg.Faults.Crash && seq > int64(s.cfg.Faults.CrashAfter) {
		s.log.Error("fault_crash", "fault", "crash-after", "request", seq, "exit_code", CrashExitCode)
		s.cfg.Exit(CrashExitCode)
		return
	}

	rec := Record{RequestID: requestIDOf(r), Route: s.route, Model: s.cfg.ModelName}
	rep := s.infer(w, r, seq, &rec)
	defer drainBody(r)

	rec.Status, rec.ErrorType = rep.status, rep.errorType
	rec.HandlerMs = msSince(start)
	s.metrics.observeHandler(rec.HandlerMs)
	if every(s.cfg.Faults.DropRecordEvery, seq) {
		s.log.Warn("record_dropped", "fault", "drop-record-every", "request_id", rec.RequestID)
	} else if err := s.records.write(rec); err != nil {
		s.log.Error("record_failed", "request_id", rec.RequestID, "error", err.Error())
	}
	if rep.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	s.echoFaults(w, seq, rec.RequestID)
	writeBody(w, rep.status, rep.body)
	s.log.Info("request", "request_id", rec.RequestID, "route", rec.Route, "status", rep.status, "handler_ms", rec.HandlerMs)
}

// echoFaults applies no-echo-every and wrong-echo-every to the answer's
// X-Request-ID header (the record keeps the id served).
func (s *Server) echoFaults(w http.ResponseWriter, seq int64, id string) {
	switch f := s.cfg.Faults; {
	case every(f.NoEchoEvery, seq):
		s.log.Warn("fault_no_echo", "fault", "no-echo-every", "request_id", id)
		w.Header().Del("X-Request-ID")
	case every(f.WrongEchoEvery, seq):
		other := newRequestID()
		s.log.Warn("fault_wrong_echo", "fault", "wrong-echo-every", "request_id", id, "echoed", other)
		w.Header().Set("X-Request-ID", other)
	}
}

// infer validates the request, queues it for the worker, waits for the Task
// and builds the reply. It fills in rec as it learns things.
func (s *Server) infer(w http.ResponseWriter, r *http.Request, seq int64, rec *Record) reply {
	if problem, ok := r.Context().Value(keyRequestIDError).(string); ok {
		return errorReply(http.StatusBadRequest, "invalid_request", "%s", problem)
	}
	if s.cfg.APIKey != "" {
		want := "Bearer " + s.cfg.APIKey
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) != 1 {
			return errorReply(http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token")
		}
	}
	if r.Header.Get("X-Request-ID") != "" && !s.claimID(rec.RequestID) {
		dup := rec.RequestID
		rec.RequestID = newRequestID()
		w.Header().Set("X-Request-ID", rec.RequestID)
		return errorReply(http.StatusBadRequest, "invalid_request", "X-Request-ID %q was already used", dup)
	}
	if s.draining.Load() {
		return errorReply(http.StatusServiceUnavailable, "server_draining", "server is shutting down")
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return errorReply(http.StatusBadRequest, "invalid_request", "Content-Type %q is not application/json", ct)
		}
	}
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
		return errorReply(http.StatusRequestEntityTooLarge, "request_too_large", "request body exceeds %d bytes", maxErr.Limit)
	}
	if err != nil {
		return errorReply(http.StatusBadRequest, "invalid_request", "read request body: %v", err)
	}

	j := &job{id: rec.RequestID, seq: seq, payload: payload, done: make(chan struct{})}
	switch err := s.queue.submit(j); {
	case errors.Is(err, errQueueFull):
		return errorReply(http.StatusTooManyRequests, "queue_full", "the queue of %d requests is full", s.cfg.QueueSize)
	case errors.Is(err, errDraining):
		return errorReply(http.StatusServiceUnavailable, "server_draining", "server is shutting down")
	}
	select {
	case <-j.done:
	case <-s.stopped:
		return errorReply(http.StatusServiceUnavailable, "server_draining", "server stopped before the request finished")
	}

	res := j.res
	rec.QueueMs, rec.TaskMs = j.queueMs, res.TaskMs
	rec.ImageBytes, rec.ImageWidth, rec.ImageHeight = res.Image.Bytes, res.Image.Width, res.Image.Height
	if s.route == task.RouteChat {
		rec.WarmupMarker = res.Warmup
		rec.PromptTokens, rec.CompletionTokens, rec.TokenSource = res.PromptTokens, res.CompletionTokens, tokenSource
		if res.Model != "" {
			rec.Model = res.Model
		}
	}
	if reqErr := (*task.RequestError)(nil); errors.As(j.err, &reqErr) {
		return errorReply(http.StatusBadRequest, "invalid_request", "%s", reqErr.Msg)
	}
	if j.err != nil {
		s.log.Error("task_failed", "request_id", rec.RequestID, "error", j.err.Error())
		return errorReply(http.StatusInternalServerError, "internal_error", "task failed")
	}
	if every(s.cfg.Faults.HTTP500Every, seq) {
		s.log.Warn("fault_http_500", "fault", "http-500-every", "request_id", rec.RequestID)
		return errorReply(http.StatusInternalServerError, "internal_error", "injected fault http-500-every")
	}
	answer := res.Answer
	if every(s.cfg.Faults.WrongAnswerEvery, seq) {
		s.log.Warn("fault_wrong_answer", "fault", "wrong-answer-every", "request_id", rec.RequestID)
		if answer, err = corrupt(s.route, answer); err != nil {
			return errorReply(http.StatusInternalServerError, "internal_error", "corrupt answer: %v", err)
		}
	}
	body, err := s.responseBody(rec.RequestID, res, answer)
	if err != nil {
		return errorReply(http.StatusInternalServerError, "internal_error", "encode response: %v", err)
	}
	return reply{status: http.StatusOK, body: body}
}

// claimID records a client-chosen request id and reports false if it was
// already used.
func (s *Server) claimID(id string) bool {
	s.idsMu.Lock()
	defer s.idsMu.Unlock()
	if s.seenIDs[id] {
		return false
	}
	s.seenIDs[id] = true
	return true
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type inferResponse struct {
	Data  json.RawMessage `json:"data"`
	Usage inferUsage      `json:"usage"`
}

type inferUsage struct {
	NumImages int `json:"num_images"`
}

// responseBody wraps the Task's answer bytes, unchanged, in the route's
// response envelope.
func (s *Server) responseBody(id string, res task.Result, answer json.RawMessage) ([]byte, error) {
	if s.route == task.RouteInfer {
		return marshal(inferResponse{Data: answer, Usage: inferUsage{NumImages: 1}})
	}
	return marshal(chatResponse{
		ID:      "chatcmpl-" + id,
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   s.cfg.ModelName,
		Choices: []chatChoice{{
			Index:        0,
			Message:      chatMessage{Role: "assistant", Content: answer},
			FinishReason: res.FinishReason,
		}},
		Usage: chatUsage{
			PromptTokens:     res.PromptTokens,
			CompletionTokens: res.CompletionTokens,
			TotalTokens:      res.PromptTokens + res.CompletionTokens,
		},
	})
}

func marshal(v any) ([]byte, error) { return json.Marshal(v) }

// corrupt changes an answer the way a serialisation bug would: the chat text
// gains a suffix; the first detection box moves right (or a box appears).
func corrupt(route string, answer json.RawMessage) (json.RawMessage, error) {
	if route == task.RouteChat {
		var text string
		if err := json.Unmarshal(answer, &text); err != nil {
			return nil, fmt.Errorf("decode chat answer: %w", err)
		}
		return json.Marshal(text + " (corrupted)")
	}
	var items []task.InferItem
	if err := json.Unmarshal(answer, &items); err != nil {
		return nil, fmt.Errorf("decode infer answer: %w", err)
	}
	if len(items) == 0 {
		return nil, errors.New("infer answer has no data items")
	}
	boxes := items[0].BoundingBoxes
	labels := slices.Sorted(maps.Keys(boxes))
	if len(labels) == 0 || len(boxes[labels[0]]) == 0 {
		if boxes == nil {
			boxes = map[string][]detect.Box{}
			items[0].BoundingBoxes = boxes
		}
		boxes["red_square"] = []detect.Box{{XMin: 0, YMin: 0, XMax: 0.1, YMax: 0.1, Confidence: 0.5}}
	} else {
		b := &boxes[labels[0]][0]
		shift := min(0.05, 1-b.XMax)
		if shift <= 0 {
			shift = -0.05
		}
		b.XMin, b.XMax = detect.Round4(b.XMin+shift), detect.Round4(b.XMax+shift)
	}
	return json.Marshal(items)
}
