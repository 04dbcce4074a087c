package families

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

func TestChatTextExtractAndCompare(t *testing.T) {
	reg := DefaultRegistry()
	ex := reg.Extractors["openai-chat-text"]
	body := `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"three shapes"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`
	h, err := ex.FromHTTP([]byte(body))
	require.NoError(t, err)
	assert.Equal(t, `"three shapes"`, string(h.Canonical))
	assert.Equal(t, 5, h.Tokens, "the server's usage count, not a word count")
	assert.Empty(t, ex.NotMeaningful(h, nil))

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
	assert.Equal(t, "empty answer text", ex.NotMeaningful(empty, nil))
}

// The output size is the model's own token count; with no count a text
// answer reports 0 (unknown), never a whitespace word count.
func TestChatTokensComeFromTheModel(t *testing.T) {
	reg := DefaultRegistry()
	ex := reg.Extractors["openai-chat-text"]
	cmp := reg.Comparators["exact"]
	noUsage, err := ex.FromHTTP([]byte(`{"object":"chat.completion","choices":[{"message":{"content":"a b c d"},"finish_reason":"stop"}]}`))
	require.NoError(t, err)
	assert.Equal(t, 0, noUsage.Tokens)

	nat, err := ex.FromNative(json.RawMessage(`{"text":"a b c d","completion_tokens":7}`))
	require.NoError(t, err)
	assert.Equal(t, `"a b c d"`, string(nat.Canonical))
	assert.Equal(t, 7, nat.Tokens)
	assert.Empty(t, cmp.Compare(noUsage, nat, nil), "an unknown count does not decide")

	withUsage, err := ex.FromHTTP([]byte(`{"object":"chat.completion","choices":[{"message":{"content":"a b c d"},"finish_reason":"length"}],"usage":{"completion_tokens":6}}`))
	require.NoError(t, err)
	assert.Contains(t, cmp.Compare(withUsage, nat, nil), "6 completion tokens over http and 7 native")
	same, _ := ex.FromNative(json.RawMessage(`{"text":"a b c d","completion_tokens":6}`))
	assert.Empty(t, cmp.Compare(withUsage, same, nil))

	for name, bad := range map[string]string{
		"negative count": `{"text":"a","completion_tokens":-1}`,
		"float count":    `{"text":"a","completion_tokens":1.5}`,
		"unknown field":  `{"text":"a","tokens":1}`,
		"no text":        `{"completion_tokens":1}`,
		"a list":         `["a"]`,
	} {
		_, err := ex.FromNative(json.RawMessage(bad))
		assert.Error(t, err, name)
	}
	_, err = ex.FromHTTP([]byte(`{"object":"chat.completion","choices":[{"message":{"content":"a"},"finish_reason":"stop"}],"usage":{"completion_tokens":"many"}}`))
	assert.ErrorContains(t, err, "usage.completion_tokens")
}

// finish_reason null (some trtmc-server versions) is complete only where
// the family says so.
func TestChatFinishReasonNullIsTheFamilysCall(t *testing.T) {
	ex := DefaultRegistry().Extractors["openai-chat-text"]
	a, err := ex.FromHTTP([]byte(`{"object":"chat.completion","choices":[{"message":{"content":"red"},"finish_reason":null}],"usage":{"completion_tokens":1}}`))
	require.NoError(t, err)
	assert.Contains(t, ex.NotMeaningful(a, nil), "finish_reason is null")
	assert.Contains(t, ex.NotMeaningful(a, &verdict.Semantics{FinishReasonNull: verdict.FinishNullIncomplete}), "finish_reason is null")
	assert.Empty(t, ex.NotMeaningful(a, &verdict.Semantics{FinishReasonNull: verdict.FinishNullComplete}))
	_, err = ex.FromHTTP([]byte(`{"object":"chat.completion","choices":[{"message":{"content":"red"},"finish_reason":7}]}`))
	assert.ErrorContains(t, err, "not a string")
}

