package main

// POST /v1/chat/completions (app.py chat_completions and execute,
// idx@a9ed5f69; schemas.py idx@334c75f6; protocol.py idx@a9ed5f69) and the
// seeds' POST /v1/infer.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

var chatKeys = map[string]bool{"model": true, "messages": true, "max_tokens": true, "max_completion_tokens": true,
	"temperature": true, "top_p": true, "min_p": true, "top_k": true, "seed": true, "enable_thinking": true,
	"n": true, "stream": true, "stream_options": true, "stop": true}

func invalid(param any, format string, args ...any) *apiError {
	return &apiError{status: 400, code: "invalid_request", msg: fmt.Sprintf(format, args...), param: param}
}

type chatRequest struct {
	Model               *string           `json:"model"`
	Messages            []json.RawMessage `json:"messages"`
	MaxTokens           *int64            `json:"max_tokens"`
	MaxCompletionTokens *int64            `json:"max_completion_tokens"`
	Temperature         *float64          `json:"temperature"`
	TopP                *float64          `json:"top_p"`
	MinP                *float64          `json:"min_p"`
	TopK                *int64            `json:"top_k"`
	Seed                *int64            `json:"seed"`
	EnableThinking      *bool             `json:"enable_thinking"`
	N                   *int64            `json:"n"`
	Stream              *bool             `json:"stream"`
	StreamOptions       json.RawMessage   `json:"stream_options"`
	Stop                json.RawMessage   `json:"stop"`
}

// validate is the pydantic model's checks (400 invalid_request, the
// failing field as param).
func (q *chatRequest) validate(raw map[string]json.RawMessage) *apiError {
	for k := range raw {
		if !chatKeys[k] {
			return invalid(k, "Extra inputs are not permitted")
		}
	}
	switch {
	case q.Model == nil:
		return invalid("model", "Field required")
	case q.Messages == nil:
		return invalid("messages", "Field required")
	case len(q.Messages) < 1:
		return invalid("messages", "List should have at least 1 item after validation, not 0")
	case len(q.Messages) > 2:
		return invalid("messages", "List should have at most 2 items after validation, not %d", len(q.Messages))
	case q.MaxTokens != nil && *q.MaxTokens < 1:
		return invalid("max_tokens", "Input should be greater than or equal to 1")
	case q.MaxCompletionTokens != nil && *q.MaxCompletionTokens < 1:
		return invalid("max_completion_tokens", "Input should be greater than or equal to 1")
	case q.Temperature != nil && (*q.Temperature < 0 || math.IsInf(*q.Temperature, 0) || math.IsNaN(*q.Temperature)):
		return invalid("temperature", "Input should be greater than or equal to 0")
	case q.TopP != nil && (*q.TopP < 0 || *q.TopP > 1):
		return invalid("top_p", "Input should be less than or equal to 1")
	case q.MinP != nil && (*q.MinP < 0 || *q.MinP > 1):
		return invalid("min_p", "Input should be less than or equal to 1")
	case q.TopK != nil && *q.TopK < 0:
		return invalid("top_k", "Input should be greater than or equal to 0")
	case q.Seed != nil && *q.Seed < 0:
		return invalid("seed", "Input should be greater than or equal to 0")
	case q.N != nil && *q.N < 1:
		return invalid("n", "Input should be greater than or equal to 1")
	}
	if len(q.StreamOptions) > 0 && string(q.StreamOptions) != "null" {
		var so map[string]json.RawMessage
		if json.Unmarshal(q.StreamOptions, &so) != nil {
			return invalid("stream_options", "Input should be a valid dictionary or instance of StreamOptions")
		}
		for k, v := range so {
			var b bool
			if k != "include_usage" || json.Unmarshal(v, &b) != nil {
				return invalid(k, "Extra inputs are not permitted")
			}
		}
	}
	return nil
}

func (q *chatRequest) stream() bool { return q.Stream != nil && *q.Stream }

func (q *chatRequest) includeUsage() bool {
	var so struct {
		IncludeUsage bool `json:"include_usage"`
	}
	return len(q.StreamOptions) > 0 && json.Unmarshal(q.StreamOptions, &so) == nil && so.IncludeUsage
}

