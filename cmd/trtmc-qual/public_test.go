package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
)

// TestKeptEvidenceIsPublic: what the repository keeps of the GPU runs
// (docs/evidence, for anyone to read) holds no absolute path of a host,
// no IP address, and no name of this host or its users - scanned with the
// scrubber published text goes through, every file (gzip ones unpacked).
func TestKeptEvidenceIsPublic(t *testing.T) {
	id := hostIdentity(os.Getenv)
	scrub := reports.NewScrubber(nil, id)
	files := 0
	err := filepath.WalkDir(repoFile("docs", "evidence"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		if strings.HasSuffix(path, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			require.NoError(t, err, path)
			data, err = io.ReadAll(zr)
			require.NoError(t, err, path)
		}
		files++
		for n, line := range strings.Split(string(data), "\n") {
			scrub.Spans(line, func(sp reports.Span) {
				t.Errorf("%s:%d: %s %q", path, n+1, sp.Kind, line[sp.Start:sp.End])
			})
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 20, "docs/evidence holds the kept GPU runs")
}
