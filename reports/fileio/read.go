package fileio

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// Size caps of what the harness reads. Every file is read with one of
// these; past it the read stops with a *TooLargeError naming the file and
// the limit, so an endless or huge input can never exhaust memory.
const (
	// MaxConfigBytes caps configuration: inventory files, families.yaml,
	// the config file, spec-group files.
	MaxConfigBytes int64 = 16 << 20
	// MaxDocumentBytes caps one JSON document of evidence or of a child's
	// output: result.json, correctness.json, inventory.json, corpus.json,
	// argv.json, AIPerf's summary.
	MaxDocumentBytes int64 = 64 << 20
	// MaxLineBytes caps one line of a JSON Lines file (server records,
	// native answers, joined.jsonl, AIPerf's exports). A raw AIPerf record
	// holds the request payload (a base64 image) and the whole response.
	MaxLineBytes = 64 << 20
	// MaxImageBytes caps one corpus image. Its base64 form (4/3 of it)
	// inside a request payload still fits one line under MaxLineBytes.
	MaxImageBytes int64 = 32 << 20
	// MaxAnswerBytes caps one HTTP answer (a response body as AIPerf
	// recorded it). An answer past it is not kept: its request is an
	// error (answer_too_large) and the row cannot qualify.
	MaxAnswerBytes = 16 << 20
)

// ErrTooLarge is matched (errors.Is) by every *TooLargeError.
var ErrTooLarge = errors.New("over its size limit")

// TooLargeError is a file (or one line of it) larger than the cap the
// harness reads it with.
type TooLargeError struct {
	Path string
	// Line is the 1-based line that is too long, 0 for a whole file.
	Line  int
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: line is longer than %s, the limit for one line (fileio.MaxLineBytes)", e.Path, e.Line, humanBytes(e.Limit))
	}
	return fmt.Sprintf("%s is larger than %s, the limit for this file", e.Path, humanBytes(e.Limit))
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// ErrNotRegular is matched by every *NotRegularError.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError is a path that is not the kind of file the harness
// reads there: a device, a FIFO, a socket or a directory where a regular
// file is meant, or anything but a directory where a directory is meant.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
	// WantDir is set when a directory was meant.
	WantDir bool
}

func (e *NotRegularError) Error() string {
	want := "a regular file"
	if e.WantDir {
		want = "a directory"
	}
	return fmt.Sprintf("%s is not %s (it is %s)", e.Path, want, kind(e.Mode))
}

// Is makes errors.Is(err, ErrNotRegular) true.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	case m.IsRegular():
		return "a regular file"
	}
	return "a " + m.Type().String() + " file"
}

// OpenRegular opens path for reading only if it is a regular file (after
// following links). It opens without blocking (O_NONBLOCK), so a FIFO with
// no writer cannot hang the harness, and without acquiring a controlling
// terminal (O_NOCTTY); then it checks the open file with fstat, so what is
// checked is what is read. Anything else is a *NotRegularError.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return f, st, nil
}

// CheckDir returns nil when path is a directory (after following links),
// a *NotRegularError when it is something else, and stat's error (e.g.
// fs.ErrNotExist) when there is nothing.
func CheckDir(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return &NotRegularError{Path: path, Mode: st.Mode(), WantDir: true}
	}
	return nil
}

// CheckRegular returns nil when path is a regular file (after following
// links), a *NotRegularError when it is something else, and stat's error
// when there is nothing. It does not open the file.
func CheckRegular(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return &NotRegularError{Path: path, Mode: st.Mode()}
	}
	return nil
}

// ReadFile reads a whole regular file of at most limit bytes under ctx:
// OpenRegular, then reads in chunks that each check ctx, so Ctrl-C stops
// it. A file larger than limit (or one that grows past it while read) is a
// *TooLargeError.
func ReadFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, st, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	var buf bytes.Buffer
	buf.Grow(int(st.Size()) + 1)
	n, err := io.Copy(&buf, io.LimitReader(NewContextReader(ctx, f), limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if n > limit {
		return nil, &TooLargeError{Path: path, Limit: limit}
	}
	return buf.Bytes(), nil
}

// contextReader fails a Read once its context is done.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

// NewContextReader returns a reader that checks ctx before every Read of
// r (at most 1 MiB at a time), so a long read stops soon after ctx ends.
func NewContextReader(ctx context.Context, r io.Reader) io.Reader {
	return &contextReader{ctx: ctx, r: r}
}

func (c *contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) > 1<<20 {
		p = p[:1<<20]
	}
	return c.r.Read(p)
}

// FileSHA256 returns the hex sha256 of a regular file's bytes, reading in
// chunks that each check ctx: a huge bundle is hashed to the end unless
// the run is interrupted, and a device or FIFO is refused at once.
func FileSHA256(ctx context.Context, path string) (string, error) {
	f, _, err := OpenRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, NewContextReader(ctx, f), make([]byte, 1<<20)); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// LineReader reads a JSON Lines file one line at a time with a cap on a
// line's length, under a context.
type LineReader struct {
	path  string
	r     *bufio.Reader
	limit int
	line  int
	buf   []byte
}

// NewLineReader reads lines of at most limit bytes (newline excluded)
// from r; path names the file in errors.
func NewLineReader(ctx context.Context, path string, r io.Reader, limit int) *LineReader {
	return &LineReader{path: path, r: bufio.NewReaderSize(NewContextReader(ctx, r), 1<<20), limit: limit}
}

// Next returns the next line without its newline, its 1-based number, and
// whether it ended with a newline (false only for a last line cut short).
// At the end it returns io.EOF. A line longer than the limit is a
// *TooLargeError naming the file and line; the reader stops there. The
// returned slice is valid until the next call.
func (l *LineReader) Next() (line []byte, n int, newline bool, err error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		l.buf = append(l.buf, chunk...)
		if len(l.buf) > l.limit+1 || len(l.buf) == l.limit+1 && l.buf[l.limit] != '\n' {
			l.line++
			return nil, l.line, false, &TooLargeError{Path: l.path, Line: l.line, Limit: int64(l.limit)}
		}
		switch {
		case err == nil:
			l.line++
			return l.buf[:len(l.buf)-1], l.line, true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(l.buf) == 0 {
				return nil, l.line, false, io.EOF
			}
			l.line++
			return l.buf, l.line, false, nil
		default:
			return nil, l.line, false, fmt.Errorf("read %s: %w", l.path, err)
		}
	}
}

// OpenLines opens a regular file for a LineReader.
func OpenLines(ctx context.Context, path string, limit int) (*LineReader, io.Closer, error) {
	f, _, err := OpenRegular(path)
	if err != nil {
		return nil, nil, err
	}
	return NewLineReader(ctx, path, f, limit), f, nil
}

// ReadProblem words a read error of path for a message that already names
// the file: "cannot open the inventory: no such file or directory", "the
// inventory is not a regular file (it is a FIFO)".
func ReadProblem(what, path string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		return fmt.Sprintf("cannot %s %s: %v", pe.Op, what, pe.Err)
	}
	if rest, ok := strings.CutPrefix(err.Error(), path+" "); ok {
		return what + " " + rest
	}
	return fmt.Sprintf("cannot read %s: %v", what, err)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
