package trtmc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Routes of the two workloads.
const (
	RouteChat  = "/v1/chat/completions"
	RouteInfer = "/v1/infer"
)

// ChatCall is one chat request mapped to a native generate call the way
// trtmc-server maps it (apps/server/python/trtmc_server/app.py `execute`,
// protocol.py `generation_config` and `chat_prompt`, schemas.py).
type ChatCall struct {
	Prompt       string
	SystemPrompt string
	Image        Image
	// Config is the worker's generation config: max_new_tokens always;
	// temperature, top_p, min_p, top_k, seed, enable_thinking when the
	// request set them; use_chat_template true (the chat route);
	// system_prompt when a system message was given.
	Config map[string]any
}

// ChatLimits are the server settings the mapping depends on.
type ChatLimits struct {
	// DefaultMaxNewTokens is used when the request names no max_tokens
	// (the worker's default_max_new_tokens; 0: leave it to the Task).
	DefaultMaxNewTokens int
	// MaxNewTokens is the server's --max-new-tokens limit (default 4096).
	MaxNewTokens int
}

// chatKeys are the fields trtmc-server's ChatCompletionRequest accepts
// (pydantic extra="forbid": anything else is a 400).
var chatKeys = map[string]bool{"model": true, "messages": true, "max_tokens": true, "max_completion_tokens": true,
	"temperature": true, "top_p": true, "min_p": true, "top_k": true, "seed": true, "enable_thinking": true,
	"n": true, "stream": true, "stream_options": true, "stop": true}

// ParseChat maps a chat completion body to a native call, rejecting what
// the server rejects. One user message (optionally after one system
// message) with exactly one image and its text.
func ParseChat(payload []byte, lim ChatLimits) (ChatCall, error) {
	req, err := decodeChat(payload)
	if err != nil {
		return ChatCall{}, err
	}
	if err := req.checkRanges(); err != nil {
		return ChatCall{}, err
	}
	if err := req.checkSupported(); err != nil {
		return ChatCall{}, err
	}
	call := ChatCall{Config: map[string]any{}}
	call.Prompt, call.SystemPrompt, call.Image, err = chatMessages(req.Messages)
	if err != nil {
		return ChatCall{}, err
	}
	maxTokens, err := req.maxNewTokens(lim)
	if err != nil {
		return ChatCall{}, err
	}
	req.generationConfig(call.Config, maxTokens, call.SystemPrompt)
	return call, nil
}

// chatRequest is the part of a ChatCompletionRequest the mapping reads.
type chatRequest struct {
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

// decodeChat decodes a JSON object holding only the fields the server
// accepts (extra="forbid").
func decodeChat(payload []byte) (*chatRequest, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(payload, &raw); err != nil {
		return nil, fmt.Errorf("payload is not a JSON object: %w", err)
	}
	for k := range raw {
		if !chatKeys[k] {
			return nil, fmt.Errorf("%s: extra fields not permitted (trtmc-server rejects them)", k)
		}
	}
	var req chatRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	return &req, nil
}

// checkRanges rejects a token count or sampling setting out of the range
// the server's schema allows.
func (r *chatRequest) checkRanges() error {
	switch {
	case r.MaxTokens != nil && *r.MaxTokens < 1:
		return errors.New("max_tokens must be >= 1")
	case r.MaxCompletionTokens != nil && *r.MaxCompletionTokens < 1:
		return errors.New("max_completion_tokens must be >= 1")
	case r.Temperature != nil && (*r.Temperature < 0 || math.IsInf(*r.Temperature, 0) || math.IsNaN(*r.Temperature)):
		return errors.New("temperature must be finite and >= 0")
	case r.TopP != nil && (*r.TopP < 0 || *r.TopP > 1):
		return errors.New("top_p must be in [0, 1]")
	case r.MinP != nil && (*r.MinP < 0 || *r.MinP > 1):
		return errors.New("min_p must be in [0, 1]")
	case r.TopK != nil && *r.TopK < 0:
		return errors.New("top_k must be >= 0")
	case r.Seed != nil && *r.Seed < 0:
		return errors.New("seed must be >= 0")
	}
	return nil
}

// checkSupported rejects what the server does not do: several choices,
// stream_options without stream, stop sequences, and both token limits at
// once. stream=true is served (app.py idx@a9ed5f69: buffered SSE of the
// same text, or incremental deltas that must join to it), so it maps to
// the same native call.
func (r *chatRequest) checkSupported() error {
	switch {
	case r.N != nil && *r.N != 1:
		return errors.New("n must be 1")
	case len(r.StreamOptions) > 0 && string(r.StreamOptions) != "null" && (r.Stream == nil || !*r.Stream):
		return errors.New("stream_options requires stream=true")
	case len(r.Stop) > 0 && string(r.Stop) != "null":
		return errors.New("stop is not supported")
	case r.MaxTokens != nil && r.MaxCompletionTokens != nil:
		return errors.New("max_tokens and max_completion_tokens are mutually exclusive")
	}
	return nil
}

// maxNewTokens is the requested generation length, or the model's default;
// above the server's limit (4096 unless set) it is a 400. 0 means unknown.
func (r *chatRequest) maxNewTokens(lim ChatLimits) (int64, error) {
	maxTokens := int64(lim.DefaultMaxNewTokens)
	if r.MaxCompletionTokens != nil {
		maxTokens = *r.MaxCompletionTokens
	} else if r.MaxTokens != nil {
		maxTokens = *r.MaxTokens
	}
	limit := int64(lim.MaxNewTokens)
	if limit <= 0 {
		limit = 4096
	}
	if maxTokens > limit {
		return 0, fmt.Errorf("requested generation exceeds %d tokens", limit)
	}
	return maxTokens, nil
}

// generationConfig fills the worker's generation config (protocol.py
// generation_config): max_new_tokens when known, the sampling settings the
// request set, use_chat_template, and the system prompt when there is one.
func (r *chatRequest) generationConfig(cfg map[string]any, maxTokens int64, system string) {
	if maxTokens > 0 {
		// Unknown only on the CLI path with no max_tokens in the request:
		// `trtmc run` then uses the bundle's own default, as the worker would.
		cfg["max_new_tokens"] = maxTokens
	}
	if r.Temperature != nil {
		cfg["temperature"] = *r.Temperature
	}
	if r.TopP != nil {
		cfg["top_p"] = *r.TopP
	}
	if r.MinP != nil {
		cfg["min_p"] = *r.MinP
	}
	if r.TopK != nil {
		cfg["top_k"] = *r.TopK
	}
	if r.Seed != nil {
		cfg["seed"] = *r.Seed
	}
	if r.EnableThinking != nil {
		cfg["enable_thinking"] = *r.EnableThinking
	}
	cfg["use_chat_template"] = true
	if system != "" {
		cfg["system_prompt"] = system
	}
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
}

// chatMessages accepts one user message, or a system message then a user
// message (chat_prompt). The user message carries exactly one image.
func chatMessages(raw []json.RawMessage) (prompt, system string, img Image, err error) {
	msgs := make([]chatMessage, len(raw))
	for i, r := range raw {
		dec := json.NewDecoder(bytes.NewReader(r))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&msgs[i]); err != nil {
			return "", "", Image{}, fmt.Errorf("messages[%d]: %w", i, err)
		}
	}
	var user chatMessage
	switch {
	case len(msgs) == 1 && msgs[0].Role == "user":
		user = msgs[0]
	case len(msgs) == 2 && msgs[0].Role == "system" && msgs[1].Role == "user":
		user = msgs[1]
		var sysImg *Image
		system, sysImg, err = messageContent(msgs[0].Content, "messages[0]")
		if err != nil {
			return "", "", Image{}, err
		}
		if sysImg != nil {
			return "", "", Image{}, errors.New("messages[0]: a system message carries no image")
		}
	default:
		return "", "", Image{}, errors.New("messages must be one user message with an optional preceding system message")
	}
	var userImg *Image
	prompt, userImg, err = messageContent(user.Content, fmt.Sprintf("messages[%d]", len(msgs)-1))
	if err != nil {
		return "", "", Image{}, err
	}
	if userImg == nil {
		return "", "", Image{}, errors.New("the user message has no image: single-image chat needs exactly one")
	}
	return prompt, system, *userImg, nil
}

