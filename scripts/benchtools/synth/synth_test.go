package synth

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteIsDeterministic: the same config writes the same bytes, and a
// different seed different ones.
func TestWriteIsDeterministic(t *testing.T) {
	write := func(seed uint64) map[string][]byte {
		dir := t.TempDir()
		_, err := Write(dir, Config{Requests: 600, Seed: seed, ImageMin: 64, ImageMax: 128})
		require.NoError(t, err)
		out := map[string][]byte{}
		for _, f := range []string{FileRecords, FileRaw, FileServer, FileNative, FileDataset, FileExpected} {
			data, err := os.ReadFile(filepath.Join(dir, f))
			require.NoError(t, err)
			out[f] = data
		}
		return out
	}
	a, b, c := write(3), write(3), write(4)
	for f := range a {
		assert.True(t, bytes.Equal(a[f], b[f]), "%s differs between two runs", f)
		if f != FileExpected {
			assert.False(t, bytes.Equal(a[f], c[f]), "%s is the same for another seed", f)
		}
	}
}

func TestWriteRejects(t *testing.T) {
	_, err := Write(t.TempDir(), Config{Requests: 5})
	assert.Error(t, err)
	_, err = Write(t.TempDir(), Config{Requests: 50, Family: "nope"})
	assert.Error(t, err)
}
