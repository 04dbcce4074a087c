// Package task is the reference Task: the one function that turns a request
// payload into an answer. The HTTP server and the native runner both call it,
// so the same payload gives the same answer bytes through either path.
package task

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/detect"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/imaging"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/vlm"
)

// Routes of the reference families.
const (
	RouteChat  = "/v1/chat/completions"
	RouteInfer = "/v1/infer"
)

// RouteFor returns the inference route of a family.
func RouteFor(family string) string {
	if family == bundle.FamilyVLM {
		return RouteChat
	}
	return RouteInfer
}

// WarmupMarker is the system message content of AIPerf's chat warmup requests.
const WarmupMarker = "warmup"

// ImageInfo describes the image of a request.
type ImageInfo struct {
	MIME   string
	Bytes  int
	Width  int
	Height int
}

// Result is the outcome of one Task call.
type Result struct {
	// Answer is what the HTTP route puts in its answer: the chat message text
	// as a JSON string, or the data array of /v1/infer.
	Answer json.RawMessage
	// TaskMs is the wall time of the Task call alone (image decoding,
	// perception and answering), without payload parsing.
	TaskMs float64
	Image  ImageInfo

	// Chat only.
	Text             string
	FinishReason     string // "stop" or "length"
	PromptTokens     int
	CompletionTokens int
	Model            string
	Warmup           bool
}

// InferItem is one element of the /v1/infer data array.
type InferItem struct {
	Index         int                     `json:"index"`
	BoundingBoxes map[string][]detect.Box `json:"bounding_boxes"`
}

// Options change how the Task runs, not what it answers.
type Options struct {
	// ExtraDelay is added to every Task call (the slow-ms fault).
	ExtraDelay time.Duration
}

// Task is a loaded reference model.
type Task struct {
	bundle   *bundle.Bundle
	detector *detect.Detector
	opts     Options
}

// New loads the Task of a bundle.
func New(b *bundle.Bundle, opts Options) *Task {
	return &Task{bundle: b, detector: detect.New(b), opts: opts}
}

// Route returns the route the Task serves.
func (t *Task) Route() string { return RouteFor(t.bundle.Family) }

// Bundle returns the bundle the Task was loaded from.
func (t *Task) Bundle() *bundle.Bundle { return t.bundle }

// RouteError is a request for a route the bundle's family does not serve.
type RouteError struct {
	Route, Family string
}

func (e *RouteError) Error() string {
	return fmt.Sprintf("route %q is not served by family %s (it serves %s)", e.Route, e.Family, RouteFor(e.Family))
}

// Answer runs the Task on the exact JSON body posted to route. A payload the
// Task rejects gives a *RequestError; the Result then holds what was known.
func (t *Task) Answer(route string, payload []byte) (Result, error) {
	if route != t.Route() {
		return Result{}, &RouteError{Route: route, Family: t.bundle.Family}
	}
	if route == RouteChat {
		return t.chat(payload)
	}
	return t.infer(payload)
}

func (t *Task) chat(payload []byte) (Result, error) {
	req, err := parseChat(payload)
	if err != nil {
		return Result{}, err
	}
	res := Result{Model: req.model, Warmup: req.warmup, PromptTokens: req.promptTokens}
	start := time.Now()
	img, err := decodeImage(req.imageURL, "image_url")
	if err != nil {
		return res, err
	}
	res.Image = infoOf(img)
	dets := t.detector.Detect(img)
	full := vlm.Answer(req.question, vlm.FactsFromDetections(img.Width, img.Height, dets))
	text, cut := vlm.Truncate(full, req.maxTokens)
	t.delay()
	res.TaskMs = msSince(start)

	res.Text = text
	res.CompletionTokens = vlm.CountTokens(text)
	res.FinishReason = "stop"
	if cut {
		res.FinishReason = "length"
	}
	res.Answer, err = json.Marshal(text)
	if err != nil {
		return res, fmt.Errorf("encode answer: %w", err)
	}
	return res, nil
}

