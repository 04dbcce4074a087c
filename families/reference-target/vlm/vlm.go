// Package vlm is the reference vision-language model: it answers a fixed set of
// questions about an image from the shapes the detector perceives.
package vlm

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/detect"
)

// Shape is one perceived (or, for ground truth, drawn) shape.
type Shape struct {
	Colour, Shape string
	Area          int
	MinX, MinY    int
}

// Facts is everything the model knows about an image.
type Facts struct {
	Width, Height int
	Shapes        []Shape
}

// FactsFromDetections builds facts from detector output.
func FactsFromDetections(width, height int, dets []detect.Detection) Facts {
	f := Facts{Width: width, Height: height}
	for _, d := range dets {
		f.Shapes = append(f.Shapes, Shape{Colour: d.Colour, Shape: d.Shape, Area: d.Area, MinX: d.MinX, MinY: d.MinY})
	}
	return f
}

// Fallback is the answer to a question the model does not understand.
const Fallback = "I can only answer questions about the shapes, colours and size of the image."

// Question templates, as the corpus asks them.
const (
	QuestionCount     = "How many shapes are in the image?"
	QuestionDominant  = "What is the dominant colour?"
	QuestionSize      = "What is the image size?"
	QuestionLargest   = "Which shape is largest?"
	QuestionDescribe  = "Describe the image."
	questionColourFmt = "How many %s shapes are there?"
	questionHasFmt    = "Is there a %s %s?"
)

// QuestionColourCount asks how many shapes have a colour.
func QuestionColourCount(colour string) string { return fmt.Sprintf(questionColourFmt, colour) }

// QuestionHas asks whether a shape of a colour is present.
func QuestionHas(colour, shape string) string { return fmt.Sprintf(questionHasFmt, colour, shape) }

var (
	reCount       = regexp.MustCompile(`^how many (shapes|objects) (are|is) (there )?in the (image|picture)$|^how many shapes are there$`)
	reColourCount = regexp.MustCompile(`^how many ([a-z]+) (shapes|objects) (are there|are in the image|are in the picture)$`)
	reHas         = regexp.MustCompile(`^is there an? ([a-z]+) (square|disc|circle)( in the (image|picture))?$`)
	reDominant    = regexp.MustCompile(`^what is the (dominant|main|most common) colou?r( of the shapes| in the (image|picture))?$`)
	reSize        = regexp.MustCompile(`^what (is|are) the (image|picture) (size|dimensions)$|^how (big|large) is the (image|picture)$`)
	reLargest     = regexp.MustCompile(`^which (shape|object) is (the )?(largest|biggest)$|^what is the (largest|biggest) (shape|object)$`)
	reDescribe    = regexp.MustCompile(`^(describe the (image|picture)|list the shapes( from left to right)?|what shapes are in the (image|picture))$`)
)

// Normalize lower-cases a question, collapses white space and drops trailing
// punctuation, so that small spelling variants are understood.
func Normalize(q string) string {
	q = strings.ToLower(strings.Join(strings.Fields(q), " "))
	return strings.TrimRight(q, "?.! ")
}

// Answer answers question about the facts. The answer is deterministic.
func Answer(question string, f Facts) string {
	q := Normalize(question)
	switch {
	case reCount.MatchString(q):
		return strconv.Itoa(len(f.Shapes))
	case reColourCount.MatchString(q):
		colour := reColourCount.FindStringSubmatch(q)[1]
		n := 0
		for _, s := range f.Shapes {
			if s.Colour == colour {
				n++
			}
		}
		return strconv.Itoa(n)
	case reHas.MatchString(q):
		m := reHas.FindStringSubmatch(q)
		colour, shape := m[1], m[2]
		if shape == "circle" {
			shape = detect.ShapeDisc
		}
		for _, s := range f.Shapes {
			if s.Colour == colour && s.Shape == shape {
				return "yes"
			}
		}
		return "no"
	case reDominant.MatchString(q):
		return dominantColour(f)
	case reSize.MatchString(q):
		return fmt.Sprintf("%dx%d", f.Width, f.Height)
	case reLargest.MatchString(q):
		if len(f.Shapes) == 0 {
			return "none"
		}
		largest := slices.MaxFunc(f.Shapes, func(a, b Shape) int {
			// On equal areas the first in reading order wins.
			return cmp.Or(cmp.Compare(a.Area, b.Area), cmp.Compare(b.MinY, a.MinY), cmp.Compare(b.MinX, a.MinX))
		})
		return largest.Colour + " " + largest.Shape
	case reDescribe.MatchString(q):
		return describe(f)
	}
	return Fallback
}

// dominantColour is the colour covering the largest total area among the
// shapes ("none" without shapes); ties go to the alphabetically first colour.
func dominantColour(f Facts) string {
	areas := map[string]int{}
	for _, s := range f.Shapes {
		areas[s.Colour] += s.Area
	}
	best, bestArea := "none", 0
	for _, colour := range slices.Sorted(maps.Keys(areas)) {
		if areas[colour] > bestArea {
			best, bestArea = colour, areas[colour]
		}
	}
	return best
}

// describe lists the shapes from left to right: "2 shapes: red square, blue disc".
func describe(f Facts) string {
	shapes := slices.Clone(f.Shapes)
	slices.SortStableFunc(shapes, func(a, b Shape) int {
		return cmp.Or(cmp.Compare(a.MinX, b.MinX), cmp.Compare(a.MinY, b.MinY))
	})
	noun := "shapes"
	if len(shapes) == 1 {
		noun = "shape"
	}
	if len(shapes) == 0 {
		return "0 shapes"
	}
	names := make([]string, len(shapes))
	for i, s := range shapes {
		names[i] = s.Colour + " " + s.Shape
	}
	return fmt.Sprintf("%d %s: %s", len(shapes), noun, strings.Join(names, ", "))
}

// CountTokens counts tokens the way the reference model does: white-space
// separated words.
func CountTokens(text string) int { return len(strings.Fields(text)) }

// Truncate cuts text to at most maxTokens words (maxTokens <= 0 means no
// limit) and reports whether it was cut.
func Truncate(text string, maxTokens int) (string, bool) {
	words := strings.Fields(text)
	if maxTokens <= 0 || len(words) <= maxTokens {
		return text, false
	}
	return strings.Join(words[:maxTokens], " "), true
}
