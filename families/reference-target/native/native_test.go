package native_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/corpus"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/imaging"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/native"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/task"
)

func setup(t *testing.T) (*task.Task, string) {
	t.Helper()
	b, err := bundle.New(bundle.FamilyDetect, bundle.PrecisionFP32, 1)
	require.NoError(t, err)
	dir := t.TempDir()
	c, err := corpus.Generate(bundle.FamilyDetect, 1, dir)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, c.Entries[0].File))
	require.NoError(t, err)
	return task.New(b, task.Options{}), `{"input":[{"type":"image_url","url":"` + imaging.DataURL(c.Entries[0].MIME, data) + `"}]}`
}

func decodeLines(t *testing.T, out string) []native.Response {
	t.Helper()
	var resps []native.Response
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, native.MaxLineBytes)
	for sc.Scan() {
		var r native.Response
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		resps = append(resps, r)
	}
	return resps
}

func TestRunAnswersEachLine(t *testing.T) {
	t.Parallel()
	tk, payload := setup(t)
	asString, err := json.Marshal(payload)
	require.NoError(t, err)
	in := strings.Join([]string{
		`{"request_id":"r1","route":"/v1/infer","payload":` + payload + `}`,
		``,
		`{"request_id":"r2","route":"/v1/infer","payload":` + string(asString) + `}`,
		`{"request_id":"r3","route":"/v1/infer","payload":{"input":[]}}`,
	}, "\n")
	var out bytes.Buffer
	sum, err := native.Run(tk, strings.NewReader(in), "in.jsonl", &out)
	require.NoError(t, err)
	assert.Equal(t, native.Summary{Requests: 3, Answered: 2, Rejected: 1}, sum)

	want, err := tk.Answer(task.RouteInfer, []byte(payload))
	require.NoError(t, err)
	resps := decodeLines(t, out.String())
	require.Len(t, resps, 3)
	assert.Equal(t, "r1", resps[0].RequestID)
	assert.Equal(t, string(want.Answer), string(resps[0].Answer))
	assert.Positive(t, resps[0].TaskMs)
	assert.Equal(t, string(want.Answer), string(resps[1].Answer), "a payload given as a JSON string is the same body")
	assert.Empty(t, resps[2].Answer)
	assert.Contains(t, resps[2].Error, "exactly one image")
	assert.Contains(t, out.String(), `{"request_id":"r1","answer":[{"index":0,"bounding_boxes":{`)
}

func TestRunStopsOnBadLines(t *testing.T) {
	t.Parallel()
	tk, payload := setup(t)
	for name, tt := range map[string]struct{ in, want string }{
		"not json":       {"{", "in.jsonl:1: not a request line"},
		"unknown field":  {`{"request_id":"a","route":"/v1/infer","payload":{},"x":1}`, `in.jsonl:1: not a request line: json: unknown field "x"`},
		"no id":          {`{"route":"/v1/infer","payload":{}}`, "in.jsonl:1: request_id is missing"},
		"no payload":     {`{"request_id":"a","route":"/v1/infer"}`, "in.jsonl:1: payload is missing"},
		"wrong family":   {"\n" + `{"request_id":"a","route":"/v1/chat/completions","payload":{}}`, `in.jsonl:2: route "/v1/chat/completions" is not served by family ref-detect`},
		"repeated id":    {`{"request_id":"a","route":"/v1/infer","payload":` + payload + "}\n" + `{"request_id":"a","route":"/v1/infer","payload":` + payload + "}", `in.jsonl:2: request_id "a" is repeated`},
		"trailing stuff": {`{"request_id":"a","route":"/v1/infer","payload":{}} {}`, "in.jsonl:1: not a request line: trailing data"},
	} {
		_, err := native.Run(tk, strings.NewReader(tt.in), "in.jsonl", &bytes.Buffer{})
		assert.ErrorContains(t, err, tt.want, name)
	}
}

// A chat answer carries the text and the Task's own token count, exactly
// what the HTTP route puts in message.content and usage.completion_tokens.
func TestRunChatAnswerCarriesTheTokenCount(t *testing.T) {
	t.Parallel()
	b, err := bundle.New(bundle.FamilyVLM, bundle.PrecisionFP32, 1)
	require.NoError(t, err)
	dir := t.TempDir()
	c, err := corpus.Generate(bundle.FamilyVLM, 1, dir)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, c.Entries[0].File))
	require.NoError(t, err)
	tk := task.New(b, task.Options{})
	payload := `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":` + strconvQuote(c.Entries[0].Question) +
		`},{"type":"image_url","image_url":{"url":"` + imaging.DataURL(c.Entries[0].MIME, data) + `"}}]}],"max_tokens":8}`
	var out bytes.Buffer
	_, err = native.Run(tk, strings.NewReader(`{"request_id":"c1","route":"/v1/chat/completions","payload":`+payload+`}`), "in.jsonl", &out)
	require.NoError(t, err)
	want, err := tk.Answer(task.RouteChat, []byte(payload))
	require.NoError(t, err)
	resps := decodeLines(t, out.String())
	require.Len(t, resps, 1)
	var got struct {
		Text             string `json:"text"`
		CompletionTokens int    `json:"completion_tokens"`
	}
	require.NoError(t, json.Unmarshal(resps[0].Answer, &got))
	assert.Equal(t, want.Text, got.Text)
	assert.Equal(t, want.CompletionTokens, got.CompletionTokens)
	assert.Positive(t, got.CompletionTokens)
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
