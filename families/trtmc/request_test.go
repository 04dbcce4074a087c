package trtmc

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pngURL is a data URL of a w x h PNG.
func pngURL(t testing.TB, w, h int) string {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	img.Set(1, 1, color.RGBA{R: 200, A: 255})
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

// chatPayload is the body AIPerf 0.13.0 posts (qual/aiperf/testdata/chat).
func chatPayload(t testing.TB, extra string) []byte {
	t.Helper()
	return []byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"What color is the car?"},` +
		`{"type":"image_url","image_url":{"url":"` + pngURL(t, 64, 48) + `"}}]}],"model":"qwen3-vl-2b","stream":false` + extra + `}`)
}

func TestParseChatMapsControlsAsTheServerDoes(t *testing.T) {
	lim := ChatLimits{DefaultMaxNewTokens: 128, MaxNewTokens: 4096}
	call, err := ParseChat(chatPayload(t, `,"max_tokens":32,"temperature":0,"top_p":0.9,"min_p":0.05,"top_k":20,"seed":7,"enable_thinking":false`), lim)
	require.NoError(t, err)
	assert.Equal(t, "What color is the car?", call.Prompt)
	assert.Equal(t, 64, call.Image.Width)
	assert.Equal(t, 48, call.Image.Height)
	assert.Equal(t, "image/png", call.Image.MIME)
	got, err := json.Marshal(call.Config)
	require.NoError(t, err)
	assert.JSONEq(t, `{"max_new_tokens":32,"temperature":0,"top_p":0.9,"min_p":0.05,"top_k":20,"seed":7,
		"enable_thinking":false,"use_chat_template":true}`, string(got))

	// Absent controls are absent; max_new_tokens falls back to the worker's default.
	call, err = ParseChat(chatPayload(t, ``), lim)
	require.NoError(t, err)
	got, _ = json.Marshal(call.Config)
	assert.JSONEq(t, `{"max_new_tokens":128,"use_chat_template":true}`, string(got))

	// max_completion_tokens is the chat route's own name for it.
	call, err = ParseChat(chatPayload(t, `,"max_completion_tokens":9`), lim)
	require.NoError(t, err)
	assert.EqualValues(t, 9, call.Config["max_new_tokens"])

	// A system message becomes the worker's system_prompt.
	sys := strings.Replace(string(chatPayload(t, `,"max_tokens":4`)), `"messages":[`, `"messages":[{"role":"system","content":"Answer briefly."},`, 1)
	// stream=true is served (buffered SSE, app.py idx@a9ed5f69): the same call.
	streamed, err := ParseChat([]byte(strings.Replace(string(chatPayload(t, `,"max_tokens":32`)), `"stream":false`, `"stream":true`, 1)), lim)
	require.NoError(t, err)
	plain, err := ParseChat(chatPayload(t, `,"max_tokens":32`), lim)
	require.NoError(t, err)
	assert.Equal(t, plain.Config, streamed.Config)
	call, err = ParseChat([]byte(sys), lim)
	require.NoError(t, err)
	assert.Equal(t, "Answer briefly.", call.SystemPrompt)
	assert.Equal(t, "Answer briefly.", call.Config["system_prompt"])
}

func TestParseChatRejectsWhatTheServerRejects(t *testing.T) {
	lim := ChatLimits{DefaultMaxNewTokens: 128, MaxNewTokens: 64}
	for name, tt := range map[string]struct{ body, want string }{
		"unknown field":    {string(chatPayload(t, `,"logprobs":true`)), "logprobs: extra fields not permitted"},
		"n":                {string(chatPayload(t, `,"n":2`)), "n must be 1"},
		"stream_options":   {string(chatPayload(t, `,"stream_options":{"include_usage":true}`)), "stream_options requires stream=true"},
		"stop":             {string(chatPayload(t, `,"stop":["x"]`)), "stop is not supported"},
		"both max":         {string(chatPayload(t, `,"max_tokens":2,"max_completion_tokens":2`)), "mutually exclusive"},
		"over the limit":   {string(chatPayload(t, `,"max_tokens":65`)), "exceeds 64 tokens"},
		"zero tokens":      {string(chatPayload(t, `,"max_tokens":0`)), "max_tokens must be >= 1"},
		"negative temp":    {string(chatPayload(t, `,"temperature":-1`)), "temperature must be finite"},
		"top_p":            {string(chatPayload(t, `,"top_p":1.5`)), "top_p must be in [0, 1]"},
		"no image":         {`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "has no image"},
		"two images":       {strings.Replace(string(chatPayload(t, ``)), `}}]}]`, `}},{"type":"image_url","image_url":{"url":"`+pngURL(t, 2, 2)+`"}}]}]`, 1), "a second image"},
		"remote image":     {`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`, "never fetches"},
		"assistant turn":   {`{"model":"m","messages":[{"role":"assistant","content":"x"}]}`, "one user message"},
		"three messages":   {`{"model":"m","messages":[{"role":"system","content":"a"},{"role":"user","content":"b"},{"role":"user","content":"c"}]}`, "one user message"},
		"not an image":     {`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:text/plain;base64,aGk="}}]}]}`, "not an image type"},
		"broken base64":    {`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,@@"}}]}]}`, "base64"},
		"lying mime":       {strings.Replace(string(chatPayload(t, ``)), "data:image/png", "data:image/jpeg", 1), "says image/jpeg but the bytes are image/png"},
		"audio part":       {`{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]}`, "input_audio"},
		"not json":         {`{`, "not a JSON object"},
		"part extra field": {`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a","x":1}]}]}`, `unknown field "x"`},
	} {
		_, err := ParseChat([]byte(tt.body), lim)
		assert.ErrorContains(t, err, tt.want, name)
	}
}