// messageContent joins the text parts ("".join, as chat_prompt does) and
// decodes the one image part.
func messageContent(content json.RawMessage, where string) (string, *Image, error) {
	var s string
	if err := json.Unmarshal(content, &s); err == nil {
		return s, nil, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(content, &parts); err != nil {
		return "", nil, fmt.Errorf("%s.content must be a string or a list of parts", where)
	}
	var text strings.Builder
	var img *Image
	for i, raw := range parts {
		var p contentPart
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return "", nil, fmt.Errorf("%s.content[%d]: %w", where, i, err)
		}
		switch p.Type {
		case "text":
			if p.Text == nil {
				return "", nil, fmt.Errorf("%s.content[%d]: text part without text", where, i)
			}
			text.WriteString(*p.Text)
		case "image_url":
			if img != nil {
				return "", nil, fmt.Errorf("%s.content[%d]: a second image (single-image chat takes one)", where, i)
			}
			url, err := imageURL(p.ImageURL)
			if err != nil {
				return "", nil, fmt.Errorf("%s.content[%d].image_url: %w", where, i, err)
			}
			im, err := DecodeDataURL(url)
			if err != nil {
				return "", nil, fmt.Errorf("%s.content[%d].image_url: %w", where, i, err)
			}
			img = &im
		default:
			return "", nil, fmt.Errorf("%s.content[%d]: unsupported part type %q", where, i, p.Type)
		}
	}
	return text.String(), img, nil
}

func imageURL(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil || obj.URL == "" {
		return "", errors.New("want {\"url\": \"data:...\"}")
	}
	return obj.URL, nil
}

// ParseInfer reads a NIM /v1/infer body: {"input": [{"type": "image_url",
// "url": "data:..."}]} with exactly one image, nothing else.
func ParseInfer(payload []byte) (Image, error) {
	var req struct {
		Input []struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"input"`
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Image{}, fmt.Errorf("payload is not a /v1/infer body: %w", err)
	}
	if len(req.Input) != 1 {
		return Image{}, fmt.Errorf("input holds %d items: one image per request", len(req.Input))
	}
	if req.Input[0].Type != "image_url" {
		return Image{}, fmt.Errorf("input[0].type is %q, want image_url", req.Input[0].Type)
	}
	im, err := DecodeDataURL(req.Input[0].URL)
	if err != nil {
		return Image{}, fmt.Errorf("input[0].url: %w", err)
	}
	return im, nil
}
