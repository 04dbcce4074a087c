package reports

import (
	"bytes"
	"fmt"
	"io"
)

// maxEdits bounds the edit distance the diff searches for a shortest
// script (Myers' greedy algorithm keeps O(maxEdits²) of state); past it,
// the differing middle is written as one deletion and one insertion,
// which is still a correct diff.
const maxEdits = 1024

// WriteUnifiedDiff writes the unified diff of a and b to w. It is meant
// for a page whose changes sit in one block (report --update-doc
// --dry-run): the common head and tail are skipped by walking the bytes,
// without a slice per line; only the differing middle is split into lines
// (sub-slices of the input, nothing copied) and searched for a shortest
// edit script with a bound on its length, so memory stays about 24 bytes
// per line of the middle whatever the page, never a table of lines × lines.
func WriteUnifiedDiff(w io.Writer, aName, bName string, a, b []byte) error {
	if bytes.Equal(a, b) {
		return nil
	}
	pre, preLines := commonPrefixLines(a, b)
	suf, _ := commonSuffixLines(a[pre:], b[pre:])
	midA, midB := a[pre:len(a)-suf], b[pre:len(b)-suf]
	const ctx = 3
	head, tail := lastLineSlices(a[:pre], ctx), firstLineSlices(a[len(a)-suf:], ctx)
	na, nb := countLines(midA), countLines(midB)
	if na-nb > maxEdits || nb-na > maxEdits {
		// No short edit script can exist: one hunk that deletes the old
		// middle and inserts the new, streamed line by line.
		return replaceHunk(w, aName, bName, head, tail, midA, midB, preLines-len(head), na, nb)
	}
	mx, my := splitLineSlices(midA), splitLineSlices(midB)
	// The edit script of the middle, with up to ctx lines of the common
	// head before it and of the common tail after it.
	var ops []diffOp
	for i, l := range head {
		n := preLines - len(head) + i
		ops = append(ops, diffOp{' ', l, n, n})
	}
	ops = append(ops, middleOps(mx, my, preLines)...)
	for i, l := range tail {
		ops = append(ops, diffOp{' ', l, preLines + len(mx) + i, preLines + len(my) + i})
	}
	bw := &errWriter{w: w}
	fmt.Fprintf(bw, "--- %s\n+++ %s\n", aName, bName)
	// Group the edit script into hunks separated by more than 2*ctx equal lines.
	for i := 0; i < len(ops) && bw.err == nil; {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-ctx, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		h := ops[start:end]
		aStart, bStart, aLen, bLen := h[0].ai, h[0].bi, 0, 0
		for _, o := range h {
			if o.kind != '+' {
				aLen++
			}
			if o.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(bw, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, o := range h {
			bw.Write(opByte(o.kind))
			bw.Write(o.text)
			if !bytes.HasSuffix(o.text, []byte("\n")) {
				io.WriteString(bw, "\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return bw.err
}

// replaceHunk writes the diff whose one hunk replaces the na lines of midA
// (after the head context lines, which start at line start) by the nb
// lines of midB, without holding a slice per line.
func replaceHunk(w io.Writer, aName, bName string, head, tail [][]byte, midA, midB []byte, start, na, nb int) error {
	bw := &errWriter{w: w}
	fmt.Fprintf(bw, "--- %s\n+++ %s\n", aName, bName)
	ctxLines := len(head) + len(tail)
	fmt.Fprintf(bw, "@@ -%s +%s @@\n", hunkRange(start, ctxLines+na), hunkRange(start, ctxLines+nb))
	line := func(kind byte, l []byte) {
		bw.Write(opByte(kind))
		bw.Write(l)
		if !bytes.HasSuffix(l, []byte("\n")) {
			io.WriteString(bw, "\n\\ No newline at end of file\n")
		}
	}
	for _, l := range head {
		line(' ', l)
	}
	for _, m := range []struct {
		kind byte
		data []byte
	}{{'-', midA}, {'+', midB}} {
		for data := m.data; len(data) > 0 && bw.err == nil; {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				line(m.kind, data)
				break
			}
			line(m.kind, data[:i+1])
			data = data[i+1:]
		}
	}
	for _, l := range tail {
		line(' ', l)
	}
	return bw.err
}

var opBytes = [3][]byte{{' '}, {'-'}, {'+'}}

func opByte(kind byte) []byte {
	switch kind {
	case '-':
		return opBytes[1]
	case '+':
		return opBytes[2]
	}
	return opBytes[0]
}

// countLines is the number of lines of data (a last one without a newline
// counts).
func countLines(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

type diffOp struct {
	kind   byte // ' ', '-', '+'
	text   []byte
	ai, bi int // 0-based line positions in a and b where the op sits
}

// commonPrefixLines is the length in bytes and lines of the longest run of
// whole lines a and b start with.
func commonPrefixLines(a, b []byte) (int, int) {
	off, lines := 0, 0
	for {
		ia, ib := bytes.IndexByte(a[off:], '\n'), bytes.IndexByte(b[off:], '\n')
		if ia < 0 || ia != ib || !bytes.Equal(a[off:off+ia], b[off:off+ib]) {
			return off, lines
		}
		off += ia + 1
		lines++
	}
}

// commonSuffixLines is the length in bytes and lines of the longest run
// of whole lines a and b end with (a last line without a newline counts
// when it is the same in both).
func commonSuffixLines(a, b []byte) (int, int) {
	n, lines := 0, 0
	for {
		ra, rb := a[:len(a)-n], b[:len(b)-n]
		if len(ra) == 0 || len(rb) == 0 {
			return n, lines
		}
		la, lb := lastLineLen(ra), lastLineLen(rb)
		if la != lb || !bytes.Equal(ra[len(ra)-la:], rb[len(rb)-lb:]) {
			return n, lines
		}
		n += la
		lines++
	}
}

// lastLineLen is the length of the last line of b, its newline included.
func lastLineLen(b []byte) int {
	end := len(b)
	if b[end-1] == '\n' {
		end--
	}
	return len(b) - (bytes.LastIndexByte(b[:end], '\n') + 1)
}

// splitLineSlices is every line of data, newlines kept, as sub-slices.
func splitLineSlices(data []byte) [][]byte { return firstLineSlices(data, len(data)) }

// lastLineSlices is the last n lines of data, as sub-slices.
func lastLineSlices(data []byte, n int) [][]byte {
	var out [][]byte
	for len(data) > 0 && len(out) < n {
		j := bytes.LastIndexByte(data[:len(data)-1], '\n')
		out = append([][]byte{data[j+1:]}, out...)
		data = data[:j+1]
	}
	return out
}

// firstLineSlices is the first n lines of data, newlines kept, as sub-slices.
func firstLineSlices(data []byte, n int) [][]byte {
	var out [][]byte
	for len(data) > 0 && len(out) < n {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			out = append(out, data)
			break
		}
		out = append(out, data[:i+1])
		data = data[i+1:]
	}
	return out
}

// middleOps is a shortest edit script from x to y (Myers' greedy
// algorithm) when one of at most maxEdits exists, else every line of x
// deleted and every line of y inserted. off is the line number both start
// at.
func middleOps(x, y [][]byte, off int) []diffOp {
	n, m := len(x), len(y)
	if trace, d, ok := myers(x, y); ok {
		return backtrack(x, y, trace, d, off)
	}
	ops := make([]diffOp, 0, n+m)
	for i, l := range x {
		ops = append(ops, diffOp{'-', l, off + i, off})
	}
	for j, l := range y {
		ops = append(ops, diffOp{'+', l, off + n, off + j})
	}
	return ops
}

// myers runs the greedy forward search, keeping the frontier of every
// step for the backtrack; ok is false when the distance exceeds maxEdits
// (decided at once when the lengths alone differ by more).
func myers(x, y [][]byte) ([][]int, int, bool) {
	n, m := len(x), len(y)
	if n-m > maxEdits || m-n > maxEdits {
		return nil, 0, false
	}
	limit := min(n+m, maxEdits)
	offset := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int
	for d := 0; d <= limit; d++ {
		snap := make([]int, 2*d+3)
		copy(snap, v[offset-d-1:offset+d+2])
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var i int
			if k == -d || k != d && v[offset+k-1] < v[offset+k+1] {
				i = v[offset+k+1] // down: an insertion
			} else {
				i = v[offset+k-1] + 1 // right: a deletion
			}
			j := i - k
			for i < n && j < m && bytes.Equal(x[i], y[j]) {
				i, j = i+1, j+1
			}
			v[offset+k] = i
			if i >= n && j >= m {
				return trace, d, true
			}
		}
	}
	return nil, 0, false
}

// backtrack turns the frontiers into the edit script, front to back.
// trace[d] holds the frontier after step d-1, diagonal k at index k+d+1.
func backtrack(x, y [][]byte, trace [][]int, d, off int) []diffOp {
	var rev []diffOp
	i, j := len(x), len(y)
	for ; d > 0; d-- {
		prev := trace[d]
		at := func(k int) int { return prev[k+d+1] }
		k := i - j
		down := k == -d || k != d && at(k-1) < at(k+1)
		pk := k - 1
		if down {
			pk = k + 1
		}
		pi := at(pk)
		pj := pi - pk
		mi, mj := pi+1, pj // after the edit, before the snake
		if down {
			mi, mj = pi, pj+1
		}
		for i > mi && j > mj {
			i, j = i-1, j-1
			rev = append(rev, diffOp{' ', x[i], off + i, off + j})
		}
		if down {
			rev = append(rev, diffOp{'+', y[pj], off + pi, off + pj})
		} else {
			rev = append(rev, diffOp{'-', x[pi], off + pi, off + pj})
		}
		i, j = pi, pj
	}
	for i > 0 && j > 0 {
		i, j = i-1, j-1
		rev = append(rev, diffOp{' ', x[i], off + i, off + j})
	}
	ops := make([]diffOp, len(rev))
	for k := range rev {
		ops[k] = rev[len(rev)-1-k]
	}
	return ops
}

// hunkRange is the "start,len" of a hunk header (1-based; an empty range
// starts at the line before it).
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
