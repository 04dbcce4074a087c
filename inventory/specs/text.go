package specs

import (
	"encoding/json"
	"fmt"
)

// How spec values, parse errors and commits are shown: on one line, as the
// reconcile, drift and ci reports print them.

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
