package streamjoin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// chunkSize is the span of a file one worker reads and parses at a time.
// Each worker reads its own chunks (pread), so the bytes it parses are
// still in its CPU's cache; 1 MiB keeps them there. A chunk owns the lines
// that start inside it, so a line longer than a chunk is read whole by the
// chunk it starts in.
const chunkSize = evidence.DigestBlock

var errTruncated = errors.New("last line has no newline (file truncated?)")

// lineParser parses one line into *T, in a worker goroutine. The line
// aliases the chunk buffer and stays valid until the chunk is merged.
type lineParser[T any] func(w *worker, line []byte, out *T) error

// lineMerger consumes parsed lines in file order, in one goroutine. off is
// the line's byte offset in the file, lineNo its 1-based line number.
type lineMerger[T any] func(lineNo int, off int64, v *T) error

// linePrefetcher, when set, is called in the merging goroutine with a
// chunk's parsed lines just before they are merged, to load what the merge
// will look up (see touchLines). It must change nothing.
type linePrefetcher[T any] func(lines []T)

// worker is one parsing goroutine's reusable state.
type worker struct {
	h      hasher
	ha, hb maphash.Hash // for spanKey
	ex     families.Extractor
	sem    *verdict.Semantics
	// served is the model name the server was started with: a chat
	// answer must name it (Options.ServedModel; "" checks nothing).
	served string
	spans  []span    // the responses of the raw line being parsed
	body   []byte    // the response body being assembled
	memo   *memo     // nil: extract every answer
	trace  traceInfo // the trace of the record being parsed
	// sessions answers EntryOf in the worker (Options.Sessions).
	sessions *Sessions
	// The keys of the last object of each kind read, in order: the
	// guesses of the next one's (keyGuess).
	guessMeta, guessMetrics, guessRaw, guessServer, guessResp keyGuess
}

func newWorker(h hasher, ex families.Extractor, sem *verdict.Semantics, memoize bool, served string) *worker {
	w := &worker{h: h, ex: ex, sem: sem, served: served}
	w.ha.SetSeed(h.a)
	w.hb.SetSeed(h.b)
	if memoize {
		w.memo = newMemo()
	}
	return w
}

type chunk[T any] struct {
	buf   []byte
	base  int64 // file offset of buf[0]
	lines []lineRef
	out   []T
	err   error
	errAt int // index in lines of the failed line (or -1 for a read error)
	// nlines counts every line the chunk owns, blank ones included.
	nlines int
}

type lineRef struct {
	start  int // within buf
	lineNo int // within the chunk, 0-based
}

// scanFile parses the non-blank lines of path on `workers` goroutines and
// merges them in file order. It is the parallel counterpart of qual/aiperf's
// scanLines: no line-length limit, the same errors ("file:line: field:
// problem"), and a truncated last line is an error. Memory is bounded by
// 2*workers+1 chunks plus the longest line.
//
// There is no merging goroutine: the worker that completes the next chunk
// in file order merges it (and any completed ones after it), so exactly
// `workers` goroutines are busy and none waits for a CPU.
//
// With digest set, it also computes the file's digest (dg's algorithm) from the
// chunks as they are read (chunkSize is the digest's block size), so a
// rejudge verifies the seal of what it parses without reading it twice.
func scanFile[T any](ctx context.Context, path string, workers int, ws []*worker, parse lineParser[T], merge lineMerger[T], pre linePrefetcher[T], dg evidence.Digester, digest *string) (int64, error) {
	f, _, err := fileio.OpenRegular(path) // a FIFO or a device is refused, never read
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	workers = max(workers, 1)
	sc := &fileScan[T]{path: path, f: f, size: st.Size(), parse: parse, merge: merge, pre: pre, dg: dg}
	sc.nchunks = int((sc.size + chunkSize - 1) / chunkSize)
	if digest != nil {
		sc.sums = make([][32]byte, max(sc.nchunks, 1))
		sc.sums[0] = dg.BlockSum(nil) // an empty file's one block
	}
	// A window of 2 chunks a worker and one more: the worker that holds
	// the next chunk to merge may be descheduled for a while, and the
	// others keep reading and parsing until the window is full. A wider
	// window is slower: the chunk buffers then no longer stay in the CPU's
	// cache, and every read writes its chunk into memory that must first
	// be fetched (1M re-judge, CPU seconds at best: 10 chunks 14.5-15.6,
	// 7 chunks 15.2, 5 chunks 12.7-13.7, 4 chunks 12.4).
	inflight := workers*2 + 1
	sc.slots = make([]*chunk[T], inflight)
	for i := range sc.slots {
		sc.slots[i] = &chunk[T]{}
	}
	sc.ready = make([]bool, inflight)
	// tokens bound how far the workers run ahead of the merge: a worker
	// takes a token, then the next chunk number, so at most `inflight`
	// chunks are read and not yet merged, and slot k%inflight is free.
	sc.tokens = make(chan struct{}, inflight)
	for range inflight {
		sc.tokens <- struct{}{}
	}
	// The workers' first error (a malformed line, a read error, ctx's
	// end) cancels the others through the group's context.
	g, gctx := errgroup.WithContext(ctx)
	for w := range workers {
		g.Go(func() error { return sc.work(gctx, ws[w]) })
	}
	if err := g.Wait(); err != nil {
		return sc.total, err
	}
	if sc.nextMerge != sc.nchunks {
		return sc.total, fmt.Errorf("read %s: %d of %d chunks merged", path, sc.nextMerge, sc.nchunks)
	}
	if digest != nil {
		*digest = dg.CombineBlocks(sc.sums)
	}
	return sc.total, nil
}

