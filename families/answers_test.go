package families

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChatTextExtractAndCompare(t *testing.T) {
	reg := DefaultRegistry()
	ex := reg.Extractors["openai-chat-text"]
	body := `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"three shapes"},"finish_reason":"stop"}]}`
	h, err := ex.FromHTTP([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, `"three shapes"`, string(h.Canonical))
	assert.Equal(t, 2, h.Tokens)
	assert.Empty(t, ex.Meaningful(h, nil))

	n, err := ex.FromNative(json.RawMessage(`"three shapes"`))
	require.NoError(t, err)
	assert.Empty(t, reg.Comparators["exact"].Compare(h, n, nil))
	other, _ := ex.FromNative(json.RawMessage(`"two shapes"`))
	assert.Contains(t, reg.Comparators["exact"].Compare(h, other, nil), `native: "two shapes"`)

	for name, bad := range map[string]string{
		"not json":     `{`,
		"wrong object": `{"object":"text_completion","choices":[]}`,
		"no choices":   `{"object":"chat.completion","choices":[]}`,
		"no content":   `{"object":"chat.completion","choices":[{"message":{},"finish_reason":"stop"}]}`,
		"no finish":    `{"object":"chat.completion","choices":[{"message":{"content":"a"}}]}`,
	} {
		_, err := ex.FromHTTP([]byte(bad))
		assert.Error(t, err, name)
	}
	empty, _ := ex.FromNative(json.RawMessage(`"  "`))
	assert.Equal(t, "empty answer text", ex.Meaningful(empty, nil))
}

func TestBoxesMeaningfulAndTolerance(t *testing.T) {
	reg := DefaultRegistry()
	ex := reg.Extractors["nim-bounding-boxes"]
	fam := &Family{Labels: []string{"red_square"}, Tolerance: 0.01}
	good := `{"data":[{"index":0,"bounding_boxes":{"red_square":[{"x_min":0.1,"y_min":0.1,"x_max":0.5,"y_max":0.6,"confidence":0.9}]}}],"usage":{}}`
	h, err := ex.FromHTTP([]byte(good))
	require.NoError(t, err)
	assert.Equal(t, 1, h.Boxes)
	assert.Empty(t, ex.Meaningful(h, fam))

	cases := map[string]string{
		`[{"index":0,"bounding_boxes":{"cat":[{"x_min":0.1,"y_min":0.1,"x_max":0.5,"y_max":0.6,"confidence":0.9}]}}]`:        `unknown label "cat"`,
		`[{"index":0,"bounding_boxes":{"red_square":[{"x_min":0.1,"y_min":0.1,"x_max":1.5,"y_max":0.6,"confidence":0.9}]}}]`: "coordinate outside 0..1",
		`[{"index":0,"bounding_boxes":{"red_square":[{"x_min":0.5,"y_min":0.1,"x_max":0.5,"y_max":0.6,"confidence":0.9}]}}]`: "empty box",
		`[{"index":0,"bounding_boxes":{"red_square":[{"x_min":0.1,"y_min":0.1,"x_max":0.5,"y_max":0.6,"confidence":1.9}]}}]`: "confidence outside 0..1",
		`[{"index":0,"bounding_boxes":{}}]`: "no boxes",
	}
	for data, want := range cases {
		a, err := ex.FromNative(json.RawMessage(data))
		require.NoError(t, err)
		assert.Contains(t, ex.Meaningful(a, fam), want)
	}
	_, err = ex.FromHTTP([]byte(`{"data":[]}`))
	require.NoError(t, err) // an empty list is extracted ...
	empty, _ := ex.FromHTTP([]byte(`{"data":[]}`))
	assert.NotEmpty(t, ex.Meaningful(empty, fam)) // ... but is not meaningful
	_, err = ex.FromHTTP([]byte(`{"usage":{}}`))
	assert.ErrorContains(t, err, "no data")

	near, _ := ex.FromNative(json.RawMessage(`[{"index":0,"bounding_boxes":{"red_square":[{"x_min":0.105,"y_min":0.1,"x_max":0.5,"y_max":0.6,"confidence":0.9}]}}]`))
	cmp := reg.Comparators["boxes-tolerance"]
	assert.Empty(t, cmp.Compare(h, near, fam))
	strict := &Family{Tolerance: 0}
	assert.Contains(t, cmp.Compare(h, near, strict), "red_square[0]: differs by")
	far, _ := ex.FromNative(json.RawMessage(`[{"index":0,"bounding_boxes":{"red_square":[]}}]`))
	assert.Contains(t, cmp.Compare(h, far, fam), "1 boxes over http, 0 native")
}
