package text

import (
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFirstLineAndHeadline(t *testing.T) {
	for _, tc := range []struct{ in, first, head string }{
		{"", "", ""},
		{"one", "one", "one"},
		{"one\ntwo\nthree", "one", "one ..."},
		{"one\n", "one", "one ..."},
		{"\nafter", "", " ..."},
	} {
		assert.Equal(t, tc.first, FirstLine(tc.in), "FirstLine(%q)", tc.in)
		assert.Equal(t, tc.head, Headline(tc.in), "Headline(%q)", tc.in)
	}
}

func TestLastLines(t *testing.T) {
	assert.Equal(t, "c\nd", LastLines("a\nb\nc\nd\n\n", 2), "trailing newlines are not lines")
	assert.Equal(t, "a\nb", LastLines("a\nb", 5))
	assert.Equal(t, "", LastLines("", 3))
	assert.Equal(t, "b", LastLines("a\n\nb", 1))
}

func TestIndentAndOneLine(t *testing.T) {
	assert.Equal(t, "    a\n    b", Indent("a\nb"))
	assert.Equal(t, "    ", Indent(""))
	assert.Equal(t, "a b c", OneLine(" a\n\tb   c \n"))
}

func TestClip(t *testing.T) {
	assert.Equal(t, "short", Clip("short", 5))
	assert.Equal(t, "abc...", Clip("abcdef", 3))
	assert.Equal(t, "abc...", Clip([]byte("abcdef"), 3))
	assert.Equal(t, "", Clip([]byte(nil), 3))
	// A []byte is clipped before it is copied: clipping a 1 MiB body ten
	// times allocates about ten short strings, not ten megabytes.
	big := []byte(strings.Repeat("x", 1<<20))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		_ = Clip(big, 300)
	}
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated by 10 clips of a 1 MiB body")
}

func TestPluralAndCount(t *testing.T) {
	assert.Equal(t, "request", Plural(1, "request", "requests"))
	assert.Equal(t, "requests", Plural(0, "request", "requests"))
	assert.Equal(t, "requests", Plural(2, "request", "requests"))
	assert.Equal(t, "1 GPU", Count(1, "GPU", "GPUs"))
	assert.Equal(t, "0 GPUs", Count(0, "GPU", "GPUs"))
	assert.Equal(t, "12 GPUs", Count(12, "GPU", "GPUs"))
}
