package fileio

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 13, finding 3: inputs that never end. Each of these used to grow
// to all memory, hash forever or hang; each is now refused before a byte
// is read, whatever it is reached through (directly or by a link).
func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	link := filepath.Join(dir, "link-to-zero")
	require.NoError(t, os.Symlink("/dev/zero", link))
	for path, what := range map[string]string{
		"/dev/zero": "a character device", link: "a character device", fifo: "a FIFO", dir: "a directory",
	} {
		done := make(chan error, 3)
		go func() {
			_, err := ReadFile(context.Background(), path, MaxConfigBytes)
			done <- err
			_, err = FileSHA256(context.Background(), path)
			done <- err
			_, _, err = OpenLines(context.Background(), path, MaxLineBytes)
			done <- err
		}()
		for i := 0; i < 3; i++ {
			select {
			case err := <-done:
				require.Error(t, err, path)
				assert.ErrorIs(t, err, ErrNotRegular, path)
				assert.Contains(t, err.Error(), path+" is not a regular file (it is "+what+")")
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: a read hung", path)
			}
		}
	}
	require.ErrorIs(t, CheckDir(fifo), ErrNotRegular)
	require.NoError(t, CheckDir(dir))
	require.ErrorIs(t, CheckDir(filepath.Join(dir, "none")), os.ErrNotExist)
}

func TestReadFileCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	require.NoError(t, os.WriteFile(p, []byte(strings.Repeat("x", 1000)), 0o644))
	data, err := ReadFile(context.Background(), p, 1000)
	require.NoError(t, err)
	assert.Len(t, data, 1000)
	_, err = ReadFile(context.Background(), p, 999)
	var tl *TooLargeError
	require.ErrorAs(t, err, &tl)
	assert.ErrorIs(t, err, ErrTooLarge)
	assert.Equal(t, p+" is larger than 999 bytes, the limit for this file", err.Error())
}

// The bundle hash stops when the run is interrupted (the first Ctrl-C
// used not to stop hashing /dev/zero; now a device is refused outright,
// and a long regular file stops at the next chunk).
func TestFileSHA256StopsOnCancel(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bundle")
	require.NoError(t, os.WriteFile(p, make([]byte, 8<<20), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := FileSHA256(ctx, p)
	assert.ErrorIs(t, err, context.Canceled)
	sum, err := FileSHA256(context.Background(), p)
	require.NoError(t, err)
	assert.Len(t, sum, 64)
}

func TestLineReader(t *testing.T) {
	read := func(in string, limit int) ([]string, error) {
		lr := NewLineReader(context.Background(), "f.jsonl", strings.NewReader(in), limit)
		var out []string
		for {
			l, _, nl, err := lr.Next()
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				return out, err
			}
			s := string(l)
			if !nl {
				s += "<no newline>"
			}
			out = append(out, s)
		}
	}
	got, err := read("ab\ncd\n\nef", 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"ab", "cd", "", "ef<no newline>"}, got)
	got, err = read("ab\nabc\nx\n", 2)
	assert.Equal(t, []string{"ab"}, got)
	assert.EqualError(t, err, "f.jsonl:2: line is longer than 2 bytes, the limit for one line (fileio.MaxLineBytes)")
	_, err = read("abc", 2)
	assert.ErrorIs(t, err, ErrTooLarge)
	// A line far longer than the reader's buffer is refused without
	// holding more than the limit.
	long := strings.Repeat("y", 3<<20) + "\n"
	_, err = read(long, 1<<20)
	assert.ErrorIs(t, err, ErrTooLarge)
	got, err = read(long, 3<<20)
	require.NoError(t, err)
	assert.Len(t, got[0], 3<<20)
}