// generationConfig is protocol.py generation_config.
func (q *chatRequest) generationConfig(maxTokens int64) map[string]any {
	cfg := map[string]any{"max_new_tokens": maxTokens}
	for k, v := range map[string]any{"temperature": q.Temperature, "top_p": q.TopP, "min_p": q.MinP, "top_k": q.TopK,
		"seed": q.Seed, "enable_thinking": q.EnableThinking} {
		switch p := v.(type) {
		case *float64:
			if p != nil {
				cfg[k] = *p
			}
		case *int64:
			if p != nil {
				cfg[k] = *p
			}
		case *bool:
			if p != nil {
				cfg[k] = *p
			}
		}
	}
	return cfg
}

const routeChat = "/v1/chat/completions"

func (s *server) chat(body []byte, id string, rec map[string]any) reply {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return errReply(invalid(nil, "JSON decode error"))
	}
	var q chatRequest
	if err := json.Unmarshal(body, &q); err != nil {
		return errReply(invalid(nil, "%v", err))
	}
	if e := q.validate(raw); e != nil {
		return errReply(e)
	}
	prompt, system, img, aerr := chatPrompt(q.Messages)
	if aerr != nil {
		s.metrics.reject(routeChat, 400)
		return errReply(aerr)
	}
	if q.MaxTokens != nil && q.MaxCompletionTokens != nil {
		s.metrics.reject(routeChat, 400)
		return errReply(invalid(nil, "max_tokens and max_completion_tokens are mutually exclusive"))
	}
	return s.execute(&q, body, prompt, system, img, id, rec)
}

// execute is app.py execute for the chat route, in its order of checks.
func (s *server) execute(q *chatRequest, body []byte, prompt, system string, img imageData, id string, rec map[string]any) reply {
	rec["model"] = *q.Model
	promptBytes := int64(len(prompt) + len(system))
	if os.Getenv("FAKE_TRTMC_SERVER_PROMPT_IMAGE") == "count" {
		promptBytes += int64(len(img.url))
	}
	requested := q.MaxCompletionTokens
	if requested == nil {
		requested = q.MaxTokens
	}
	reject := func(e *apiError) reply {
		s.metrics.reject(routeChat, e.status)
		return errReply(e)
	}
	switch {
	case q.N != nil && *q.N != 1:
		return reject(&apiError{status: 400, code: "unsupported_parameter", msg: "n must be 1", param: "n"})
	case len(q.StreamOptions) > 0 && string(q.StreamOptions) != "null" && !q.stream():
		return reject(invalid("stream_options", "stream_options requires stream=true"))
	case len(q.Stop) > 0 && string(q.Stop) != "null":
		return reject(&apiError{status: 400, code: "unsupported_parameter", msg: "stop is not supported", param: "stop"})
	case promptBytes > s.c.maxPrompt:
		return reject(&apiError{status: 413, code: "content_too_large", msg: "prompt exceeds the server limit", param: "prompt"})
	case *q.Model != s.c.modelName:
		return reject(&apiError{status: 404, code: "model_not_found", msg: fmt.Sprintf("model '%s' is not registered", *q.Model), param: "model"})
	}
	maxTokens := min(s.g.replicas[0].defaultN, s.c.maxNewTokens)
	if requested != nil {
		maxTokens = *requested
	}
	if maxTokens > s.c.maxNewTokens {
		return reject(&apiError{status: 400, code: "max_tokens_exceeded", msg: fmt.Sprintf("requested generation exceeds %d tokens", s.c.maxNewTokens), param: "max_tokens"})
	}
	queued := time.Now()
	w, aerr := s.g.acquire()
	if aerr != nil {
		s.noteRefused(aerr)
		return reject(aerr)
	}
	s.intruderHolds(id)
	queueS := time.Since(queued).Seconds()
	cfg := q.generationConfig(maxTokens)
	cfg["use_chat_template"] = true
	rec["replica"] = w.name
	rec["admission_ms"] = queueS * 1000
	rec["generation_config"] = cfg
	rec["has_system_prompt"] = system != ""
	wcfg := map[string]any{}
	for k, v := range cfg {
		wcfg[k] = v
	}
	if system != "" {
		wcfg["system_prompt"] = system
	}
	s.metrics.begin()
	started := time.Now()
	res, rep := s.generate(w, prompt, wcfg, img)
	s.g.release(w) // the lease ends with the worker call, before the answer is sent
	inferenceS := time.Since(started).Seconds()
	if rep != nil {
		s.metrics.finish(routeChat, rep.status, queueS, inferenceS, nil)
		return errReply(rep)
	}
	timings := res.record(rec, inferenceS, q.stream())
	s.metrics.finish(routeChat, 200, queueS, inferenceS, timings)
	s.served.Add(1)
	s.maybeIntrude(routeChat, body)
	model := *q.Model
	if m := os.Getenv("FAKE_TRTMC_SERVER_MODEL"); m != "" {
		model = m
	}
	if q.stream() {
		return bufferedSSE(model, *res.Text, *res.CompletionTokens, q.includeUsage())
	}
	return jsonReply(200, map[string]any{
		"id": "chatcmpl-" + strings.TrimPrefix(genID(), "req-"), "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": *res.Text},
			"logprobs": nil, "finish_reason": nil}},
		"usage": map[string]any{"prompt_tokens": 0, "completion_tokens": *res.CompletionTokens, "total_tokens": *res.CompletionTokens},
	})
}

type generateResult struct {
	Text             *string  `json:"text"`
	CompletionTokens *int64   `json:"completion_tokens"`
	SetupMS          *float64 `json:"setup_ms"`
	PrefillMS        *float64 `json:"prefill_ms"`
	DecodeMS         *float64 `json:"decode_ms"`
	ModelCallMS      *float64 `json:"model_call_ms"`
	TimingScope      *string  `json:"timing_scope"`
}

// record is execute's context.update after the worker answered: the
// timings (extract_result: setup, prefill, decode, 0 when absent),
// model_call_ms, worker_roundtrip_ms, the token count and its source, the
// timing scope and the streaming mode ("buffered": this worker does not
// stream, registry.supports_streaming).
func (res generateResult) record(rec map[string]any, inferenceS float64, stream bool) map[string]float64 {
	timings := map[string]float64{}
	for k, v := range map[string]*float64{"setup_ms": res.SetupMS, "prefill_ms": res.PrefillMS, "decode_ms": res.DecodeMS} {
		timings[k] = 0
		if v != nil {
			timings[k] = *v
		}
		rec[k] = timings[k]
	}
	if res.ModelCallMS != nil {
		rec["model_call_ms"] = *res.ModelCallMS
	}
	rec["worker_roundtrip_ms"] = inferenceS * 1000
	rec["completion_tokens"] = *res.CompletionTokens
	rec["completion_token_source"] = "native_task"
	rec["timing_scope"] = "unavailable"
	if res.TimingScope != nil {
		rec["timing_scope"] = *res.TimingScope
	}
	rec["streaming"] = "none"
	if stream {
		rec["streaming"] = "buffered"
	}
	return timings
}