// fileScan is one scanFile: the file, its window of chunks, and the merge
// state, which only the merging worker touches (merging, under mu, says
// which one that is).
type fileScan[T any] struct {
	path    string
	f       *os.File
	size    int64
	nchunks int
	sums    [][32]byte // the digest's blocks, when a digest is wanted
	dg      evidence.Digester
	parse   lineParser[T]
	merge   lineMerger[T]
	pre     linePrefetcher[T]
	slots   []*chunk[T]
	tokens  chan struct{}
	next    atomic.Int64 // the next chunk to read

	mu        sync.Mutex
	ready     []bool // by slot: read and parsed, not yet merged
	merging   bool
	nextMerge int
	lineBase  int
	total     int64
}

// work is one worker: take a token, read and parse the next chunk, and
// merge every chunk that is ready in file order unless another worker is
// merging already.
func (sc *fileScan[T]) work(ctx context.Context, w *worker) error {
	inflight := len(sc.slots)
	for {
		select {
		case <-sc.tokens:
		case <-ctx.Done():
			return ctx.Err()
		}
		k := int(sc.next.Add(1) - 1)
		if k >= sc.nchunks {
			return nil
		}
		c := sc.slots[k%inflight]
		var sum *[32]byte
		if sc.sums != nil {
			sum = &sc.sums[k]
		}
		readChunk(sc.f, int64(k)*chunkSize, sc.size, c, sc.dg, sum)
		if c.err == nil {
			parseChunk(w, c, sc.parse)
		}
		sc.mu.Lock()
		sc.ready[k%inflight] = true
		if sc.merging {
			sc.mu.Unlock()
			continue
		}
		sc.merging = true
		var err error
		for ctx.Err() == nil && sc.nextMerge < sc.nchunks && sc.ready[sc.nextMerge%inflight] {
			m := sc.slots[sc.nextMerge%inflight]
			sc.ready[sc.nextMerge%inflight] = false
			sc.mu.Unlock()
			err = sc.mergeChunk(m) // only the merging worker touches the merge state
			sc.mu.Lock()
			sc.nextMerge++
			if err != nil {
				break
			}
			sc.tokens <- struct{}{}
		}
		sc.merging = false
		sc.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// mergeChunk hands a chunk's parsed lines to the merger in file order; the
// first failed line (or a read error) is the file's error.
func (sc *fileScan[T]) mergeChunk(c *chunk[T]) error {
	if c.err != nil && c.errAt < 0 {
		if errors.Is(c.err, errLineTooLong) {
			// The long line follows the chunk's complete lines.
			return lineError(sc.path, sc.lineBase+bytes.Count(c.buf, []byte{'\n'})+1, c.err)
		}
		return fmt.Errorf("read %s: %w", sc.path, c.err)
	}
	if sc.pre != nil {
		n := len(c.lines)
		if c.err != nil {
			n = c.errAt
		}
		sc.pre(c.out[:n])
	}
	for n := range c.lines {
		ref := &c.lines[n]
		lineNo := sc.lineBase + ref.lineNo + 1
		if c.err != nil && n == c.errAt {
			return lineError(sc.path, lineNo, c.err)
		}
		if merr := sc.merge(lineNo, c.base+int64(ref.start), &c.out[n]); merr != nil {
			return lineError(sc.path, lineNo, merr)
		}
	}
	sc.lineBase += c.nlines
	sc.total += int64(len(c.buf))
	return nil
}

// readChunk reads the lines that start in [off, off+chunkSize) into c.buf:
// from the first line start at or after off to the end of the last line
// that starts before off+chunkSize.
//
// sum, when set, receives the digest block [off, off+chunkSize) of the file,
// hashed while it is in cache.
func readChunk[T any](f *os.File, off, size int64, c *chunk[T], dg evidence.Digester, sum *[32]byte) {
	c.err, c.errAt, c.nlines, c.lines = nil, -1, 0, c.lines[:0]
	end := min(off+chunkSize, size)
	from := off
	if off > 0 {
		from = off - 1 // to see whether a line starts exactly at off
	}
	need := int(end - from)
	if cap(c.buf) < need+4096 {
		c.buf = make([]byte, 0, need+64<<10)
	}
	c.buf = c.buf[:need]
	if _, err := f.ReadAt(c.buf, from); err != nil && !errors.Is(err, io.EOF) {
		c.err = err
		return
	}
	if sum != nil {
		*sum = dg.BlockSum(c.buf[off-from:])
	}
	skip := 0
	if off > 0 {
		// The first line start is after the first newline at or after off-1.
		nl := bytes.IndexByte(c.buf, '\n')
		if nl < 0 {
			c.buf, c.base = c.buf[:0], end // inside a line that started earlier
			return
		}
		skip = nl + 1
	}
	// Extend to the end of the line that straddles the chunk's end, up to
	// fileio.MaxLineBytes (a longer line is never held whole), reading
	// 16 KiB first (most lines end there: the next chunk reads these bytes
	// again) and twice as much each time after.
	lineStart := from + int64(skip) // of the straddling line
	if nl := bytes.LastIndexByte(c.buf[skip:], '\n'); nl >= 0 {
		lineStart = from + int64(skip+nl+1)
	}
	tooLong := func() {
		c.buf = c.buf[:lineStart-from] // the complete lines before it
		c.buf, c.base, c.err = c.buf[skip:], from+int64(skip), errLineTooLong
	}
	ext := int64(16 << 10)
	for pos := from + int64(len(c.buf)); pos < size && c.buf[len(c.buf)-1] != '\n'; ext = min(2*ext, chunkSize) {
		if pos-lineStart > fileio.MaxLineBytes {
			tooLong()
			return
		}
		grow := int(min(ext, size-pos))
		if len(c.buf)+grow > cap(c.buf) {
			nb := make([]byte, len(c.buf), 2*cap(c.buf)+grow)
			copy(nb, c.buf)
			c.buf = nb
		}
		n, err := f.ReadAt(c.buf[len(c.buf):len(c.buf)+grow], pos)
		if err != nil && !errors.Is(err, io.EOF) {
			c.err = err
			return
		}
		tail := c.buf[len(c.buf) : len(c.buf)+n]
		c.buf = c.buf[:len(c.buf)+n]
		pos += int64(n)
		if nl := bytes.IndexByte(tail, '\n'); nl >= 0 {
			c.buf = c.buf[:len(c.buf)-n+nl+1]
			if from+int64(len(c.buf))-1-lineStart > fileio.MaxLineBytes {
				tooLong()
				return
			}
			break
		}
		if n == 0 {
			break
		}
	}
	c.buf = c.buf[skip:]
	c.base = from + int64(skip)
}

// parseChunk splits a chunk into lines and parses each non-blank one.
func parseChunk[T any](w *worker, c *chunk[T], parse lineParser[T]) {
	var zero T
	lineNo := 0
	for start := 0; start < len(c.buf); lineNo++ {
		end := bytes.IndexByte(c.buf[start:], '\n')
		terminated := end >= 0
		if terminated {
			end += start
		} else {
			end = len(c.buf)
		}
		body := c.buf[start:end]
		if n := len(body); n > 0 && body[n-1] == '\r' {
			body = body[:n-1]
		}
		if !isBlank(body) {
			k := len(c.lines)
			c.lines = append(c.lines, lineRef{start: start, lineNo: lineNo})
			if k < len(c.out) {
				c.out[k] = zero
			} else {
				c.out = append(c.out, zero)
			}
			if !terminated {
				c.err, c.errAt = errTruncated, k
				return
			}
			if err := parse(w, body, &c.out[k]); err != nil {
				c.err, c.errAt = err, k
				return
			}
		}
		start = end + 1
	}
	c.nlines = lineNo
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// fieldError names the field a parse or check failed on.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.field + ": " + e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

func inField(field string, err error) error {
	if err == nil || field == "" {
		return err
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return &fieldError{field: field + "." + fe.field, err: fe.err}
	}
	return &fieldError{field: field, err: err}
}

// lineError is the "file:line: field: problem" error qual/aiperf uses.
// errLineTooLong is a line past fileio.MaxLineBytes: the scan stops
// there (the line is never held whole).
var errLineTooLong error = lineTooLong{}

type lineTooLong struct{}

func (lineTooLong) Error() string {
	return fmt.Sprintf("line is longer than %d MiB, the limit for one line (fileio.MaxLineBytes)", fileio.MaxLineBytes>>20)
}

// Is makes errors.Is(err, fileio.ErrTooLarge) true.
func (lineTooLong) Is(target error) bool { return target == fileio.ErrTooLarge }

func lineError(path string, lineNo int, err error) error {
	var fe *fieldError
	if errors.As(err, &fe) {
		return &aiperf.ParseError{File: path, Line: lineNo, Field: fe.field, Err: fe.err}
	}
	return &aiperf.ParseError{File: path, Line: lineNo, Err: err}
}
