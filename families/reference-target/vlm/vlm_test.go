package vlm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/vlm"
)

func TestAnswer(t *testing.T) {
	t.Parallel()
	facts := vlm.Facts{Width: 96, Height: 64, Shapes: []vlm.Shape{
		{Colour: "red", Shape: "square", Area: 100, MinX: 50, MinY: 2},
		{Colour: "blue", Shape: "disc", Area: 300, MinX: 5, MinY: 30},
		{Colour: "red", Shape: "disc", Area: 150, MinX: 30, MinY: 10},
	}}
	for q, want := range map[string]string{
		vlm.QuestionCount:                     "3",
		"how many shapes are there":           "3",
		vlm.QuestionDominant:                  "blue",
		"What is the dominant color?":         "blue",
		vlm.QuestionSize:                      "96x64",
		"  What are the image dimensions?  ":  "96x64",
		vlm.QuestionLargest:                   "blue disc",
		vlm.QuestionColourCount("red"):        "2",
		vlm.QuestionColourCount("green"):      "0",
		vlm.QuestionHas("red", "disc"):        "yes",
		"Is there a red circle in the image?": "yes",
		vlm.QuestionHas("blue", "square"):     "no",
		vlm.QuestionDescribe:                  "3 shapes: blue disc, red disc, red square",
		"What is the meaning of life?":        vlm.Fallback,
	} {
		assert.Equal(t, want, vlm.Answer(q, facts), q)
	}
}

func TestAnswerWithoutShapes(t *testing.T) {
	t.Parallel()
	f := vlm.Facts{Width: 10, Height: 20}
	assert.Equal(t, "0", vlm.Answer(vlm.QuestionCount, f))
	assert.Equal(t, "none", vlm.Answer(vlm.QuestionDominant, f))
	assert.Equal(t, "none", vlm.Answer(vlm.QuestionLargest, f))
	assert.Equal(t, "0 shapes", vlm.Answer(vlm.QuestionDescribe, f))
	one := vlm.Facts{Shapes: []vlm.Shape{{Colour: "green", Shape: "square", Area: 1}}}
	assert.Equal(t, "1 shape: green square", vlm.Answer(vlm.QuestionDescribe, one))
}

func TestTruncateAndCount(t *testing.T) {
	t.Parallel()
	text := "3 shapes: blue disc, red disc"
	assert.Equal(t, 6, vlm.CountTokens(text))
	got, cut := vlm.Truncate(text, 3)
	assert.Equal(t, "3 shapes: blue", got)
	assert.True(t, cut)
	got, cut = vlm.Truncate(text, 6)
	assert.Equal(t, text, got)
	assert.False(t, cut)
	got, cut = vlm.Truncate(text, 0)
	assert.Equal(t, text, got)
	assert.False(t, cut)
}
