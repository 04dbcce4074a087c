package task_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/corpus"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/imaging"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/task"
)

// fixture is one corpus image as a data URL, with its corpus entry.
type fixture struct {
	url   string
	entry corpus.Entry
}

func fixtures(t *testing.T, family string, n int) []fixture {
	t.Helper()
	dir := t.TempDir()
	c, err := corpus.Generate(family, n, dir)
	require.NoError(t, err)
	var out []fixture
	for _, e := range c.Entries {
		data, err := os.ReadFile(filepath.Join(dir, e.File))
		require.NoError(t, err)
		out = append(out, fixture{url: imaging.DataURL(e.MIME, data), entry: e})
	}
	return out
}

func newBundle(t *testing.T, family string) *bundle.Bundle {
	t.Helper()
	b, err := bundle.New(family, bundle.PrecisionFP32, 1)
	require.NoError(t, err)
	return b
}

// aiperfChat is a chat body in the exact shape and key order AIPerf 0.13.0 sends.
func aiperfChat(question, url string, extra string) string {
	return `{"messages":[{"role":"user","content":[{"type":"text","text":` + quote(question) +
		`},{"type":"image_url","image_url":{"url":` + quote(url) + `}}]}],"model":"ref","stream":false` + extra + `}`
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestChatAnswersFromPixels(t *testing.T) {
	t.Parallel()
	b := newBundle(t, bundle.FamilyVLM)
	for _, f := range fixtures(t, bundle.FamilyVLM, 14) {
		res, err := task.New(b, task.Options{}).Answer(task.RouteChat, []byte(aiperfChat(f.entry.Question, f.url, "")))
		require.NoError(t, err, f.entry.ID)
		assert.Equal(t, f.entry.Answer, res.Text, "%s: %s", f.entry.ID, f.entry.Question)
		assert.Equal(t, quote(res.Text), string(res.Answer))
		assert.Equal(t, "stop", res.FinishReason)
		assert.Equal(t, f.entry.Width, res.Image.Width)
		assert.Equal(t, f.entry.Height, res.Image.Height)
		assert.Equal(t, len(strings.Fields(f.entry.Question)), res.PromptTokens)
		assert.Equal(t, len(strings.Fields(res.Text)), res.CompletionTokens)
		assert.Equal(t, "ref", res.Model)
		assert.False(t, res.Warmup)
	}
}

func TestChatWarmupAndMaxTokens(t *testing.T) {
	t.Parallel()
	b := newBundle(t, bundle.FamilyVLM)
	f := fixtures(t, bundle.FamilyVLM, 7)[6] // a "Describe the image." entry
	require.Equal(t, "Describe the image.", f.entry.Question)
	require.Greater(t, len(strings.Fields(f.entry.Answer)), 2)

	warm := `{"messages":[{"role":"system","content":"warmup"},{"role":"user","content":[{"type":"text","text":"Describe the image."},{"type":"image_url","image_url":{"url":` + quote(f.url) + `}}]}],"model":"ref","stream":false,"max_completion_tokens":2}`
	res, err := task.New(b, task.Options{}).Answer(task.RouteChat, []byte(warm))
	require.NoError(t, err)
	assert.True(t, res.Warmup)
	assert.Equal(t, strings.Join(strings.Fields(f.entry.Answer)[:2], " "), res.Text)
	assert.Equal(t, "length", res.FinishReason)
	assert.Equal(t, 2, res.CompletionTokens)
	assert.Equal(t, 1+3, res.PromptTokens) // "warmup" + "Describe the image."

	res, err = task.New(b, task.Options{}).Answer(task.RouteChat, []byte(aiperfChat("Describe the image.", f.url, `,"max_tokens":100,"temperature":0.7,"seed":3`)))
	require.NoError(t, err)
	assert.Equal(t, f.entry.Answer, res.Text)
	assert.Equal(t, "stop", res.FinishReason)
}

func TestChatRejectsInvalidPayloads(t *testing.T) {
	t.Parallel()
	b := newBundle(t, bundle.FamilyVLM)
	url := fixtures(t, bundle.FamilyVLM, 1)[0].url
	user := `{"role":"user","content":[{"type":"text","text":"How many shapes are in the image?"},{"type":"image_url","image_url":{"url":` + quote(url) + `}}]}`
	tests := []struct {
		name, body, wantErr string
	}{
		{"not json", `{`, "not valid JSON"},
		{"not an object", `[1]`, "must be a JSON object"},
		{"trailing data", `{"messages":[` + user + `]} {}`, "trailing data"},
		{"unknown field", `{"messages":[` + user + `],"top_p":0.5}`, `unknown field "top_p"`},
		{"wrong case", `{"Messages":[` + user + `]}`, `unknown field "Messages"`},
		{"repeated field", `{"messages":[` + user + `],"model":"a","model":"b"}`, `"model" is repeated`},
		{"stream true", `{"messages":[` + user + `],"stream":true}`, "stream=true is not supported"},
		{"stream not bool", `{"messages":[` + user + `],"stream":"no"}`, `"stream" must be a boolean`},
		{"no messages", `{"model":"m"}`, `"messages" is required`},
		{"three messages", `{"messages":[{"role":"system","content":"a"},` + user + `,` + user + `]}`, "holds 3 messages"},
		{"two users", `{"messages":[` + user + `,` + user + `]}`, "first must be a system message"},
		{"assistant", `{"messages":[{"role":"assistant","content":[]}]}`, `role is "assistant"`},
		{"string content", `{"messages":[{"role":"user","content":"hi"}]}`, "must be an array"},
		{"no image", `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, "1 text and 0 image_url"},
		{"two images", `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"x"}},{"type":"image_url","image_url":{"url":"x"}}]}]}`, "1 text and 2 image_url"},
		{"image detail", `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"x","detail":"high"}}]}]}`, `unknown field "detail"`},
		{"text part with image", `{"messages":[{"role":"user","content":[{"type":"text","text":"hi","image_url":{"url":"x"}},{"type":"image_url","image_url":{"url":"x"}}]}]}`, `unknown field "image_url"`},
		{"audio part", `{"messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`, `unsupported content part type "input_audio"`},
		{"message name", `{"messages":[{"role":"user","name":"x","content":[]}]}`, `unknown field "name"`},
		{"both max fields", `{"messages":[` + user + `],"max_tokens":1,"max_completion_tokens":1}`, "not both"},
		{"zero max tokens", `{"messages":[` + user + `],"max_tokens":0}`, `"max_tokens" must be between`},
		{"fractional max tokens", `{"messages":[` + user + `],"max_completion_tokens":1.5}`, "must be an integer"},
		{"hot temperature", `{"messages":[` + user + `],"temperature":3}`, "between 0 and 2"},
		{"model not string", `{"messages":[` + user + `],"model":1}`, `"model" must be a string`},
		{"empty question", `{"messages":[{"role":"user","content":[{"type":"text","text":" "},{"type":"image_url","image_url":{"url":` + quote(url) + `}}]}]}`, "text part is empty"},
		{"http image", `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`, "send a base64 data URL"},
		{"gif image", `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lG"}}]}]}`, `unsupported image type "image/gif"`},
		{"jpeg declared png", `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":` + quote(strings.Replace(url, "image/png", "image/jpeg", 1)) + `}}]}]}`, "not a valid image/jpeg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := task.New(b, task.Options{}).Answer(task.RouteChat, []byte(tt.body))
			var reqErr *task.RequestError
			require.ErrorAs(t, err, &reqErr)
			assert.Contains(t, reqErr.Error(), tt.wantErr)
		})
	}
}

