package reports

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/markdown"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// Release engineers keep result tables in Markdown pages of TRTMC's docs
// and pull requests. A page marks where a group's table goes with two
// lines, and UpdateBlock rewrites only what lies between them:
//
//	<!-- trtmc-qual:vlm:begin -->
//	...generated, replaced on every update...
//	<!-- trtmc-qual:vlm:end -->
//
// What goes there is the docs block (RenderDocBlock): it belongs to the
// page, so it has no title of its own and its headings sit one level under
// the page's heading above the markers.

// BlockMarkers are the begin and end marker lines of a group's block.
func BlockMarkers(group string) (begin, end string) {
	return "<!-- trtmc-qual:" + group + ":begin -->", "<!-- trtmc-qual:" + group + ":end -->"
}

// BlockError is a page whose markers do not delimit exactly one block:
// a marker missing, doubled, or the end before the begin. It names the
// file and the line(s).
type BlockError struct {
	File    string
	Line    int // 0 when the problem is an absence
	Message string
}

func (e *BlockError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Message)
}

// Block is where a group's block sits in a page.
type Block struct {
	// BeginLine and EndLine are the 1-based lines of the markers.
	BeginLine, EndLine int
	// Start and Stop are the byte offsets of the block's content: from
	// just after the begin marker's line to the start of the end marker's.
	Start, Stop int
	// HeadingLevel is the level of the last heading above the begin
	// marker (0 when there is none).
	HeadingLevel int
	// crlf is set when the begin marker's line ends with \r\n;
	// beginEOL is false when the begin line has no newline at all.
	crlf, beginEOL bool
}

// MaxPageBytes caps a Markdown page that report --update-doc reads.
const MaxPageBytes int64 = 16 << 20

// utf8BOM is the byte-order mark some editors put at the start of a file.
var utf8BOM = []byte("\xef\xbb\xbf")

// FindBlock locates group's block in doc. The markers must each be on a
// line of their own (surrounding spaces allowed; a UTF-8 byte-order mark
// before the first line is not part of it) and appear exactly once outside
// fenced code blocks, begin before end; anything else is a *BlockError
// naming the line. It walks the page once and keeps nothing per line, so
// its memory does not grow with the page.
func FindBlock(doc []byte, file, group string) (*Block, error) {
	begin, end := BlockMarkers(group)
	b := &Block{}
	beginAt, endAt := 0, 0
	fence := ""
	level, prevText := 0, false
	for off, n := 0, 1; off < len(doc); n++ {
		next := bytes.IndexByte(doc[off:], '\n')
		lineEnd := len(doc)
		if next >= 0 {
			lineEnd = off + next + 1
		}
		raw := doc[off:lineEnd]
		if n == 1 {
			raw = bytes.TrimPrefix(raw, utf8BOM)
		}
		line := strings.TrimSpace(strings.TrimRight(string(raw), "\r\n"))
		lineStart := off
		off = lineEnd
		if f := fenceOf(line); f != "" {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(line, fence) && strings.TrimLeft(line, fence[:1]) == "":
				fence = ""
			}
			prevText = false
			continue
		}
		if fence != "" {
			continue // markers shown in a code example are not markers
		}
		switch line {
		case begin:
			if beginAt > 0 {
				return nil, &BlockError{file, n, fmt.Sprintf("second %s (the first is on line %d); a group's block must appear once", begin, beginAt)}
			}
			beginAt, b.Start, b.HeadingLevel = n, lineEnd, level
			b.crlf, b.beginEOL = bytes.HasSuffix(raw, []byte("\r\n")), bytes.HasSuffix(raw, []byte("\n"))
		case end:
			if endAt > 0 {
				return nil, &BlockError{file, n, fmt.Sprintf("second %s (the first is on line %d); a group's block must appear once", end, endAt)}
			}
			if beginAt == 0 {
				return nil, &BlockError{file, n, fmt.Sprintf("%s comes before any %s", end, begin)}
			}
			endAt, b.Stop = n, lineStart
		}
		if beginAt == 0 {
			level, prevText = headingLevel(line, level, prevText)
		}
	}
	switch {
	case beginAt == 0 && endAt == 0:
		return nil, &BlockError{file, 0, fmt.Sprintf("no %s ... %s block; add the two marker lines where the table of group %s goes", begin, end, group)}
	case endAt == 0:
		return nil, &BlockError{file, beginAt, fmt.Sprintf("%s without %s after it", begin, end)}
	}
	b.BeginLine, b.EndLine = beginAt, endAt
	return b, nil
}

