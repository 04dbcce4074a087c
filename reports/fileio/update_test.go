package fileio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUpdateFileLosesNoUpdate: many updaters of one file at once (each
// opens it on its own, as separate processes do; flock locks belong to
// the open file), each adding its line: every line is there at the end.
func TestUpdateFileLosesNoUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "page.md")
	require.NoError(t, os.WriteFile(path, []byte("# page\n"), 0o640))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				_, err := UpdateFile(context.Background(), path, 1<<20, 30*time.Second, func(old []byte) ([]byte, error) {
					return append(append([]byte{}, old...), fmt.Sprintf("w%d-%d\n", w, i)...), nil
				})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	assert.Len(t, lines, 1+8*25, "no update lost")
	sort.Strings(lines)
	for i := 1; i < len(lines); i++ {
		assert.NotEqual(t, lines[i-1], lines[i])
	}
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm(), "permissions kept")
	entries, _ := os.ReadDir(filepath.Dir(path))
	assert.Len(t, entries, 1, "no temporary file left")
}

// TestUpdateFileRefusesAChangedFile: a writer that takes no lock (an
// editor) changes the file between the read and the rename: the update
// writes nothing and says so; a lock held past the wait is refused too; an
// unchanged result writes nothing; an oversized file is refused.
func TestUpdateFileRefusesAChangedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "page.md")
	require.NoError(t, os.WriteFile(path, []byte("v1\n"), 0o644))
	changed, err := UpdateFile(context.Background(), path, 1<<20, time.Second, func(old []byte) ([]byte, error) {
		require.NoError(t, os.WriteFile(path, []byte("edited\n"), 0o644)) // in place, no lock
		return []byte("mine\n"), nil
	})
	var ce *ChangedError
	require.ErrorAs(t, err, &ce)
	assert.False(t, changed)
	assert.Contains(t, err.Error(), "page.md changed while it was being updated")
	data, _ := os.ReadFile(path)
	assert.Equal(t, "edited\n", string(data), "the editor's change is kept")

	changed, err = UpdateFile(context.Background(), path, 1<<20, time.Second, func(old []byte) ([]byte, error) { return old, nil })
	require.NoError(t, err)
	assert.False(t, changed)

	f, _, err := OpenRegular(path)
	require.NoError(t, err)
	ok, err := TryLock(f)
	require.NoError(t, err)
	require.True(t, ok)
	_, err = UpdateFile(context.Background(), path, 1<<20, 50*time.Millisecond, func(old []byte) ([]byte, error) { return []byte("x"), nil })
	var be *BusyError
	assert.ErrorAs(t, err, &be)
	f.Close()

	_, err = UpdateFile(context.Background(), path, 3, time.Second, func(old []byte) ([]byte, error) { return []byte("x"), nil })
	assert.True(t, errors.Is(err, ErrTooLarge), "%v", err)
	sentinel := errors.New("no")
	_, err = UpdateFile(context.Background(), path, 1<<20, time.Second, func(old []byte) ([]byte, error) { return nil, sentinel })
	assert.ErrorIs(t, err, sentinel)
	data, _ = os.ReadFile(path)
	assert.Equal(t, "edited\n", string(data))
}
