package families

import "strconv"

// LabelSpaces are the built-in label spaces a family may name with
// `label_space:` instead of listing its labels. A label is the class number
// exactly as the family's Task reports it, written in decimal: detection
// answers are never renumbered to look like another family's.
//
//   - coco-contiguous-80: the 80 COCO classes numbered 0..79, as the
//     Ultralytics detectors (YOLOv5/v8/v10/11) and RT-DETR's checkpoint
//     number them (TRTMC families/yolo11/tests/benchmark/yolo11n.yaml:
//     label_space: coco-contiguous-80).
//   - coco-category-id: the 80 COCO category ids 1..90 with the ten unused
//     ids left out, as DETR-style Hugging Face checkpoints number them
//     (TRTMC apps/aiperf_qual/config/models/detr-resnet-50.yaml:
//     label_space: coco-category-id).
var LabelSpaces = map[string][]string{
	"coco-contiguous-80": numbered(0, 79, nil),
	"coco-category-id":   numbered(1, 90, map[int]bool{12: true, 26: true, 29: true, 30: true, 45: true, 66: true, 68: true, 69: true, 71: true, 83: true}),
}

func numbered(from, to int, skip map[int]bool) []string {
	var out []string
	for i := from; i <= to; i++ {
		if !skip[i] {
			out = append(out, strconv.Itoa(i))
		}
	}
	return out
}