// generate is the worker call and extract_result, with execute's mapping
// of each failure to its status and code.
func (s *server) generate(w *worker, prompt string, cfg map[string]any, img imageData) (generateResult, *apiError) {
	var res generateResult
	unavailable := "The model worker is unavailable" // protocol.py public_worker_error
	path, err := writeTemp(img)
	if err != nil {
		return res, &apiError{status: 503, code: "worker_crashed", msg: unavailable}
	}
	defer os.Remove(path)
	rep, err := w.call(map[string]any{"op": "generate", "prompt": prompt, "config": cfg, "image_path": path})
	switch {
	case errors.Is(err, errTimeout):
		return res, &apiError{status: 504, code: "worker_timeout", msg: unavailable}
	case errors.Is(err, errProtocol):
		return res, &apiError{status: 502, code: "worker_protocol_error", msg: unavailable}
	case err != nil:
		return res, &apiError{status: 503, code: "worker_crashed", msg: unavailable}
	case !rep.OK && rep.Error.Type == "invalid_request_error":
		// execute: the type alone makes it a 400; public_worker_error
		// passes on a non-empty message, else the generic one.
		msg := rep.Error.Message
		if msg == "" {
			msg = unavailable
		}
		return res, &apiError{status: 400, code: "worker_operation_failed", msg: msg}
	case !rep.OK:
		return res, &apiError{status: 502, code: "worker_operation_failed", msg: unavailable}
	}
	if json.Unmarshal(rep.Result, &res) != nil || res.Text == nil || res.CompletionTokens == nil || *res.CompletionTokens < 0 {
		w.dead.Store(true) // _worker_request retires the replica on a protocol error
		return res, &apiError{status: 502, code: "worker_protocol_error", msg: unavailable}
	}
	// extract_result (protocol.py idx@a9ed5f69) holds model_call_ms, when
	// the worker sends it, to the same domain as the three timings.
	for _, v := range []*float64{res.SetupMS, res.PrefillMS, res.DecodeMS, res.ModelCallMS} {
		if v != nil && *v < 0 {
			w.dead.Store(true)
			return res, &apiError{status: 502, code: "worker_protocol_error", msg: unavailable}
		}
	}
	return res, nil
}

// bufferedSSE is _streaming_completion_response: the whole text in one
// delta, a terminal chunk, the usage chunk when asked, [DONE].
func bufferedSSE(model, text string, tokens int64, includeUsage bool) reply {
	id, created := "chatcmpl-"+strings.TrimPrefix(genID(), "req-"), time.Now().Unix()
	chunk := func(choices []any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": choices}
	}
	var b bytes.Buffer
	event := func(v any) {
		d, _ := json.Marshal(v)
		b.WriteString("data: " + string(d) + "\n\n")
	}
	event(chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": text}, "logprobs": nil, "finish_reason": nil}}))
	event(chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "logprobs": nil, "finish_reason": nil}}))
	if includeUsage {
		u := chunk([]any{})
		u["usage"] = map[string]any{"prompt_tokens": 0, "completion_tokens": tokens, "total_tokens": tokens}
		event(u)
	}
	b.WriteString("data: [DONE]\n\n")
	return reply{status: 200, body: b.Bytes(), ctype: "text/event-stream; charset=utf-8",
		headers: map[string]string{"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "X-TRTMC-Streaming": "buffered"}}
}

type imageData struct {
	mime, url string
	data      []byte
	w, h      int
}

type part struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// content is _message_text: a string, or text parts joined; plus (the
// seeds) one image_url data URL in the user message.
func content(m message, allowImage bool) (string, *imageData, *apiError) {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, nil, nil
	}
	var parts []json.RawMessage
	if json.Unmarshal(m.Content, &parts) != nil {
		return "", nil, invalid("content", "Input should be a valid string")
	}
	var text strings.Builder
	var im *imageData
	for _, pr := range parts {
		var p part
		dec := json.NewDecoder(bytes.NewReader(pr))
		dec.DisallowUnknownFields()
		if dec.Decode(&p) != nil {
			return "", nil, invalid("content", "Extra inputs are not permitted")
		}
		switch {
		case p.Type == "text" && p.Text != nil:
			text.WriteString(*p.Text)
		case p.Type == "image_url" && allowImage && im == nil:
			var u struct {
				URL string `json:"url"`
			}
			if json.Unmarshal(p.ImageURL, &u) != nil {
				return "", nil, invalid("image_url", "image_url must be {\"url\": ...}")
			}
			d, err := decodeDataURL(u.URL)
			if err != nil {
				return "", nil, invalid("image_url", "%v", err)
			}
			im = &d
		default:
			return "", nil, invalid("type", "Input should be 'text'")
		}
	}
	return text.String(), im, nil
}

