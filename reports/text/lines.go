package text

import (
	"strings"
)

// FirstLine is s up to its first newline (all of s when it has none).
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Headline is FirstLine with " ..." after it when more lines follow: a
// one-line message that says it is not the whole text.
func Headline(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// LastLines is the last n lines of s (trailing newlines dropped first),
// joined by newlines.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Indent puts four spaces before every line of s: a block quoted under a
// message ("last output:\n    ...").
func Indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

// OneLine folds s onto one line, its runs of white space made one space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Clip is s cut to its first n bytes with "..." after them when it is
// longer: a child's output or a body kept short in a message. It takes a
// []byte without copying more than n bytes of it.
func Clip[T ~string | ~[]byte](s T, n int) string {
	if len(s) <= n {
		return string(s)
	}
	return string(s[:n]) + "..."
}
