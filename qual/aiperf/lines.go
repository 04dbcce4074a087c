package aiperf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// readBufferSize is the bufio buffer for JSONL files. Lines longer than this
// (raw records carry base64 images) are assembled in a reusable scratch
// slice, up to fileio.MaxLineBytes: a longer line is a *ParseError naming
// file, line and limit.
const readBufferSize = 1 << 20

// ParseError locates a problem in an artifact: "file:line: field: problem".
// Line is 0 when the problem concerns the whole file.
type ParseError struct {
	File  string
	Line  int
	Field string
	Err   error
}

func (e *ParseError) Error() string {
	loc := filepath.Base(e.File)
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %v", loc, e.Field, e.Err)
	}
	return fmt.Sprintf("%s: %v", loc, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// errTruncated marks a last line with no newline: the writer was interrupted.
var errTruncated = errors.New("last line has no newline (file truncated?)")

// scanLines calls fn for every non-blank line of path, with its 1-based line
// number. The slice passed to fn is only valid during the call; fn must copy
// what it keeps (json.Unmarshal does). Memory does not grow with the number
// of lines, only with the longest line.
func scanLines(path string, fn func(lineNo int, line []byte) error) error {
	f, _, err := fileio.OpenRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	size := readBufferSize
	if st, err := f.Stat(); err == nil && st.Size() < int64(size) {
		size = max(int(st.Size())+1, 4096) // small files need no 1 MiB buffer
	}
	return scanReader(path, f, size, fn)
}

func scanReader(path string, r io.Reader, bufSize int, fn func(lineNo int, line []byte) error) error {
	br := bufio.NewReaderSize(r, bufSize)
	var long []byte // reused for lines longer than the buffer
	lineNo := 0
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				if len(long) > fileio.MaxLineBytes {
					return &ParseError{File: path, Line: lineNo + 1, Err: fmt.Errorf("line is longer than %d MiB, the limit for one line (fileio.MaxLineBytes)", fileio.MaxLineBytes>>20)}
				}
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(trimEOL(line)) > fileio.MaxLineBytes {
			return &ParseError{File: path, Line: lineNo + 1, Err: fmt.Errorf("line is longer than %d MiB, the limit for one line (fileio.MaxLineBytes)", fileio.MaxLineBytes>>20)}
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if len(line) == 0 && errors.Is(err, io.EOF) {
			return nil
		}
		lineNo++
		terminated := line[len(line)-1] == '\n'
		body := trimEOL(line)
		if !isBlank(body) {
			if !terminated {
				return &ParseError{File: path, Line: lineNo, Err: errTruncated}
			}
			if ferr := fn(lineNo, body); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	return b
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}