func TestLabelSpaces(t *testing.T) {
	c80 := LabelSpaces["coco-contiguous-80"]
	require.Len(t, c80, 80)
	assert.Equal(t, "0", c80[0])
	assert.Equal(t, "79", c80[79])
	ids := LabelSpaces["coco-category-id"]
	require.Len(t, ids, 80)
	assert.Equal(t, "1", ids[0])
	assert.Equal(t, "90", ids[79])
	assert.NotContains(t, ids, "12")
	assert.NotContains(t, ids, "0")

	doc := `schema: trtmc-qual/families/v1
families:
  det:
    endpoint_type: image_retrieval
    route: /v1/infer
    server: [srv]
    readiness: http://x
    native: [nat]
    extractor: nim-bounding-boxes
    comparator: boxes-tolerance
    label_space: coco-category-id
`
	cfg, err := Parse("f.yaml", []byte(doc))
	require.NoError(t, err)
	assert.Equal(t, ids, cfg.Families["det"].Labels)
	_, err = Parse("f.yaml", []byte(strings.Replace(doc, "coco-category-id", "imagenet", 1)))
	assert.ErrorContains(t, err, `f.yaml:3: families.det.label_space: unknown label space "imagenet"`)
	_, err = Parse("f.yaml", []byte(doc+"    labels: [\"1\"]\n"))
	assert.ErrorContains(t, err, "give labels or label_space, not both")
	_, err = Parse("f.yaml", []byte(doc+"    finish_reason_null: maybe\n"))
	assert.ErrorContains(t, err, "finish_reason_null: must be complete or incomplete")
}

// task_time names the source of the row's Task latency; the reference
// families keep the server's records.
func TestTaskTimeSource(t *testing.T) {
	doc := `schema: trtmc-qual/families/v1
families:
  det:
    endpoint_type: image_retrieval
    route: /v1/infer
    server: [srv]
    readiness: http://x
    native: [nat]
    extractor: nim-bounding-boxes
    comparator: boxes-tolerance
`
	cfg, err := Parse("f.yaml", []byte(doc))
	require.NoError(t, err)
	assert.Equal(t, verdict.TaskTimeServer, cfg.Families["det"].TaskTimeSource(), "the default")
	for _, v := range []string{verdict.TaskTimeServer, verdict.TaskTimeNative} {
		cfg, err = Parse("f.yaml", []byte(doc+"    task_time: "+v+"\n"))
		require.NoError(t, err)
		assert.Equal(t, v, cfg.Families["det"].TaskTimeSource())
	}
	_, err = Parse("f.yaml", []byte(doc+"    task_time: handler\n"))
	assert.ErrorContains(t, err, `f.yaml:3: families.det.task_time: must be server (the server's request records' task_ms) or native (the native answers' task_ms), got "handler"`)
	shipped, err := Load("families.yaml")
	require.NoError(t, err)
	for _, name := range shipped.Names() {
		assert.Equal(t, verdict.TaskTimeServer, shipped.Families[name].TaskTimeSource(), name)
	}
}

// The HTTP answer's usage.completion_tokens is a chat row's output size:
// an answer without it is not meaningful, never counted as 0 tokens.
func TestChatAnswerWithoutTokenCountIsNotMeaningful(t *testing.T) {
	ex := DefaultRegistry().Extractors["openai-chat-text"]
	for name, body := range map[string]string{
		"no usage":                `{"object":"chat.completion","choices":[{"message":{"content":"red"},"finish_reason":"stop"}]}`,
		"usage without the count": `{"object":"chat.completion","choices":[{"message":{"content":"red"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3}}`,
		"a null count":            `{"object":"chat.completion","choices":[{"message":{"content":"red"},"finish_reason":"stop"}],"usage":{"completion_tokens":null}}`,
		"a zero count":            `{"object":"chat.completion","choices":[{"message":{"content":"red"},"finish_reason":"stop"}],"usage":{"completion_tokens":0}}`,
	} {
		a, err := ex.FromHTTP([]byte(body))
		require.NoError(t, err, name)
		assert.Contains(t, ex.NotMeaningful(a, nil), "no usage.completion_tokens", name)
	}
	a, err := ex.FromHTTP([]byte(`{"object":"chat.completion","choices":[{"message":{"content":"red"},"finish_reason":"stop"}],"usage":{"completion_tokens":2}}`))
	require.NoError(t, err)
	assert.Empty(t, ex.NotMeaningful(a, nil))
	assert.Equal(t, 2, a.Tokens)
}

