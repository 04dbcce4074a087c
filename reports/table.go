package reports

import (
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// Table is a rectangular set of cells with a header, the common shape of
// every tabular output. tablewriter is wrapped here and nowhere else, so its
// API churn stays in one file.
type Table struct {
	Header []string
	Rows   [][]string
}

// Tabular formats shared by every verb that prints rows.
const (
	FormatTable    = "table" // boxed, for a terminal
	FormatTSV      = "tsv"   // tab-separated, no header: the piped default
	FormatCSV      = "csv"   // RFC 4180 with a header
	FormatMarkdown = "md"    // GitHub-flavoured Markdown
	FormatJSON     = "json"  // handled by each verb: its typed rows
	FormatHTML     = "html"  // the self-contained report
	FormatJSONL    = "jsonl" // one JSON object per line
	FormatAuto     = ""      // table on a terminal, tsv when piped
)

// CheckFormat returns an error listing the allowed values when f is not
// one. FormatAuto may be allowed but is never listed: it is the absence of
// a value, not one to type.
func CheckFormat(f string, allowed ...string) error {
	shown := make([]string, 0, len(allowed))
	for _, a := range allowed {
		if f == a {
			return nil
		}
		if a != FormatAuto {
			shown = append(shown, a)
		}
	}
	return fmt.Errorf("invalid format %q: valid values are %s", f, strings.Join(shown, ", "))
}

// formatExts maps file extensions to the formats they name.
var formatExts = map[string]string{
	".md": FormatMarkdown, ".markdown": FormatMarkdown, ".csv": FormatCSV, ".json": FormatJSON,
	".html": FormatHTML, ".htm": FormatHTML, ".tsv": FormatTSV, ".jsonl": FormatJSONL, ".xml": "xml",
}

// FormatOfFile is the format a file name's extension names (case
// insensitive), or "" when the extension names none.
func FormatOfFile(path string) string {
	return formatExts[strings.ToLower(filepath.Ext(path))]
}

// ExtOf is the usual extension of a format's files ("" for table, which
// has none).
func ExtOf(format string) string {
	switch format {
	case FormatMarkdown, FormatCSV, FormatJSON, FormatHTML, FormatTSV, FormatJSONL:
		return "." + format
	}
	return ""
}

// Resolve turns FormatAuto into table or tsv depending on the terminal.
func Resolve(format string, isTTY bool) string {
	if format != FormatAuto {
		return format
	}
	if isTTY {
		return FormatTable
	}
	return FormatTSV
}

// Write renders t in one of table, tsv, csv or md. Output never depends on
// the terminal width, so files and golden tests are stable.
func (t Table) Write(w io.Writer, format string) error {
	t = t.printable()
	switch format {
	case FormatTSV:
		for _, r := range t.Rows {
			if _, err := fmt.Fprintln(w, strings.Join(clean(r), "\t")); err != nil {
				return err
			}
		}
		return nil
	case FormatCSV:
		cw := csv.NewWriter(w)
		if err := cw.Write(t.Header); err != nil {
			return err
		}
		if err := cw.WriteAll(t.Rows); err != nil {
			return err
		}
		cw.Flush()
		return cw.Error()
	case FormatMarkdown:
		return t.render(w, renderer.NewMarkdown())
	case FormatTable:
		return t.render(w, renderer.NewBlueprint())
	default:
		return fmt.Errorf("table: unsupported format %q", format)
	}
}

// printable escapes control, bidirectional and invisible characters in
// every cell (text.Printable): a table is read on a terminal.
func (t Table) printable() Table {
	out := Table{Header: make([]string, len(t.Header)), Rows: make([][]string, len(t.Rows))}
	for i, h := range t.Header {
		out.Header[i] = text.Printable(h)
	}
	for i, r := range t.Rows {
		out.Rows[i] = make([]string, len(r))
		for j, c := range r {
			out.Rows[i][j] = text.Printable(c)
		}
	}
	return out
}

func (t Table) render(w io.Writer, r tw.Renderer) error {
	tbl := tablewriter.NewTable(w,
		tablewriter.WithRenderer(r),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
	)
	tbl.Header(anySlice(t.Header)...)
	for _, row := range t.Rows {
		if err := tbl.Append(anySlice(row)...); err != nil {
			return err
		}
	}
	return tbl.Render()
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// clean keeps tabs and newlines out of tab-separated cells.
func clean(r []string) []string {
	out := make([]string, len(r))
	for i, c := range r {
		out[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(c)
	}
	return out
}