func TestInferAnswersBoxes(t *testing.T) {
	t.Parallel()
	b := newBundle(t, bundle.FamilyDetect)
	for _, f := range fixtures(t, bundle.FamilyDetect, 6) {
		body := `{"input":[{"type":"image_url","url":` + quote(f.url) + `}]}`
		res, err := task.New(b, task.Options{}).Answer(task.RouteInfer, []byte(body))
		require.NoError(t, err)
		var items []task.InferItem
		require.NoError(t, json.Unmarshal(res.Answer, &items))
		require.Len(t, items, 1)
		assert.Equal(t, 0, items[0].Index)
		n := 0
		for label, boxes := range items[0].BoundingBoxes {
			for _, bx := range boxes {
				n++
				assert.True(t, 0 <= bx.XMin && bx.XMin < bx.XMax && bx.XMax <= 1, "%s %+v", label, bx)
				assert.True(t, 0 <= bx.YMin && bx.YMin < bx.YMax && bx.YMax <= 1, "%s %+v", label, bx)
				assert.True(t, 0 < bx.Confidence && bx.Confidence <= 1)
			}
		}
		assert.Len(t, f.entry.Objects, n, f.entry.ID)
		assert.Equal(t, f.entry.Width, res.Image.Width)
		assert.Positive(t, res.Image.Bytes)
		// The same payload always gives the same bytes.
		again, err := task.New(b, task.Options{}).Answer(task.RouteInfer, []byte(body))
		require.NoError(t, err)
		assert.Equal(t, string(res.Answer), string(again.Answer))
	}
}