func TestBoxesMeaningfulAndTolerance(t *testing.T) {
	reg := DefaultRegistry()
	ex := reg.Extractors["nim-bounding-boxes"]
	fam := &verdict.Semantics{Labels: []string{"red_square"}, Tolerance: 0.01}
	good := `{"data":[{"index":0,"bounding_boxes":{"red_square":[{"x_min":0.1,"y_min":0.1,"x_max":0.5,"y_max":0.6,"confidence":0.9}]}}],"usage":{}}`
	h, err := ex.FromHTTP([]byte(good))
	require.NoError(t, err)
	assert.Equal(t, 1, h.Boxes)
	assert.Empty(t, ex.NotMeaningful(h, fam))

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
		assert.Contains(t, ex.NotMeaningful(a, fam), want)
	}
	_, err = ex.FromHTTP([]byte(`{"data":[]}`))
	require.NoError(t, err) // an empty list is extracted ...
	empty, _ := ex.FromHTTP([]byte(`{"data":[]}`))
	assert.NotEmpty(t, ex.NotMeaningful(empty, fam)) // ... but is not meaningful
	_, err = ex.FromHTTP([]byte(`{"usage":{}}`))
	assert.ErrorContains(t, err, "no data")

	near, _ := ex.FromNative(json.RawMessage(`[{"index":0,"bounding_boxes":{"red_square":[{"x_min":0.105,"y_min":0.1,"x_max":0.5,"y_max":0.6,"confidence":0.9}]}}]`))
	cmp := reg.Comparators["boxes-tolerance"]
	assert.Empty(t, cmp.Compare(h, near, fam))
	strict := &verdict.Semantics{Tolerance: 0}
	assert.Contains(t, cmp.Compare(h, near, strict), "red_square[0]: differs by")
	far, _ := ex.FromNative(json.RawMessage(`[{"index":0,"bounding_boxes":{"red_square":[]}}]`))
	assert.Contains(t, cmp.Compare(h, far, fam), "1 boxes over http, 0 native")
}

// boxes-iou compares detections as TRTMC's detection parity does: the
// same boxes per label, each pair overlapping by min_box_iou and with
// confidences within max_score_abs_error (YOLO: 0.9 and 0.005; DETR: 0.5
// and 0.05).
func TestBoxesIoU(t *testing.T) {
	cmp := DefaultRegistry().Comparators["boxes-iou"]
	ans := func(x0, conf float64) Answer {
		a, err := nimBoxes{}.FromNative([]byte(fmt.Sprintf(`[{"index":0,"bounding_boxes":{"17":[{"x_min":%g,"y_min":0.1,"x_max":0.5,"y_max":0.5,"confidence":%g}]}}]`, x0, conf)))
		require.NoError(t, err)
		return a
	}
	yolo := &verdict.Semantics{MinBoxIoU: 0.9, MaxScoreAbsError: 0.005}
	assert.Empty(t, cmp.Compare(ans(0.1, 0.9), ans(0.1, 0.9), yolo))
	assert.Empty(t, cmp.Compare(ans(0.1, 0.9), ans(0.11, 0.904), yolo), "IoU 0.975 and 0.004 apart: the same detection")
	assert.Contains(t, cmp.Compare(ans(0.1, 0.9), ans(0.2, 0.9), yolo), "box IoU 0.7500 < min_box_iou 0.9")
	assert.Contains(t, cmp.Compare(ans(0.1, 0.9), ans(0.1, 0.91), yolo), "confidence differs by 0.01 > max_score_abs_error 0.005")
	detr := &verdict.Semantics{MinBoxIoU: 0.5, MaxScoreAbsError: 0.05}
	assert.Empty(t, cmp.Compare(ans(0.1, 0.9), ans(0.2, 0.94), detr), "DETR's looser parity")
	two, err := nimBoxes{}.FromNative([]byte(`[{"index":0,"bounding_boxes":{"17":[{"x_min":0.1,"y_min":0.1,"x_max":0.5,"y_max":0.5,"confidence":0.9},{"x_min":0.6,"y_min":0.6,"x_max":0.9,"y_max":0.9,"confidence":0.5}]}}]`))
	require.NoError(t, err)
	assert.Contains(t, cmp.Compare(ans(0.1, 0.9), two, yolo), "17: 1 boxes over http, 2 native")
	assert.InDelta(t, 1.0/7, IoU(Box{XMin: 0, YMin: 0, XMax: 2, YMax: 2}, Box{XMin: 1, YMin: 1, XMax: 3, YMax: 3}), 1e-12)
}

func TestBoxesIoUConfiguration(t *testing.T) {
	doc := func(extra string) []byte {
		return []byte(`schema: trtmc-qual/families/v1
families:
  d:
    task: object_detection
    endpoint_type: image_retrieval
    route: /v1/infer
    server: ["s"]
    readiness: "http://{host}:{port}/health/ready"
    native: ["n"]
    extractor: nim-bounding-boxes
` + extra)
	}
	_, err := Parse("f.yaml", doc("    comparator: boxes-iou\n"))
	assert.ErrorContains(t, err, "boxes-iou needs min_box_iou in (0, 1], got 0")
	_, err = Parse("f.yaml", doc("    comparator: boxes-tolerance\n    min_box_iou: 0.5\n"))
	assert.ErrorContains(t, err, "min_box_iou and max_score_abs_error are the boxes-iou comparator's")
	_, err = Parse("f.yaml", doc("    comparator: boxes-iou\n    min_box_iou: 0.9\n    max_score_abs_error: 0.005\n"))
	assert.NoError(t, err)
}
