package aiperf

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fixtureMeta is testdata/<name>/fixture.json: how a fixture was produced.
type fixtureMeta struct {
	Argv     []string `json:"argv"`
	Version  string   `json:"version"`
	ExitCode int      `json:"exit_code"`
	Warmup   int      `json:"warmup"`
	Measured int      `json:"measured"`
	Dataset  Dataset  `json:"dataset"`
}

// gunzipFile returns the decompressed content of a .gz fixture file.
func gunzipFile(tb testing.TB, path string) []byte {
	tb.Helper()
	f, err := os.Open(path)
	require.NoError(tb, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(tb, err)
	data, err := io.ReadAll(zr)
	require.NoError(tb, err)
	return data
}

// fixture copies testdata/<name> (artifacts of a real AIPerf 0.13.0 run) to
// a temp dir the test may damage, and returns it with its metadata.
func fixture(t testing.TB, name string) (string, fixtureMeta) {
	t.Helper()
	src := filepath.Join("testdata", name)
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(rel, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				return err
			}
			if data, err = io.ReadAll(zr); err != nil {
				return err
			}
			rel = strings.TrimSuffix(rel, ".gz")
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	require.NoError(t, err)
	var meta fixtureMeta
	data, err := os.ReadFile(filepath.Join(dst, "fixture.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &meta))
	meta.Dataset.index()
	return dst, meta
}
