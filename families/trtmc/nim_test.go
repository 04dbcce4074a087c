package trtmc

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Detections become the NIM data shape with the family's own class
// numbers; the result is what the nim-bounding-boxes extractor reads.
func TestToNIMKeepsTheFamilysClassNumbers(t *testing.T) {
	d := Detections{
		Scores:  []float64{0.9, 0.5, 0.7},
		Classes: []float64{17, 90, 17}, // 90: a COCO category id DETR reports as is
		Boxes:   []float64{64, 48, 320, 240, 0, 0, 640, 480, 320, 240, 480, 360},
	}
	raw, err := ToNIM(d, 640, 480, NIMOptions{Decimals: -1})
	require.NoError(t, err)
	assert.JSONEq(t, `[{"index":0,"bounding_boxes":{
		"17":[{"x_min":0.1,"y_min":0.1,"x_max":0.5,"y_max":0.5,"confidence":0.9},{"x_min":0.5,"y_min":0.5,"x_max":0.75,"y_max":0.75,"confidence":0.7}],
		"90":[{"x_min":0,"y_min":0,"x_max":1,"y_max":1,"confidence":0.5}]}}]`, string(raw))

	ex := families.DefaultRegistry().Extractors["nim-bounding-boxes"]
	a, err := ex.FromNative(raw)
	require.NoError(t, err)
	assert.Equal(t, 3, a.Boxes)
	assert.Empty(t, ex.NotMeaningful(a, &verdict.Semantics{Labels: families.LabelSpaces["coco-category-id"]}))
	assert.Contains(t, ex.NotMeaningful(a, &verdict.Semantics{Labels: families.LabelSpaces["coco-contiguous-80"]}), `unknown label "90"`,
		"a label outside the family's space is caught, not renumbered")
}

func TestToNIMClampRoundAndInconsistentArrays(t *testing.T) {
	d := Detections{Scores: []float64{0.123456}, Classes: []float64{3}, Boxes: []float64{-3, 10, 650, 333.333}}
	raw, err := ToNIM(d, 640, 480, NIMOptions{Clamp: true, Decimals: 4})
	require.NoError(t, err)
	var items []struct {
		BoundingBoxes map[string][]NIMBox `json:"bounding_boxes"`
	}
	require.NoError(t, json.Unmarshal(raw, &items))
	b := items[0].BoundingBoxes["3"][0]
	assert.Equal(t, NIMBox{XMin: 0, YMin: 0.0208, XMax: 1, YMax: 0.6944, Confidence: 0.1235}, b)
	raw, err = ToNIM(d, 640, 480, NIMOptions{Decimals: -1})
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"x_min":-0.0046875`, "without clamping the coordinate is kept as computed")

	for name, bad := range map[string]Detections{
		"short boxes":    {Scores: []float64{1}, Classes: []float64{1}, Boxes: []float64{1, 2, 3}},
		"classes":        {Scores: []float64{1}, Classes: nil, Boxes: []float64{1, 2, 3, 4}},
		"fraction class": {Scores: []float64{1}, Classes: []float64{1.5}, Boxes: []float64{1, 2, 3, 4}},
	} {
		_, err := ToNIM(bad, 10, 10, NIMOptions{})
		assert.Error(t, err, name)
	}
	_, err = ToNIM(Detections{}, 0, 10, NIMOptions{})
	assert.ErrorContains(t, err, "image size 0x10")
}
