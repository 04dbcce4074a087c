package endpoint

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The two types trtmc-qual ships are registered by their own files.
func TestBuiltinTypes(t *testing.T) {
	assert.Equal(t, []string{Chat, ImageRetrieval}, Names())
	assert.Equal(t, "chat or image_retrieval", OneOf(Plain))
	assert.Equal(t, `"chat" or "image_retrieval"`, OneOf(func(n string) string { return fmt.Sprintf("%+q", n) }))
	assert.True(t, NeedsTokenizer(Chat))
	assert.False(t, NeedsTokenizer(ImageRetrieval))
	assert.False(t, NeedsTokenizer("completions"), "an unknown type needs nothing; its validation names it")
	_, ok := Lookup("completions")
	assert.False(t, ok)
}

type named string

func (n named) Name() string                                       { return string(n) }
func (named) NeedsTokenizer() bool                                 { return false }
func (named) TakesGeneration() bool                                { return false }
func (named) CheckEntry(string) *EntryProblem                      { return nil }
func (named) LineText(Request) string                              { return "" }
func (named) Argv(string) []string                                 { return nil }
func (named) Body(Request, string, map[string]any) ([]byte, error) { return []byte("{}"), nil }
func (named) DefaultExtractor() string                             { return "" }
func (named) Counts() Count                                        { return Boxes }

// Register adds a type until the function it returns removes it; a name
// is registered once.
func TestRegister(t *testing.T) {
	undo := Register(named("audio"))
	assert.Equal(t, "audio, chat or image_retrieval", OneOf(Plain))
	typ, ok := Lookup("audio")
	require.True(t, ok)
	assert.Equal(t, "audio", typ.Name())
	assert.Panics(t, func() { Register(named("audio")) })
	assert.Panics(t, func() { Register(named(Chat)) })
	assert.Panics(t, func() { Register(named("")) })
	undo()
	_, ok = Lookup("audio")
	assert.False(t, ok)
	assert.Equal(t, []string{Chat, ImageRetrieval}, Names())
}

// The bodies AIPerf 0.13.0 posts (docs/aiperf.md): chat's keys in the
// order messages, model, stream, then the extra inputs sorted; one user
// message of a text part and an image_url part. image_retrieval's input
// list of one image_url, nothing else.
func TestBodies(t *testing.T) {
	r := Request{Image: "data:image/png;base64,AAA=", Question: "what <is> this?"}
	chat, _ := Lookup(Chat)
	b, err := chat.Body(r, "m-1", map[string]any{"temperature": 0, "max_tokens": 32})
	require.NoError(t, err)
	assert.Equal(t, `{"messages":[{"content":[{"type":"text","text":"what <is> this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAA="}}],"role":"user"}],"model":"m-1","stream":false,"max_tokens":32,"temperature":0}`, string(b))
	_, err = chat.Body(r, "m", map[string]any{"bad": func() {}})
	assert.ErrorContains(t, err, "extra input bad")

	ir, _ := Lookup(ImageRetrieval)
	b, err = ir.Body(r, "m-1", nil)
	require.NoError(t, err)
	assert.Equal(t, `{"input":[{"type":"image_url","url":"data:image/png;base64,AAA="}]}`, string(b))
}

// What each type adds to AIPerf's argv and the dataset line, and what it
// needs of a corpus entry.
func TestTypeRules(t *testing.T) {
	chat, _ := Lookup(Chat)
	ir, _ := Lookup(ImageRetrieval)
	assert.Equal(t, []string{"--tokenizer", "/tok"}, chat.Argv("/tok"))
	assert.Nil(t, chat.Argv(""))
	assert.Nil(t, ir.Argv("/tok"))
	r := Request{Image: "data:,", Question: "q?"}
	assert.Equal(t, "q?", chat.LineText(r))
	assert.Equal(t, "", ir.LineText(r))
	assert.Equal(t, &EntryProblem{Problem: "has no question", Need: "a vision-language corpus needs one question per image",
		Fix: "give every image of a vision-language corpus its question"}, chat.CheckEntry(" \t"))
	assert.Nil(t, chat.CheckEntry("q?"))
	assert.Nil(t, ir.CheckEntry(""))
	assert.True(t, chat.TakesGeneration())
	assert.False(t, ir.TakesGeneration())
	assert.Equal(t, Tokens, chat.Counts())
	assert.Equal(t, Boxes, ir.Counts())
	assert.Equal(t, "openai-chat-text", chat.DefaultExtractor())
	assert.Equal(t, "nim-bounding-boxes", ir.DefaultExtractor())
}
