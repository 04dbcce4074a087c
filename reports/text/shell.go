package text

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

// ShellSplit reads back a line that ShellJoin wrote (and the NAME="$NAME"
// words a reproduce command starts with): bare words, '...' (with '\”
// for a quote), $'...' with the escapes ShellQuote writes (\\ \' \n \t
// \xHH), "..." with \" \\ \$ \` escapes, and unquoted backslash escapes.
// A $NAME inside double quotes or unquoted is kept literally as "$NAME"
// (nothing is expanded). ok is false for anything else: an operator
// (; | & < > ( ) `), an unterminated quote, or $( ... ).
func ShellSplit(line string) (words []string, ok bool) {
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
			i++
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 2
		case c == '$' && i+1 < len(line) && line[i+1] == '\'':
			n, s, good := ansiC(line[i+2:])
			if !good {
				return nil, false
			}
			cur.WriteString(s)
			inWord = true
			i += 2 + n
		case c == '"':
			i++
			closed := false
			for i < len(line) {
				d := line[i]
				if d == '"' {
					closed = true
					i++
					break
				}
				if d == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					cur.WriteByte(line[i+1])
					i += 2
					continue
				}
				if d == '`' || d == '$' && i+1 < len(line) && line[i+1] == '(' {
					return nil, false
				}
				cur.WriteByte(d)
				i++
			}
			if !closed {
				return nil, false
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(line) {
				return nil, false
			}
			cur.WriteByte(line[i+1])
			inWord = true
			i += 2
		case strings.IndexByte(";|&<>()`\n", c) >= 0:
			return nil, false
		case c == '$' && i+1 < len(line) && line[i+1] == '(':
			return nil, false
		default:
			cur.WriteByte(c)
			inWord = true
			i++
		}
	}
	flush()
	return words, true
}

// ansiC decodes the body of a $'...' word up to its closing quote: the
// bytes consumed (closing quote included) and the text.
func ansiC(s string) (int, string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\'':
			return i + 1, b.String(), true
		case c == '\\' && i+1 < len(s):
			switch e := s[i+1]; e {
			case '\\', '\'', '"':
				b.WriteByte(e)
				i += 2
			case 'n':
				b.WriteByte('\n')
				i += 2
			case 't':
				b.WriteByte('\t')
				i += 2
			case 'x':
				if i+4 > len(s) {
					return 0, "", false
				}
				var v byte
				if _, err := fmt.Sscanf(s[i+2:i+4], "%02x", &v); err != nil {
					return 0, "", false
				}
				b.WriteByte(v)
				i += 4
			default:
				return 0, "", false
			}
		default:
			b.WriteByte(c)
			i++
		}
	}
	return 0, "", false
}
