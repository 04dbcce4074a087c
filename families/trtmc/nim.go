package trtmc

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Detections is TRTMC's detection output (`trtmc detect`, the detection
// Task): parallel arrays, boxes flat as x0,y0,x1,y1 in source-image pixels
// (families/yolo11/tests/test_e2e.py).
type Detections struct {
	Scores  []float64 `json:"scores"`
	Classes []float64 `json:"classes"`
	Boxes   []float64 `json:"boxes"`
}

// NIMOptions say how pixel boxes become the NIM shape. They are the
// documented assumptions about trtmc-server's /v1/infer adapter, set per
// family in families/trtmc.yaml.
type NIMOptions struct {
	// Clamp limits normalised coordinates to [0, 1].
	Clamp bool
	// Decimals rounds coordinates and confidences (< 0: no rounding).
	Decimals int
}

// NIMBox is one box of a NIM /v1/infer answer.
type NIMBox struct {
	XMin       float64 `json:"x_min"`
	YMin       float64 `json:"y_min"`
	XMax       float64 `json:"x_max"`
	YMax       float64 `json:"y_max"`
	Confidence float64 `json:"confidence"`
}

type nimItem struct {
	Index         int                 `json:"index"`
	BoundingBoxes map[string][]NIMBox `json:"bounding_boxes"`
}

// ToNIM converts detections on a width x height image to the `data` array
// of a NIM /v1/infer answer: one item, boxes grouped under the class number
// exactly as the family reports it (never renamed or renumbered),
// coordinates divided by the source image size, in detection order.
func ToNIM(d Detections, width, height int, o NIMOptions) (json.RawMessage, error) {
	n := len(d.Scores)
	if len(d.Classes) != n || len(d.Boxes) != 4*n {
		return nil, fmt.Errorf("inconsistent detection arrays: %d scores, %d classes, %d box values (want 4 per detection)",
			n, len(d.Classes), len(d.Boxes))
	}
	if width <= 0 || height <= 0 {
		return nil, fmt.Errorf("image size %dx%d", width, height)
	}
	boxes := map[string][]NIMBox{}
	for i := 0; i < n; i++ {
		c := d.Classes[i]
		if c != math.Trunc(c) || c < 0 || c > math.MaxInt32 {
			return nil, fmt.Errorf("detection %d: class %v is not a class number", i, c)
		}
		for _, v := range append([]float64{d.Scores[i]}, d.Boxes[4*i:4*i+4]...) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("detection %d: non-finite value", i)
			}
		}
		b := NIMBox{
			XMin: o.coord(d.Boxes[4*i] / float64(width)), YMin: o.coord(d.Boxes[4*i+1] / float64(height)),
			XMax: o.coord(d.Boxes[4*i+2] / float64(width)), YMax: o.coord(d.Boxes[4*i+3] / float64(height)),
			Confidence: o.round(d.Scores[i]),
		}
		label := strconv.Itoa(int(c))
		boxes[label] = append(boxes[label], b)
	}
	return json.Marshal([]nimItem{{Index: 0, BoundingBoxes: boxes}})
}

func (o NIMOptions) coord(v float64) float64 {
	if o.Clamp {
		v = math.Min(1, math.Max(0, v))
	}
	return o.round(v)
}

func (o NIMOptions) round(v float64) float64 {
	if o.Decimals < 0 {
		return v
	}
	p := math.Pow(10, float64(o.Decimals))
	return math.Round(v*p) / p
}
