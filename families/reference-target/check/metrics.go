package check

import (
	"cmp"
	"slices"
)

// Box is [x_min, y_min, x_max, y_max].
type Box [4]float64

// GroundTruth is one true object of an image.
type GroundTruth struct {
	Image int
	Label string
	Box   Box
}

// Prediction is one detection of an image.
type Prediction struct {
	Image int
	Label string
	Box   Box
	Score float64
}

// IoU is the intersection over union of two boxes.
func IoU(a, b Box) float64 {
	iw := min(a[2], b[2]) - max(a[0], b[0])
	ih := min(a[3], b[3]) - max(a[1], b[1])
	if iw <= 0 || ih <= 0 {
		return 0
	}
	inter := iw * ih
	union := (a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - inter
	if union <= 0 {
		return 0
	}
	return inter / union
}

// IoUThresholds are COCO's thresholds 0.50, 0.55, ..., 0.95.
func IoUThresholds() []float64 {
	out := make([]float64, 10)
	for i := range out {
		out[i] = 0.5 + 0.05*float64(i)
	}
	return out
}

// MeanAP is the COCO-style mean average precision over the labels that have
// ground truth, at one IoU threshold: per label, predictions are matched
// greedily in score order to the best unmatched true box of the same image,
// and AP is the 101-point interpolated area under the precision/recall curve.
// Predictions of labels without ground truth are ignored, as in COCO.
func MeanAP(truth []GroundTruth, preds []Prediction, threshold float64) float64 {
	labels := map[string]bool{}
	for _, g := range truth {
		labels[g.Label] = true
	}
	if len(labels) == 0 {
		return 0
	}
	sum := 0.0
	for label := range labels {
		sum += averagePrecision(truth, preds, label, threshold)
	}
	return sum / float64(len(labels))
}

// MeanAPRange is the mean of MeanAP over the thresholds.
func MeanAPRange(truth []GroundTruth, preds []Prediction, thresholds []float64) float64 {
	sum := 0.0
	for _, t := range thresholds {
		sum += MeanAP(truth, preds, t)
	}
	return sum / float64(len(thresholds))
}

func averagePrecision(truth []GroundTruth, preds []Prediction, label string, threshold float64) float64 {
	byImage := map[int][]Box{}
	total := 0
	for _, g := range truth {
		if g.Label == label {
			byImage[g.Image] = append(byImage[g.Image], g.Box)
			total++
		}
	}
	var ps []Prediction
	for _, p := range preds {
		if p.Label == label {
			ps = append(ps, p)
		}
	}
	slices.SortStableFunc(ps, func(a, b Prediction) int { return cmp.Compare(b.Score, a.Score) })

	matched := map[int][]bool{}
	for img, boxes := range byImage {
		matched[img] = make([]bool, len(boxes))
	}
	precision := make([]float64, len(ps))
	recall := make([]float64, len(ps))
	tp := 0
	for i, p := range ps {
		best, bestIoU := -1, threshold
		for j, g := range byImage[p.Image] {
			if iou := IoU(p.Box, g); !matched[p.Image][j] && iou >= bestIoU {
				best, bestIoU = j, iou
			}
		}
		if best >= 0 {
			matched[p.Image][best] = true
			tp++
		}
		precision[i] = float64(tp) / float64(i+1)
		recall[i] = float64(tp) / float64(total)
	}
	// Make precision monotonically decreasing, then sample it at 101 recalls.
	for i := len(precision) - 2; i >= 0; i-- {
		precision[i] = max(precision[i], precision[i+1])
	}
	sum := 0.0
	for k := range 101 {
		r := float64(k) / 100
		i, _ := slices.BinarySearch(recall, r)
		// recall is non-decreasing; BinarySearch finds the first index >= r.
		if i < len(recall) {
			sum += precision[i]
		}
	}
	return sum / 101
}