func (t *Task) infer(payload []byte) (Result, error) {
	url, err := parseInfer(payload)
	if err != nil {
		return Result{}, err
	}
	var res Result
	start := time.Now()
	img, err := decodeImage(url, "input[0]")
	if err != nil {
		return res, err
	}
	res.Image = infoOf(img)
	dets := t.detector.Detect(img)
	data := []InferItem{{Index: 0, BoundingBoxes: detect.Boxes(dets, img.Width, img.Height)}}
	t.delay()
	res.TaskMs = msSince(start)
	res.Answer, err = json.Marshal(data)
	if err != nil {
		return res, fmt.Errorf("encode answer: %w", err)
	}
	return res, nil
}

func (t *Task) delay() {
	if t.opts.ExtraDelay > 0 {
		time.Sleep(t.opts.ExtraDelay)
	}
}

func decodeImage(url, where string) (*imaging.Image, error) {
	mime, data, err := imaging.ParseDataURL(url)
	if err != nil {
		return nil, &RequestError{Msg: where + ": " + err.Error()}
	}
	img, err := imaging.Decode(mime, data)
	if err != nil {
		return nil, &RequestError{Msg: where + ": " + err.Error()}
	}
	return img, nil
}

func infoOf(img *imaging.Image) ImageInfo {
	return ImageInfo{MIME: img.MIME, Bytes: img.EncodedBytes, Width: img.Width, Height: img.Height}
}

func msSince(start time.Time) float64 {
	return math.Round(float64(time.Since(start).Microseconds())) / 1e3
}

// chatRequest is a validated chat completion request.
type chatRequest struct {
	model        string
	question     string
	imageURL     string
	maxTokens    int
	warmup       bool
	promptTokens int
}

// parseChat validates a chat completion body strictly: one user message with
// one text part and one image_url part, optionally preceded by one system
// message; unknown fields and unsupported options are errors.
func parseChat(payload []byte) (chatRequest, error) {
	var req chatRequest
	body, err := decodeObject(payload, "", "messages", "model", "stream", "max_tokens",
		"max_completion_tokens", "temperature", "seed")
	if err != nil {
		return req, err
	}
	if req.model, err = body.str("", "model"); err != nil {
		return req, err
	}
	if body.has("stream") {
		stream, err := body.boolean("", "stream")
		if err != nil {
			return req, err
		}
		if stream {
			return req, reqErr("", "stream=true is not supported, send stream=false")
		}
	}
	if body.has("max_tokens") && body.has("max_completion_tokens") {
		return req, reqErr("", "set max_tokens or max_completion_tokens, not both")
	}
	for _, key := range []string{"max_tokens", "max_completion_tokens"} {
		if !body.has(key) {
			continue
		}
		n, err := body.integer("", key)
		if err != nil {
			return req, err
		}
		if n < 1 || n > 1<<20 {
			return req, reqErr("", "field %q must be between 1 and %d, got %d", key, 1<<20, n)
		}
		req.maxTokens = int(n)
	}
	if body.has("temperature") {
		temp, err := body.number("", "temperature")
		if err != nil {
			return req, err
		}
		if temp < 0 || temp > 2 {
			return req, reqErr("", "field \"temperature\" must be between 0 and 2, got %v", temp)
		}
	}
	if body.has("seed") {
		if _, err := body.integer("", "seed"); err != nil {
			return req, err
		}
	}

	messages, err := body.array("", "messages")
	if err != nil {
		return req, err
	}
	switch len(messages) {
	case 1, 2:
	case 0:
		return req, reqErr("", "field \"messages\" is required and must hold one user message")
	default:
		return req, reqErr("", "field \"messages\" holds %d messages; send one user message, optionally after one system message", len(messages))
	}
	if len(messages) == 2 {
		text, err := parseSystem(messages[0])
		if err != nil {
			return req, err
		}
		req.warmup = strings.TrimSpace(text) == WarmupMarker
		req.promptTokens += vlm.CountTokens(text)
	}
	last := len(messages) - 1
	if req.question, req.imageURL, err = parseUser(messages[last], fmt.Sprintf("messages[%d]", last)); err != nil {
		return req, err
	}
	req.promptTokens += vlm.CountTokens(req.question)
	return req, nil
}

func parseSystem(raw json.RawMessage) (string, error) {
	const where = "messages[0]"
	msg, err := decodeObject(raw, where, "role", "content")
	if err != nil {
		return "", err
	}
	role, err := msg.str(where, "role")
	if err != nil {
		return "", err
	}
	if role != "system" {
		return "", reqErr(where, "role is %q; with two messages the first must be a system message", role)
	}
	content, ok := msg["content"]
	if !ok {
		return "", reqErr(where, "field \"content\" is required")
	}
	var text string
	if json.Unmarshal(content, &text) == nil {
		return text, nil
	}
	parts, err := msg.array(where, "content")
	if err != nil {
		return "", reqErr(where, "field \"content\" must be a string or an array of text parts")
	}
	var texts []string
	for i, p := range parts {
		pw := fmt.Sprintf("%s.content[%d]", where, i)
		part, err := decodeObject(p, pw, "type", "text")
		if err != nil {
			return "", err
		}
		if typ, _ := part.str(pw, "type"); typ != "text" {
			return "", reqErr(pw, "a system message may only hold text parts")
		}
		t, err := part.str(pw, "text")
		if err != nil {
			return "", err
		}
		texts = append(texts, t)
	}
	return strings.Join(texts, " "), nil
}

func parseUser(raw json.RawMessage, where string) (question, imageURL string, err error) {
	msg, err := decodeObject(raw, where, "role", "content")
	if err != nil {
		return "", "", err
	}
	role, err := msg.str(where, "role")
	if err != nil {
		return "", "", err
	}
	if role != "user" {
		return "", "", reqErr(where, "role is %q, want \"user\"", role)
	}
	parts, err := msg.array(where, "content")
	if err != nil {
		return "", "", reqErr(where, "field \"content\" must be an array of one text part and one image_url part")
	}
	var texts, images int
	for i, p := range parts {
		pw := fmt.Sprintf("%s.content[%d]", where, i)
		head, err := decodeObject(p, pw, "type", "text", "image_url")
		if err != nil {
			return "", "", err
		}
		typ, err := head.str(pw, "type")
		if err != nil {
			return "", "", err
		}
		switch typ {
		case "text":
			if _, err := decodeObject(p, pw, "type", "text"); err != nil {
				return "", "", err
			}
			if question, err = head.str(pw, "text"); err != nil {
				return "", "", err
			}
			texts++
		case "image_url":
			if _, err := decodeObject(p, pw, "type", "image_url"); err != nil {
				return "", "", err
			}
			img, err := decodeObject(head["image_url"], pw+".image_url", "url")
			if err != nil {
				return "", "", err
			}
			if imageURL, err = img.str(pw+".image_url", "url"); err != nil {
				return "", "", err
			}
			images++
		default:
			return "", "", reqErr(pw, "unsupported content part type %q (valid values are text, image_url)", typ)
		}
	}
	if texts != 1 || images != 1 {
		return "", "", reqErr(where, "content holds %d text and %d image_url parts; send exactly one of each", texts, images)
	}
	if strings.TrimSpace(question) == "" {
		return "", "", reqErr(where, "the text part is empty")
	}
	return question, imageURL, nil
}

// parseInfer validates a NIM-shaped /v1/infer body: {"input":[{"type":"image_url","url":"data:..."}]}.
func parseInfer(payload []byte) (string, error) {
	body, err := decodeObject(payload, "", "input")
	if err != nil {
		return "", err
	}
	inputs, err := body.array("", "input")
	if err != nil {
		return "", err
	}
	if len(inputs) != 1 {
		return "", reqErr("", "field \"input\" must hold exactly one image, got %d items", len(inputs))
	}
	const where = "input[0]"
	item, err := decodeObject(inputs[0], where, "type", "url")
	if err != nil {
		return "", err
	}
	typ, err := item.str(where, "type")
	if err != nil {
		return "", err
	}
	if typ != "image_url" {
		return "", reqErr(where, "type is %q, want \"image_url\"", typ)
	}
	url, err := item.str(where, "url")
	if err != nil {
		return "", err
	}
	if url == "" {
		return "", reqErr(where, "field \"url\" is required")
	}
	return url, nil
}
