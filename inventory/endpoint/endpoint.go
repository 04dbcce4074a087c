// Package endpoint holds the AIPerf endpoint types trtmc-qual drives, as
// plug-ins: one Type per endpoint type, one file each (chat.go,
// image_retrieval.go), each registered once by its own file. Everything
// that differs between endpoint types is a method of Type — the dataset
// line, AIPerf's command-line extras, whether a tokenizer is needed, the
// request body AIPerf posts, what a corpus entry must hold (the dataset
// writer and doctor check it), the default answer extractor and what a
// row counts of the answers —, and every place that used to ask "is it
// chat?" calls the Type instead: the inventory and families.yaml validate
// endpoint_type against the registry, qual/aiperf writes the dataset,
// builds argv and the request bodies, qual's preflight resolves the
// tokenizer, qual/streamjoin counts, qual/doctor checks.
//
// It lives at the inventory's floor because the inventory's workload names
// the type (workload.endpoint_type): the inventory validates it here, and
// every layer above (families, qual) imports it downward. It is a leaf: it
// imports nothing of this module.
//
// The registry is the plug-in pattern of image.RegisterFormat and
// database/sql.Register: a type's file registers it from init, so adding an
// endpoint type is adding a file (docs/design.md, "Adding an endpoint
// type"); a test registers a type of its own with Register and removes it
// again with the function Register returns.
package endpoint

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Type is one AIPerf endpoint type.
type Type interface {
	// Name is the type's name: workload.endpoint_type in the inventory,
	// endpoint_type in families.yaml, AIPerf's --endpoint-type.
	Name() string
	// NeedsTokenizer says whether AIPerf needs a local tokenizer directory
	// (--tokenizer) for the type; a type that does not need one refuses
	// one (AIPerf rejects tokenizer flags there).
	NeedsTokenizer() bool
	// TakesGeneration says whether the workload's generation controls
	// (AIPerf --extra-inputs, merged into every body) apply to the type.
	TakesGeneration() bool
	// CheckEntry is what a corpus entry must hold for the type, looked at
	// before any image is encoded (the dataset writer and doctor call it):
	// nil when the entry's question is fine.
	CheckEntry(question string) *EntryProblem
	// LineText is the text of the entry's dataset line (AIPerf single_turn
	// "text"); "" writes a line without text.
	LineText(r Request) string
	// Argv is what the type adds to AIPerf's command line, given the
	// resolved tokenizer directory ("" when none).
	Argv(tokenizer string) []string
	// Body is the request body AIPerf 0.13.0 posts for one entry, compact
	// JSON as AIPerf writes it: its length is what a server's body limit is
	// held against (docs/aiperf.md, "What the installed 0.13.0 does").
	Body(r Request, model string, extra map[string]any) ([]byte, error)
	// DefaultExtractor is the answer extractor (families.yaml extractor)
	// that reads the type's answers.
	DefaultExtractor() string
	// Counts is what a row counts of the type's answers.
	Counts() Count
}

// Request is one corpus entry as the requests of every type are made of
// it: its image as a data URL of the exact file bytes, and its question.
type Request struct {
	Image    string
	Question string
}

// EntryProblem is why a corpus entry does not suit an endpoint type.
type EntryProblem struct {
	// Problem completes "corpus entry ID ..." ("has no question").
	Problem string
	// Need says what the type needs of a corpus.
	Need string
	// Fix is what to do about it.
	Fix string
}

// Count is what a row counts of a type's answers.
type Count int

const (
	// Boxes counts the boxes of detection answers (the row's boxes).
	Boxes Count = iota
	// Tokens counts the generated tokens of text answers (the row's
	// output_tokens).
	Tokens
)

var registry = struct {
	sync.RWMutex
	types map[string]Type
}{types: map[string]Type{}}

// Register adds an endpoint type. A type's own file calls it from init; a
// test that registers a type of its own calls the returned function when
// it ends. A second type of the same name panics, as
// database/sql.Register does.
func Register(t Type) (unregister func()) {
	registry.Lock()
	defer registry.Unlock()
	name := t.Name()
	if _, dup := registry.types[name]; dup || name == "" {
		panic(fmt.Sprintf("endpoint: Register called twice for type %q (or with no name)", name))
	}
	registry.types[name] = t
	return func() {
		registry.Lock()
		defer registry.Unlock()
		delete(registry.types, name)
	}
}

// Lookup returns the registered type of that name.
func Lookup(name string) (Type, bool) {
	registry.RLock()
	defer registry.RUnlock()
	t, ok := registry.types[name]
	return t, ok
}

// NeedsTokenizer says whether the named type needs a tokenizer; an
// unknown type needs none (its validation names it).
func NeedsTokenizer(name string) bool {
	t, ok := Lookup(name)
	return ok && t.NeedsTokenizer()
}

// Names lists the registered types, sorted.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]string, 0, len(registry.types))
	for n := range registry.types {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// OneOf lists the registered types for a message, each written by format
// ("chat or image_retrieval", "a, b or c").
func OneOf(format func(string) string) string {
	names := Names()
	for i, n := range names {
		names[i] = format(n)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Plain writes a name as it is (for OneOf).
func Plain(name string) string { return name }

// CompactJSON encodes v as AIPerf writes JSON: compact, HTML characters
// not escaped, no trailing newline.
func CompactJSON(v any) ([]byte, error) {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}

// isBlank: nothing but white space.
func isBlank(s string) bool { return strings.TrimSpace(s) == "" }
