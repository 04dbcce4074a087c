package evidence

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ShellJoin renders argv as one line that a POSIX shell (bash, zsh, ksh,
// dash) reads back as exactly argv. It is the one quoting function of
// trtmc-qual: every command printed for a person to paste — the
// reproduce command of a row in result.json, results.md and results.html,
// AIPerf's recorded argv, stage lines on stderr, the lock holder — goes
// through it. See ShellQuote for the rules.
func ShellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = ShellQuote(a)
		if i == 0 && out[i] == a && strings.ContainsRune(a, '=') {
			// A first word NAME=VALUE would be an assignment.
			out[i] = "'" + a + "'"
		}
	}
	return strings.Join(out, " ")
}

// ShellQuote quotes one argument:
//   - left bare when it is made only of ASCII letters, digits and
//   - _ . / : = , + @ % (none of which a shell expands);
//   - in single quotes otherwise ('\” for a quote inside), where nothing
//     is expanded: $(...), backticks, $VAR, *, ~, ; | & < > # ! all stay
//     literal;
//   - as $'...' with \xHH escapes when it holds a control character, an
//     invisible or bidirectional formatting character (U+200B, U+202E...),
//     a non-printing space or invalid UTF-8, so nothing invisible or
//     reordering reaches a terminal, a Markdown file or a web page raw.
//     bash, zsh, ksh and POSIX.1-2024 shells read $'...'; valid profile
//     ids and group names never need it.
func ShellQuote(a string) string {
	if a == "" {
		return "''"
	}
	bare, plain := true, true
	for i, w := 0, 0; i < len(a); i += w {
		r, size := utf8.DecodeRuneInString(a[i:])
		w = size
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,+@%", r)) {
			bare = false
		}
		if r == utf8.RuneError && size <= 1 || !visible(r) {
			plain = false
		}
	}
	switch {
	case bare:
		return a
	case plain:
		return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for i, w := 0, 0; i < len(a); i += w {
		r, size := utf8.DecodeRuneInString(a[i:])
		w = size
		switch {
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError && size <= 1 || !visible(r):
			for _, c := range []byte(a[i : i+size]) {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// visible reports whether r prints as itself: not a control character, not
// a format character (bidi overrides, zero-width characters), not a space
// other than the ASCII one.
func visible(r rune) bool {
	return r == ' ' || unicode.IsPrint(r) && !unicode.Is(unicode.Cf, r)
}