// headingLevel follows the page's headings: an ATX heading (# to ######)
// sets the level, and so does a setext underline (=== level 1, --- level
// 2) under a line of text. prevText says whether the line is text that an
// underline could make a heading.
func headingLevel(line string, level int, prevText bool) (int, bool) {
	if line == "" {
		return level, false
	}
	if n := len(line) - len(strings.TrimLeft(line, "#")); n >= 1 && n <= 6 && (len(line) == n || line[n] == ' ' || line[n] == '\t') {
		return n, false
	}
	if prevText && strings.Trim(line, "=") == "" {
		return 1, false
	}
	if prevText && strings.Trim(line, "-") == "" {
		return 2, false
	}
	return level, !strings.HasPrefix(line, "<!--") && !strings.HasPrefix(line, "|") && !strings.HasPrefix(line, "- ")
}

// Replace returns doc with the block's content replaced by content (which
// gets a final newline if it lacks one, and the begin line's line ending).
// Everything outside the block is kept byte for byte.
func (b *Block) Replace(doc, content []byte) []byte {
	body := content
	if len(body) > 0 && body[len(body)-1] != '\n' {
		body = append(append([]byte{}, body...), '\n')
	}
	if b.crlf {
		body = bytes.ReplaceAll(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
	}
	var out bytes.Buffer
	out.Grow(len(doc) - (b.Stop - b.Start) + len(body) + 1)
	out.Write(doc[:b.Start])
	if !b.beginEOL {
		out.WriteByte('\n')
	}
	out.Write(body)
	out.Write(doc[b.Stop:])
	return out.Bytes()
}

// fenceOf returns the fence a line opens or closes (``` or ~~~, three or
// more), or "".
func fenceOf(line string) string {
	for _, c := range []string{"`", "~"} {
		n := len(line) - len(strings.TrimLeft(line, c))
		if n >= 3 {
			return strings.Repeat(c, n)
		}
	}
	return ""
}

// DocBlockOptions shape the docs block.
type DocBlockOptions struct {
	// HeadingLevel is the level of the page's heading above the block;
	// the block's headings are one deeper (at most 6, at least 2).
	HeadingLevel int
	// Link is where the full report is published (a URL or a path
	// relative to the page); "" says how to get it instead.
	Link string
}

// docBlockHeader is the compact table's header: what a reader of a docs
// page needs; the rest is one link away.
func docBlockHeader() []string {
	return []string{"profile", "checkpoint", "precision", "correctness", "matched", "errors",
		"HTTP p50/p95 ms", "Task p50/p95 ms", "images/s", "output", "GPU", "source commit", "verdict"}
}

func docBlockCells(row *Row) []string {
	profile := row.Profile
	if !row.Counted {
		profile += " (" + row.Kind + ")"
	}
	r := row.Result
	if r == nil || !r.Measured() {
		cells := []string{profile, orMissing(row.Checkpoint), orMissing(row.Precision)}
		for range len(docBlockHeader()) - len(cells) - 1 {
			cells = append(cells, Missing)
		}
		return append(cells, verdictCell(row))
	}
	var http, task *Delta
	if row.Baseline != nil {
		http, task = row.Baseline.HTTPP50, row.Baseline.TaskP50
	}
	return []string{profile, orMissing(row.Checkpoint), orMissing(row.Precision), correctnessCell(r.Correctness),
		fmt.Sprintf("%d/%d", r.Requests.Matched, r.Requests.Expected), errorsCell(r.Requests),
		p50Cell(r.LatencyMS.HTTP, http), p50Cell(r.LatencyMS.Task, task), fmtRate(r.ImagesPerSec), outputCell(r),
		gpusCell(r.Provenance), orMissing(short(r.Provenance.SourceCommit)), verdictCell(row)}
}

func docBlockTable(rows []Row) Table {
	t := Table{Header: docBlockHeader()}
	for i := range rows {
		cells := docBlockCells(&rows[i])
		for j := range cells {
			cells[j] = mdEscape(cells[j])
		}
		t.Rows = append(t.Rows, cells)
	}
	return t
}

// RenderDocBlock writes the group's block for a docs page: the summary
// sentence, the compact results table (normal profiles, then variants
// and partials, never counted), the coverage, the reasons of every row
// that is not qualified, notes, and the reproduce commands collapsed in
// one <details>. No title: the page's own heading introduces it. It is
// published text (Public) and depends only on r and o.
func RenderDocBlock(w io.Writer, r *GroupReport, o DocBlockOptions) error {
	r, err := r.published()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	p := &printer{w: &buf}
	h := strings.Repeat("#", min(max(o.HeadingLevel+1, 2), 6))
	p.f("**%s.**\n\n", mdEscape(r.Coverage.Summary))
	if b := r.Baseline; b != nil {
		p.f("%s ▲/▼ mark a called change.\n\n", mdEscape(baselineSentence(b)))
		for _, row := range baselineRows(r.Rows) {
			p.f("- **%s** — %s\n", mdEscape(row.Profile), mdEscape(baselineRowText(row.Baseline)))
		}
		if len(baselineRows(r.Rows)) > 0 {
			p.f("\n")
		}
	}
	if facts := workloadFacts(r.Rows); facts != "" {
		p.f("%s\n\n", mdEscape(facts))
	}
	counted, other := splitRows(r.Rows)
	p.table(docBlockTable(counted), "_No normal profiles._\n")
	if len(other) > 0 {
		p.f("\n%s Variants and partial profiles (not counted)\n\n", h)
		p.table(docBlockTable(other), "")
	}
	writeIntervalsDetails(p, r.Rows)
	if o.Link != "" {
		p.f("\nBundle, warmup and measured counts, missing joins, GPU UUIDs, driver and CUDA: [full report](%s).\n", markdown.Destination(o.Link))
	} else {
		p.f("\nBundle, warmup and measured counts, missing joins, GPU UUIDs, driver and CUDA: `trtmc-qual report --from \"$OUT\" --group %s -o md`, or `%s/results.md` of the evidence pack.\n", r.Group, r.Group)
	}
	p.f("\n%s Coverage\n\n", h)
	cov := Table{Header: []string{"profile", "kind", "counted", "variant of", "status", "note"}}
	for _, row := range r.Rows {
		counted := "no"
		if row.Counted {
			counted = "yes"
		}
		cells := []string{row.Profile, row.Kind, counted, orMissing(row.VariantOf), row.Status, orMissing(row.Note)}
		for j := range cells {
			cells[j] = mdEscape(cells[j])
		}
		cov.Rows = append(cov.Rows, cells)
	}
	p.table(cov, "_No profiles._\n")
	if reasons := reasonRows(r.Rows); len(reasons) > 0 {
		p.f("\n%s Reasons\n\n", h)
		writeReasonList(p, reasons)
	}
	if len(r.Notes) > 0 {
		p.f("\n%s Notes\n\n", h)
		writeNotes(p, r.Notes)
	}
	if repro := reproRows(r.Rows); len(repro) > 0 {
		p.f("\n<details><summary>Reproduce (%d %s)</summary>\n", len(repro), text.Plural(len(repro), "profile", "profiles"))
		if used := usedRoots(r.mapper, repro); len(used) > 0 {
			p.f("\n%s\n", rootsNote(used, r.mapper))
		}
		for _, row := range repro {
			p.f("\n**%s**\n\n", mdEscape(row.Profile))
			writeRowCommands(p, &row, r.mapper, false)
		}
		p.f("\n</details>\n")
	}
	if p.err != nil {
		return p.err
	}
	_, err = io.WriteString(w, text.Printable(buf.String()))
	return err
}

// workloadFacts is one line on what every measured row shares: the
// workload and the AIPerf version(s).
func workloadFacts(rows []Row) string {
	var workloads, versions []string
	seen := map[string]bool{}
	for _, row := range rows {
		r := row.Result
		if r == nil || !r.Measured() {
			continue
		}
		wl := fmt.Sprintf("%d warmup + %d measured requests at concurrency %d", r.Workload.Warmup, r.Workload.Measured, r.Workload.Concurrency)
		if !seen["w"+wl] {
			seen["w"+wl] = true
			workloads = append(workloads, wl)
		}
		if v := aiperfCell(r.Provenance); !seen["v"+v] {
			seen["v"+v] = true
			versions = append(versions, v)
		}
	}
	if len(workloads) == 0 {
		return ""
	}
	return fmt.Sprintf("AIPerf %s; %s per profile.", strings.Join(versions, ", "), strings.Join(workloads, "; "))
}