func TestInferRejectsInvalidPayloads(t *testing.T) {
	t.Parallel()
	b := newBundle(t, bundle.FamilyDetect)
	url := fixtures(t, bundle.FamilyDetect, 1)[0].url
	item := `{"type":"image_url","url":` + quote(url) + `}`
	tests := []struct {
		name, body, wantErr string
	}{
		{"empty input", `{"input":[]}`, "exactly one image, got 0"},
		{"two inputs", `{"input":[` + item + `,` + item + `]}`, "exactly one image, got 2"},
		{"model field", `{"input":[` + item + `],"model":"x"}`, `unknown field "model"`},
		{"unknown item field", `{"input":[{"type":"image_url","url":"x","detail":1}]}`, `unknown field "detail"`},
		{"wrong type", `{"input":[{"type":"text","url":"x"}]}`, `type is "text"`},
		{"no url", `{"input":[{"type":"image_url"}]}`, `"url" is required`},
		{"bad base64", `{"input":[{"type":"image_url","url":"data:image/png;base64,***"}]}`, "invalid base64"},
		{"not base64", `{"input":[{"type":"image_url","url":"data:image/png,abc"}]}`, "not base64 encoded"},
		{"garbage png", `{"input":[{"type":"image_url","url":"data:image/png;base64,aGVsbG8="}]}`, "not a valid image/png"},
		{"input not array", `{"input":{}}`, `"input" must be an array`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := task.New(b, task.Options{}).Answer(task.RouteInfer, []byte(tt.body))
			var reqErr *task.RequestError
			require.ErrorAs(t, err, &reqErr)
			assert.Contains(t, reqErr.Error(), tt.wantErr)
		})
	}
}

func TestRouteMustMatchFamily(t *testing.T) {
	t.Parallel()
	_, err := task.New(newBundle(t, bundle.FamilyVLM), task.Options{}).Answer(task.RouteInfer, []byte(`{}`))
	var routeErr *task.RouteError
	require.True(t, errors.As(err, &routeErr))
	assert.Contains(t, err.Error(), `route "/v1/infer" is not served by family ref-vlm`)
}

func TestSlowOptionCountsInTaskMs(t *testing.T) {
	t.Parallel()
	b := newBundle(t, bundle.FamilyDetect)
	url := fixtures(t, bundle.FamilyDetect, 1)[0].url
	tk := task.New(b, task.Options{ExtraDelay: 30 * time.Millisecond})
	res, err := tk.Answer(task.RouteInfer, []byte(`{"input":[{"type":"image_url","url":`+quote(url)+`}]}`))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.TaskMs, 30.0)
}
