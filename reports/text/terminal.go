package text

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Quote quotes a user-supplied value for a message: Go syntax with every
// non-ASCII and non-printable byte escaped, so control, bidirectional and
// invisible characters never reach a terminal raw.
func Quote(s string) string { return strconv.QuoteToASCII(s) }

// Printable escapes what must not reach a terminal raw in an otherwise
// readable text: control characters and Unicode format characters
// (bidirectional overrides, zero-width spaces...) become \u{...} escapes;
// everything else, newlines included, is kept.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if !printableRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if printableRune(r) {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, `\u{%x}`, r)
		}
	}
	return b.String()
}

func printableRune(r rune) bool {
	if r == '\n' || r == '\t' {
		return true
	}
	if r == unicode.ReplacementChar || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
		return false
	}
	return unicode.IsGraphic(r)
}
