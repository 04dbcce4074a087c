// Package markdown writes the GitHub-flavoured Markdown of the reports:
// text that is never read as markup (Text), inline code (Code), links
// (Link) and tables whose cells cannot break them (Table). A leaf.
//
// Foreign text — anything the harness did not write itself: a server's
// error body, a gate name, a checkpoint name, a manifest's field, a ref —
// goes into Markdown only through Text, Code or Link, so that an `<img>`,
// a `[link](…)`, a `</details>` or a `|` in it stays text. Every Markdown
// writer (results.md, the docs block, the summary, the ci summary,
// reconcile, drift) passes every string the harness did not write through
// it; it also writes the tables of the reports that are not rows
// (reconcile, drift, the ci summary). Code blocks are fenced longer than
// any backtick run in them (CodeBlock).
package markdown

import (
	"io"
	"regexp"
	"strings"
)

// Text escapes s so that Markdown reads it as the literal text it is, on
// one line: no emphasis, code span, link, image, HTML tag or entity,
// autolink, mention, math, strikethrough or table cell break comes out of
// it, and it opens no block (heading, quote, list, rule) when it starts a
// line or a list item. Line breaks become spaces. Backslash escapes are
// CommonMark's own (any ASCII punctuation may be escaped); an underscore
// inside a word (answer_exact_match), which can neither open nor close
// emphasis, is left as it is, so ordinary names read as they are.
func Text(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	block := blockMarker(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\r' || c == '\n':
			b.WriteByte(' ')
			continue
		case strings.IndexByte("\\`*~[]<>&|!$", c) >= 0:
			b.WriteByte('\\')
		case c == '_' && !(i > 0 && alnum(s[i-1]) && i+1 < len(s) && alnum(s[i+1])):
			b.WriteByte('\\')
		case c == ':' && strings.HasPrefix(s[i:], "://"):
			b.WriteByte('\\') // no URL autolink (GFM's extension)
		case c == '.' && i >= 3 && strings.EqualFold(s[i-3:i], "www") && (i == 3 || !alnum(s[i-4])):
			b.WriteByte('\\') // no www. autolink
		case c == '@' && i > 0 && alnum(s[i-1]):
			b.WriteByte('\\') // no e-mail autolink or mention
		case i == block:
			b.WriteByte('\\') // no heading, list item, rule or setext underline
		}
		b.WriteByte(c)
	}
	return b.String()
}

var (
	headingRe = regexp.MustCompile(`^#{1,6}(?:[ \t]|$)`)
	bulletRe  = regexp.MustCompile(`^[-+](?:[ \t]|$)`)
	orderedRe = regexp.MustCompile(`^[0-9]{1,9}[.)](?:[ \t]|$)`)
	ruleRe    = regexp.MustCompile(`^(?:-[ \t]*){3,}$|^=+[ \t]*$`)
)

// blockMarker is the index of the character that makes s, at the start of
// a line or of a list item, open a block — a heading's "#", a list item's
// "-", "+" or the "." / ")" after its number, a thematic break or setext
// underline — or -1. (">", "*", "_", "`" and "~" are escaped wherever
// they are.)
func blockMarker(s string) int {
	switch {
	case headingRe.MatchString(s), bulletRe.MatchString(s), ruleRe.MatchString(s):
		return 0
	case orderedRe.MatchString(s):
		return strings.IndexAny(s, ".)")
	}
	return -1
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// Table writes a GitHub-flavoured Markdown table. Cells are written as
// given (a caller passes foreign text through Text or Code); a pipe or a
// line break in a cell cannot break the table.
func Table(w io.Writer, header []string, rows [][]string) error {
	line := func(cells []string) string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = Cell(c)
			if out[i] == "" {
				out[i] = " "
			}
		}
		return "| " + strings.Join(out, " | ") + " |\n"
	}
	var b strings.Builder
	b.WriteString(line(header))
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
	}
	b.WriteString("|" + strings.Join(seps, "|") + "|\n")
	for _, r := range rows {
		b.WriteString(line(r))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Cell keeps already-written Markdown inside one table cell: every pipe
// not yet escaped is escaped (inside a code span too, as GFM reads
// tables before code), line breaks become spaces.
func Cell(s string) string {
	if !strings.ContainsAny(s, "|\r\n") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\r', '\n':
			b.WriteByte(' ')
		case '|':
			if i == 0 || s[i-1] != '\\' || escaped(s, i-1) {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// escaped reports whether the backslash at s[i] is itself escaped (an odd
// number of backslashes before it).
func escaped(s string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && s[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// Code quotes s as inline Markdown code ("" stays ""): fenced by one more
// backtick than its longest run of backticks, padded with a space where it
// starts or ends with a backtick (or a space, which CommonMark would
// strip), on one line.
func Code(s string) string {
	if s == "" {
		return ""
	}
	s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if s[0] == '`' || s[len(s)-1] == '`' || (s[0] == ' ' && s[len(s)-1] == ' ' && strings.Trim(s, " ") != "") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// CodeBlock is body as a fenced code block (info string lang, "" for
// none): the fence is longer than any run of backticks in body, so nothing
// in it closes the block early.
func CodeBlock(lang, body string) string {
	longest, run := 0, 0
	for i := 0; i < len(body); i++ {
		if body[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + lang + "\n" + strings.TrimSuffix(body, "\n") + "\n" + fence + "\n"
}

// CodeList is the items as inline code, comma-separated; "(none)" when
// there are none.
func CodeList(items []string) string {
	if len(items) == 0 {
		return "(none)"
	}
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = Code(s)
	}
	return strings.Join(out, ", ")
}

// Link is a Markdown link to dest whose text is label as literal text.
func Link(label, dest string) string {
	return "[" + Text(label) + "](" + Destination(dest) + ")"
}

// Destination writes a link destination so that nothing in it ends the
// link early or becomes markup: spaces, angle brackets, parentheses,
// quotes, backslashes, backticks, pipes and control characters are
// percent-encoded.
func Destination(dest string) string {
	const digits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(dest); i++ {
		c := dest[i]
		if c <= ' ' || c == 0x7f || strings.IndexByte("<>()\"'\\`|", c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(digits[c>>4])
			b.WriteByte(digits[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
