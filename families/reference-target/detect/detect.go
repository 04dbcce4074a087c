// Package detect is the reference detector: it finds coloured squares and
// discs on a plain light background by colour segmentation and connected
// components. Both reference families perceive images through it.
package detect

import (
	"cmp"
	"math"
	"slices"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/imaging"
)

// Shapes the detector tells apart.
const (
	ShapeSquare = "square"
	ShapeDisc   = "disc"
)

// Label is the class label of a colour and shape, e.g. "red_square".
func Label(colour, shape string) string { return colour + "_" + shape }

// Detection is one found shape. The pixel box is [MinX, MaxX) x [MinY, MaxY).
type Detection struct {
	Colour, Shape, Label   string
	MinX, MinY, MaxX, MaxY int
	Area                   int
	Fill                   float64
	Confidence             float64
}

// Detector holds the parameters of a bundle.
type Detector struct {
	params bundle.Params
	fp16   bool
}

// New returns the detector of a bundle.
func New(b *bundle.Bundle) *Detector {
	return &Detector{params: b.Params, fp16: b.Precision == bundle.PrecisionFP16}
}

// Detect returns the shapes in img ordered top to bottom, then left to right.
func (d *Detector) Detect(img *imaging.Image) []Detection {
	w, h := img.Width, img.Height
	class, dist := d.classify(img)

	seen := make([]bool, w*h)
	var dets []Detection
	var stack []int
	for start := range class {
		if class[start] < 0 || seen[start] {
			continue
		}
		c := class[start]
		minX, minY, maxX, maxY := w, h, -1, -1
		area := 0
		distSum := 0.0
		seen[start] = true
		stack = append(stack[:0], start)
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			x, y := p%w, p/w
			area++
			distSum += dist[p]
			minX, maxX = min(minX, x), max(maxX, x)
			minY, maxY = min(minY, y), max(maxY, y)
			for _, q := range [4]int{p - 1, p + 1, p - w, p + w} {
				switch {
				case q < 0 || q >= len(class):
					continue
				case q == p-1 && x == 0, q == p+1 && x == w-1:
					continue
				}
				if !seen[q] && class[q] == c {
					seen[q] = true
					stack = append(stack, q)
				}
			}
		}
		if area < d.params.MinArea {
			continue
		}
		dets = append(dets, d.describe(c, minX, minY, maxX+1, maxY+1, area, distSum/float64(area)))
	}
	slices.SortFunc(dets, func(a, b Detection) int {
		return cmp.Or(cmp.Compare(a.MinY, b.MinY), cmp.Compare(a.MinX, b.MinX), cmp.Compare(a.Label, b.Label))
	})
	return dets
}

// classify assigns each pixel the index of its nearest palette colour, or -1
// when that colour is farther than MaxColourDistance; dist holds the distance.
func (d *Detector) classify(img *imaging.Image) (class []int, dist []float64) {
	n := img.Width * img.Height
	class = make([]int, n)
	dist = make([]float64, n)
	limit := d.params.MaxColourDistance * d.params.MaxColourDistance
	for p := range n {
		r, g, b := float64(img.Pix[3*p]), float64(img.Pix[3*p+1]), float64(img.Pix[3*p+2])
		best, bestD := -1, math.Inf(1)
		for i, c := range d.params.Palette {
			dr, dg, db := r-float64(c.RGB[0]), g-float64(c.RGB[1]), b-float64(c.RGB[2])
			if sq := dr*dr + dg*dg + db*db; sq < bestD {
				best, bestD = i, sq
			}
		}
		if bestD > limit {
			best = -1
		}
		class[p], dist[p] = best, math.Sqrt(bestD)
	}
	return class, dist
}

func (d *Detector) describe(c, minX, minY, maxX, maxY, area int, meanDist float64) Detection {
	fill := float64(area) / float64((maxX-minX)*(maxY-minY))
	shape, ideal := ShapeDisc, math.Pi/4
	if fill >= d.params.SquareMinFill {
		shape, ideal = ShapeSquare, 1
	}
	shapeScore := 1 - min(1, 2*math.Abs(fill-ideal))
	colourScore := 1 - min(1, meanDist/d.params.MaxColourDistance)
	floor := d.params.ConfidenceFloor
	conf := floor + (1-floor)*shapeScore*colourScore
	if d.fp16 {
		conf = min(1, bundle.RoundFP16(conf))
	} else {
		conf = Round4(conf)
	}
	colour := d.params.Palette[c].Name
	return Detection{
		Colour: colour, Shape: shape, Label: Label(colour, shape),
		MinX: minX, MinY: minY, MaxX: maxX, MaxY: maxY,
		Area: area, Fill: fill, Confidence: conf,
	}
}

// Box is one bounding box of the /v1/infer answer, normalised to 0..1 from the
// top left of the image.
type Box struct {
	XMin       float64 `json:"x_min"`
	YMin       float64 `json:"y_min"`
	XMax       float64 `json:"x_max"`
	YMax       float64 `json:"y_max"`
	Confidence float64 `json:"confidence"`
}

// Boxes groups detections by label, normalised by the image size; within a
// label, boxes are ordered by confidence (highest first), then position.
func Boxes(dets []Detection, width, height int) map[string][]Box {
	out := map[string][]Box{}
	for _, d := range dets {
		out[d.Label] = append(out[d.Label], Box{
			XMin:       Round4(float64(d.MinX) / float64(width)),
			YMin:       Round4(float64(d.MinY) / float64(height)),
			XMax:       Round4(float64(d.MaxX) / float64(width)),
			YMax:       Round4(float64(d.MaxY) / float64(height)),
			Confidence: d.Confidence,
		})
	}
	for _, boxes := range out {
		slices.SortStableFunc(boxes, func(a, b Box) int {
			return cmp.Or(cmp.Compare(b.Confidence, a.Confidence), cmp.Compare(a.YMin, b.YMin), cmp.Compare(a.XMin, b.XMin))
		})
	}
	return out
}

// Round4 rounds v to four decimal places.
func Round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }
