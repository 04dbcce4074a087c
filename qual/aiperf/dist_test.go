package aiperf

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// fakeVenv lays out <venv>/bin/aiperf and the dist-info directories given
// (name -> METADATA).
func fakeVenv(t *testing.T, dists map[string]string) string {
	t.Helper()
	venv := t.TempDir()
	bin := filepath.Join(venv, "bin", "aiperf")
	require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755))
	for name, meta := range dists {
		d := filepath.Join(venv, "lib", "python3.11", "site-packages", name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "METADATA"), []byte(meta), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(d, "RECORD"), []byte("aiperf/__init__.py,sha256=abc,12\n"), 0o644))
	}
	return bin
}

func TestFindDistInfo(t *testing.T) {
	meta := "Metadata-Version: 2.5\nName: aiperf\nVersion: 0.13.0\n\nVersion: not a header\n"
	bin := fakeVenv(t, map[string]string{"aiperf-0.13.0.dist-info": meta})
	d, err := FindDistInfo(context.Background(), bin)
	require.NoError(t, err)
	assert.Equal(t, "aiperf", d.Name)
	assert.Equal(t, "0.13.0", d.Version)
	assert.Equal(t, fileio.SHA256([]byte(meta)), d.MetadataSHA256)
	assert.Equal(t, fileio.SHA256([]byte("aiperf/__init__.py,sha256=abc,12\n")), d.RecordSHA256)

	_, err = FindDistInfo(context.Background(), fakeVenv(t, nil))
	assert.ErrorContains(t, err, "no aiperf-*.dist-info")
	_, err = FindDistInfo(context.Background(), fakeVenv(t, map[string]string{"aiperf-0.13.0.dist-info": meta, "aiperf-0.12.0.dist-info": meta}))
	assert.ErrorContains(t, err, "2 aiperf dist-info directories")
	_, err = FindDistInfo(context.Background(), fakeVenv(t, map[string]string{"aiperf-0.13.0.dist-info": "Name: aiperf\n"}))
	assert.ErrorContains(t, err, "no Name or Version")
}
