package specs

import (
	"encoding/json"
	"fmt"
	"strings"
)

// How spec values, parse errors and commits are shown: on one line, as the
// reconcile, drift and ci reports print them.

// OneLine folds s onto one line, its runs of white space made one space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// CompactJSON is v as compact JSON (fmt's %v when it is not JSON).
func CompactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ShortSHA is the first 7 characters of a commit sha.
func ShortSHA(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// OrDash is s, or "-" when s is empty (a table cell).
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Plural is "1 one" or "n many".
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
