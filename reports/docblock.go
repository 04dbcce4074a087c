package reports

import (
	"bytes"
	"fmt"
	"strings"
)

// Release engineers keep result tables in Markdown pages of TRTMC's docs
// and pull requests. A page marks where a group's table goes with two
// lines, and UpdateBlock rewrites only what lies between them:
//
//	<!-- trtmc-qual:vlm:begin -->
//	...generated, replaced on every update...
//	<!-- trtmc-qual:vlm:end -->

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

// UpdateBlock returns doc with the lines between group's begin and end
// markers replaced by content (which gets a final newline if it lacks one),
// and whether that changed anything. The markers must each be on a line
// of their own (surrounding spaces allowed) and appear exactly once outside
// fenced code blocks, begin before end; anything else is a *BlockError
// naming the line. Everything outside the block, line endings included, is
// kept byte for byte. Updating twice with the same content changes nothing
// the second time.
func UpdateBlock(doc []byte, file, group string, content []byte) ([]byte, bool, error) {
	begin, end := BlockMarkers(group)
	lines := bytes.SplitAfter(doc, []byte("\n"))
	beginAt, endAt := -1, -1
	fence := ""
	for i, raw := range lines {
		line := strings.TrimSpace(strings.TrimRight(string(raw), "\r\n"))
		if f := fenceOf(line); f != "" {
			switch {
			case fence == "":
				fence = f
			case strings.HasPrefix(line, fence) && strings.TrimLeft(line, fence[:1]) == "":
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue // markers shown in a code example are not markers
		}
		switch line {
		case begin:
			if beginAt >= 0 {
				return nil, false, &BlockError{file, i + 1, fmt.Sprintf("second %s (the first is on line %d); a group's block must appear once", begin, beginAt+1)}
			}
			beginAt = i
		case end:
			if endAt >= 0 {
				return nil, false, &BlockError{file, i + 1, fmt.Sprintf("second %s (the first is on line %d); a group's block must appear once", end, endAt+1)}
			}
			if beginAt < 0 {
				return nil, false, &BlockError{file, i + 1, fmt.Sprintf("%s comes before any %s", end, begin)}
			}
			endAt = i
		}
	}
	switch {
	case beginAt < 0 && endAt < 0:
		return nil, false, &BlockError{file, 0, fmt.Sprintf("no %s ... %s block; add the two marker lines where the table of group %s goes", begin, end, group)}
	case beginAt < 0:
		return nil, false, &BlockError{file, endAt + 1, fmt.Sprintf("%s without %s", end, begin)}
	case endAt < 0:
		return nil, false, &BlockError{file, beginAt + 1, fmt.Sprintf("%s without %s after it", begin, end)}
	}
	body := content
	if len(body) > 0 && body[len(body)-1] != '\n' {
		body = append(append([]byte{}, body...), '\n')
	}
	// Keep the page's line ending style inside the block.
	if bytes.HasSuffix(lines[beginAt], []byte("\r\n")) {
		body = bytes.ReplaceAll(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
	}
	var out bytes.Buffer
	for _, l := range lines[:beginAt+1] {
		out.Write(l)
	}
	if !bytes.HasSuffix(lines[beginAt], []byte("\n")) {
		out.WriteByte('\n')
	}
	out.Write(body)
	for _, l := range lines[endAt:] {
		out.Write(l)
	}
	updated := out.Bytes()
	return updated, !bytes.Equal(updated, doc), nil
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