func TestParseInfer(t *testing.T) {
	im, err := ParseInfer([]byte(`{"input":[{"type":"image_url","url":"` + pngURL(t, 640, 427) + `"}]}`))
	require.NoError(t, err)
	assert.Equal(t, 640, im.Width)
	assert.Equal(t, 427, im.Height)
	for name, tt := range map[string]struct{ body, want string }{
		"two images":  {`{"input":[{"type":"image_url","url":"` + pngURL(t, 2, 2) + `"},{"type":"image_url","url":"` + pngURL(t, 2, 2) + `"}]}`, "2 items"},
		"none":        {`{"input":[]}`, "0 items"},
		"wrong type":  {`{"input":[{"type":"text","url":"x"}]}`, `"text", want image_url`},
		"extra field": {`{"input":[{"type":"image_url","url":"x"}],"threshold":0.5}`, `unknown field "threshold"`},
		"not data":    {`{"input":[{"type":"image_url","url":"file:///etc/passwd"}]}`, "never fetches"},
		"truncated":   {`{"input":[{"type":"image_url","url":"data:image/png;base64,iVBORw0KGgo="}]}`, "read image/png image size"},
	} {
		_, err := ParseInfer([]byte(tt.body))
		assert.ErrorContains(t, err, tt.want, name)
	}
}

// On the CLI path the default is unknown: no max_new_tokens is sent, and
// `trtmc run` uses the bundle's own default.
func TestParseChatWithoutAKnownDefault(t *testing.T) {
	call, err := ParseChat(chatPayload(t, ``), ChatLimits{})
	require.NoError(t, err)
	_, has := call.Config["max_new_tokens"]
	assert.False(t, has)
	assert.NotContains(t, chatFlags(call.Config), "--max-new-tokens")
}

// TestChatMaxNewTokens: the requested length (max_completion_tokens, else
// max_tokens), else the model's default; the server's limit is 4096 unless
// set; 0 when nothing says (the CLI path then keeps the bundle's default).
func TestChatMaxNewTokens(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		req  chatRequest
		lim  ChatLimits
		want int64
		err  string
	}{
		{"default", chatRequest{}, ChatLimits{DefaultMaxNewTokens: 32}, 32, ""},
		{"unknown", chatRequest{}, ChatLimits{}, 0, ""},
		{"max_tokens", chatRequest{MaxTokens: n(7)}, ChatLimits{DefaultMaxNewTokens: 32}, 7, ""},
		{"max_completion_tokens", chatRequest{MaxCompletionTokens: n(9)}, ChatLimits{DefaultMaxNewTokens: 32}, 9, ""},
		{"server limit", chatRequest{MaxTokens: n(65)}, ChatLimits{MaxNewTokens: 64}, 0, "exceeds 64 tokens"},
		{"default limit", chatRequest{MaxTokens: n(4097)}, ChatLimits{}, 0, "exceeds 4096 tokens"},
		{"at the default limit", chatRequest{MaxTokens: n(4096)}, ChatLimits{}, 4096, ""},
	} {
		got, err := tc.req.maxNewTokens(tc.lim)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		assert.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}
