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

	"github.com/trtmc-qual/trtmc-qual/reports/publish"
)

// TestKeptEvidenceIsPublic: what the repository keeps of the GPU runs
// (docs/evidence, for anyone to read) holds no absolute path of a host,
// no IP address, no name of this host or its users, no credential and no
// host's listing of / (host_top_dirs) - scanned with the one leak scanner
// every publication goes through, in every encoding, every file (gzip
// ones unpacked).
func TestKeptEvidenceIsPublic(t *testing.T) {
	id := publish.HostIdentity(os.Getenv)
	leaks := publish.NewLeakScanner(publish.NewScrubber(nil, id), nil, nil)
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
		assert.NotContains(t, string(data), "host_top_dirs", "%s: a host's listing of / is never published", path)
		scan := leaks.File()
		for n, line := range strings.Split(string(data), "\n") {
			scan.Line(line, func(l publish.Leak) {
				t.Errorf("%s:%d: %s %q", path, n+1, l.Kind, l.Text)
			})
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 20, "docs/evidence holds the kept GPU runs")
}
