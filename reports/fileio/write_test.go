package fileio

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteFileAtomicLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "result.json")
	require.NoError(t, WriteFile(p, []byte("one")))
	require.NoError(t, WriteFile(p, []byte("two")))
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "two", string(data))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temp files left behind")
}

func TestWriteFileReadOnlyDirKeepsOld(t *testing.T) {
	if os.Geteuid() == 0 {
		// root ignores directory permissions; use a missing directory instead.
		err := WriteFile(filepath.Join(t.TempDir(), "missing", "x"), []byte("x"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "write ")
		return
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	require.NoError(t, WriteFile(p, []byte("old")))
	require.NoError(t, os.Chmod(dir, 0o555))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	require.Error(t, WriteFile(p, []byte("new")))
	data, _ := os.ReadFile(p)
	assert.Equal(t, "old", string(data))
}

func TestDigests(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, []byte("abc"), 0o644))
	sum, err := FileSHA256(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", sum)
	assert.Equal(t, sum, SHA256([]byte("abc")))
}
