package streamjoin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
)

// chunkSize is how much of a file one worker parses at a time. A line
// longer than this grows its chunk; memory stays bounded by
// (workers*2+2) chunks plus the longest line.
const chunkSize = 4 << 20

var errTruncated = errors.New("last line has no newline (file truncated?)")

// lineParser parses one line into *T, in a worker goroutine. The line
// aliases the chunk buffer and stays valid until the chunk is merged.
type lineParser[T any] func(w *worker, line []byte, out *T) error

// lineMerger consumes parsed lines in file order, in one goroutine. off is
// the line's byte offset in the file, lineNo its 1-based line number.
type lineMerger[T any] func(lineNo int, off int64, v *T) error

// worker is one parsing goroutine's reusable state.
type worker struct {
	h    hasher
	ex   families.Extractor
	fam  *families.Family
	body []byte // the response body being assembled
	memo *memo  // nil: extract every answer
}

type chunk[T any] struct {
	buf   []byte
	base  int64 // file offset of buf[0]
	lines []lineRef
	out   []T
	err   error
	errAt int // index in lines of the failed line
	// nlines counts every line of the chunk, blank ones included.
	nlines int
	done   chan struct{}
}

type lineRef struct {
	start, end int // within buf, without the newline
	lineNo     int // within the chunk, 0-based
}

// scanFile reads path in chunks, parses the non-blank lines on `workers`
// goroutines and merges them in file order. It is the parallel
// counterpart of qual/aiperf's scanLines: no line-length limit, the same
// errors ("file:line: field: problem"), a truncated last line is an error.
func scanFile[T any](ctx context.Context, path string, workers int, ws []*worker, parse lineParser[T], merge lineMerger[T]) (bytesRead int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if workers < 1 {
		workers = 1
	}
	nbuf := workers*2 + 2
	free := make(chan *chunk[T], nbuf)
	for range nbuf {
		free <- &chunk[T]{buf: make([]byte, 0, chunkSize), done: make(chan struct{}, 1)}
	}
	todo := make(chan *chunk[T], nbuf)
	order := make(chan *chunk[T], nbuf)
	stop := make(chan struct{})
	var readErr error
	var wg sync.WaitGroup

	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range todo {
				parseChunk(ws[w], c, parse)
				c.done <- struct{}{}
			}
		}()
	}
	// Reader: fill chunks that end on a line boundary.
	go func() {
		defer close(order)
		defer close(todo)
		var carry []byte // the partial last line of the previous chunk
		var off int64
		for {
			var c *chunk[T]
			select {
			case c = <-free:
			case <-stop:
				return
			}
			c.buf = append(c.buf[:0], carry...)
			c.base = off
			eof := false
			for {
				if len(c.buf) == cap(c.buf) {
					if bytes.LastIndexByte(c.buf, '\n') >= 0 {
						break
					}
					c.buf = slices.Grow(c.buf, cap(c.buf)) // a line longer than the chunk
				}
				n, rerr := f.Read(c.buf[len(c.buf):cap(c.buf)])
				c.buf = c.buf[:len(c.buf)+n]
				if rerr == io.EOF {
					eof = true
					break
				}
				if rerr != nil {
					readErr = fmt.Errorf("read %s: %w", path, rerr)
					return
				}
			}
			cut := len(c.buf)
			if !eof {
				cut = bytes.LastIndexByte(c.buf, '\n') + 1
			}
			carry = append(carry[:0], c.buf[cut:]...)
			c.buf = c.buf[:cut]
			off += int64(cut)
			order <- c
			todo <- c
			if eof {
				return
			}
		}
	}()

	lineBase := 0
	defer func() {
		close(stop)
		for range order { // drain so the reader and workers finish
		}
		wg.Wait()
	}()
	for c := range order {
		<-c.done
		if err := ctx.Err(); err != nil {
			return bytesRead, err
		}
		for k := range c.lines {
			ref := &c.lines[k]
			lineNo := lineBase + ref.lineNo + 1
			if c.err != nil && k == c.errAt {
				return bytesRead, lineError(path, lineNo, c.err)
			}
			if merr := merge(lineNo, c.base+int64(ref.start), &c.out[k]); merr != nil {
				return bytesRead, lineError(path, lineNo, merr)
			}
		}
		lineBase += c.nlines
		bytesRead += int64(len(c.buf))
		select {
		case free <- c:
		default:
		}
	}
	if readErr != nil {
		return bytesRead, readErr
	}
	return bytesRead, nil
}

// parseChunk splits a chunk into lines and parses each non-blank one.
func parseChunk[T any](w *worker, c *chunk[T], parse lineParser[T]) {
	c.lines = c.lines[:0]
	c.err = nil
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
		next := end + 1
		body := c.buf[start:end]
		if n := len(body); n > 0 && body[n-1] == '\r' {
			body = body[:n-1]
		}
		if !isBlank(body) {
			k := len(c.lines)
			c.lines = append(c.lines, lineRef{start: start, end: start + len(body), lineNo: lineNo})
			if k < len(c.out) {
				c.out[k] = zero
			} else {
				c.out = append(c.out, zero)
			}
			switch {
			case !terminated:
				c.err, c.errAt = errTruncated, k
				return
			default:
				if err := parse(w, body, &c.out[k]); err != nil {
					c.err, c.errAt = err, k
					return
				}
			}
		}
		start = next
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
	if err == nil {
		return nil
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return &fieldError{field: field + "." + fe.field, err: fe.err}
	}
	return &fieldError{field: field, err: err}
}

// lineError is the "file:line: field: problem" error qual/aiperf uses.
func lineError(path string, lineNo int, err error) error {
	var fe *fieldError
	if errors.As(err, &fe) {
		return &aiperf.ParseError{File: path, Line: lineNo, Field: fe.field, Err: fe.err}
	}
	return &aiperf.ParseError{File: path, Line: lineNo, Err: err}
}
