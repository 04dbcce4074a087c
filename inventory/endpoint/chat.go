package endpoint

import (
	"fmt"
	"sort"
)

// Chat is AIPerf's chat endpoint type: a vision-language model answers
// one question about one image (OpenAI chat completions).
const Chat = "chat"

func init() { Register(chat{}) }

type chat struct{}

func (chat) Name() string          { return Chat }
func (chat) NeedsTokenizer() bool  { return true }
func (chat) TakesGeneration() bool { return true }
func (chat) LineText(r Request) string {
	return r.Question
}
func (chat) DefaultExtractor() string { return "openai-chat-text" }
func (chat) Counts() Count            { return Tokens }

func (chat) CheckEntry(question string) *EntryProblem {
	if isBlank(question) {
		return &EntryProblem{Problem: "has no question", Need: "a vision-language corpus needs one question per image",
			Fix: "give every image of a vision-language corpus its question"}
	}
	return nil
}

func (chat) Argv(tokenizer string) []string {
	if tokenizer == "" {
		return nil
	}
	return []string{"--tokenizer", tokenizer}
}

// Body is a chat body with its keys in the order messages, model, stream,
// then the extra inputs sorted; one user message of a text part and an
// image_url part, no warmup marker.
func (chat) Body(r Request, model string, extra map[string]any) ([]byte, error) {
	type part struct {
		Type     string          `json:"type"`
		Text     *string         `json:"text,omitempty"`
		ImageURL *map[string]any `json:"image_url,omitempty"`
	}
	q := r.Question
	msgs, err := CompactJSON([]any{map[string]any{"role": "user", "content": []part{{Type: "text", Text: &q},
		{Type: "image_url", ImageURL: &map[string]any{"url": r.Image}}}}})
	if err != nil {
		return nil, err
	}
	m, err := CompactJSON(model)
	if err != nil {
		return nil, err
	}
	var out []byte
	out = append(out, `{"messages":`...)
	out = append(out, msgs...)
	out = append(out, `,"model":`...)
	out = append(out, m...)
	out = append(out, `,"stream":false`...)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kb, _ := CompactJSON(k)
		vb, err := CompactJSON(extra[k])
		if err != nil {
			return nil, fmt.Errorf("extra input %s: %w", k, err)
		}
		out = append(append(append(append(out, ','), kb...), ':'), vb...)
	}
	return append(out, '}'), nil
}