// chatPrompt is protocol.py chat_prompt: one user message, optionally
// after one system message.
func chatPrompt(raw []json.RawMessage) (prompt, system string, img imageData, aerr *apiError) {
	msgs := make([]message, len(raw))
	for i, r := range raw {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		if dec.Decode(&msgs[i]) != nil {
			return "", "", imageData{}, invalid("messages", "Extra inputs are not permitted")
		}
	}
	user := msgs[len(msgs)-1]
	if user.Role != "user" || (len(msgs) == 2 && msgs[0].Role != "system") {
		return "", "", imageData{}, invalid("messages", "messages must be one user message with an optional preceding system message")
	}
	if len(msgs) == 2 {
		var e *apiError
		if system, _, e = content(msgs[0], false); e != nil {
			return "", "", imageData{}, e
		}
	}
	p, im, e := content(user, true)
	if e != nil {
		return "", "", imageData{}, e
	}
	if im == nil {
		return "", "", imageData{}, invalid("messages", "the user message needs one image")
	}
	return p, system, *im, nil
}

func decodeDataURL(u string) (imageData, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return imageData{}, errors.New("only data URLs are accepted")
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok || !strings.HasSuffix(meta, ";base64") {
		return imageData{}, errors.New("want a base64 data URL")
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return imageData{}, errors.New("invalid base64")
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return imageData{}, errors.New("not a decodable image")
	}
	return imageData{mime: "image/" + format, url: u, data: data, w: cfg.Width, h: cfg.Height}, nil
}

func writeTemp(im imageData) (string, error) {
	f, err := os.CreateTemp("", "fake-trtmc-server-*."+strings.TrimPrefix(im.mime, "image/"))
	if err != nil {
		return "", err
	}
	if _, err := f.Write(im.data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), f.Close()
}

// infer is the seeds' NIM /v1/infer adapter over the worker's detect op
// (no record: the public records' route check).
func (s *server) infer(body []byte) reply {
	var req struct {
		Input []struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"input"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if dec.Decode(&req) != nil || len(req.Input) != 1 || req.Input[0].Type != "image_url" {
		return errReply(invalid("input", "one image_url input per request"))
	}
	im, err := decodeDataURL(req.Input[0].URL)
	if err != nil {
		return errReply(invalid("input", "%v", err))
	}
	w, aerr := s.g.acquire()
	if aerr != nil {
		return errReply(aerr)
	}
	defer s.g.release(w)
	path, err := writeTemp(im)
	if err != nil {
		return errReply(&apiError{status: 503, code: "worker_crashed", msg: "The model worker is unavailable"})
	}
	defer os.Remove(path)
	rep, err := w.call(map[string]any{"op": "detect", "image_path": path, "config": map[string]any{}})
	if err != nil || !rep.OK {
		return errReply(&apiError{status: 502, code: "worker_operation_failed", msg: "The model worker is unavailable"})
	}
	var d struct {
		Scores  []float64 `json:"scores"`
		Classes []float64 `json:"classes"`
		Boxes   []float64 `json:"boxes"`
	}
	if json.Unmarshal(rep.Result, &d) != nil || len(d.Classes) != len(d.Scores) || len(d.Boxes) != 4*len(d.Scores) {
		return errReply(&apiError{status: 502, code: "worker_protocol_error", msg: "The model worker is unavailable"})
	}
	clamp := func(v float64) float64 { return math.Min(1, math.Max(0, v)) }
	boxes := map[string][]map[string]float64{}
	for i := range d.Scores {
		label := strconv.Itoa(int(d.Classes[i]))
		boxes[label] = append(boxes[label], map[string]float64{
			"x_min": clamp(d.Boxes[4*i] / float64(im.w)), "y_min": clamp(d.Boxes[4*i+1] / float64(im.h)),
			"x_max": clamp(d.Boxes[4*i+2] / float64(im.w)), "y_max": clamp(d.Boxes[4*i+3] / float64(im.h)),
			"confidence": d.Scores[i]})
	}
	return jsonReply(200, map[string]any{"data": []any{map[string]any{"index": 0, "bounding_boxes": boxes}},
		"usage": map[string]any{"num_images": 1}})
}
