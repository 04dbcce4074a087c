// Package markdown writes the GitHub-flavoured Markdown of the reports that
// are not rows (inventory reconcile, drift and the ci job's pull-request
// summary): tables whose cells cannot break them, inline code. A leaf.
package markdown

import (
	"io"
	"strings"
)

// Table writes a GitHub-flavoured Markdown table. Cells are escaped so a
// pipe or a line break in a detail cannot break the table.
func Table(w io.Writer, header []string, rows [][]string) error {
	esc := strings.NewReplacer("|", `\|`, "\r", " ", "\n", " ")
	line := func(cells []string) string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = esc.Replace(c)
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

// Code quotes s as inline Markdown code ("" stays "").
func Code(s string) string {
	if s == "" {
		return ""
	}
	if strings.Contains(s, "`") {
		return "``" + s + "``"
	}
	return "`" + s + "`"
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
