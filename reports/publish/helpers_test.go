package publish

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
)

// rootA is an evidence root of reports' testdata (testdata/gen_evidence.py):
// vlm holds every kind of row.
const rootA = "../testdata/evidence/a"

// copyTree copies an evidence root into a temporary directory.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	golden.CopyTree(t, src, dst)
	return dst
}

// editResult rewrites one row's result.json through edit (its seal then
// no longer holds).
func editResult(t *testing.T, root, group, profile string, edit func(m map[string]any)) {
	t.Helper()
	p := filepath.Join(root, group, profile, reports.ResultFile)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	edit(m)
	data, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, data, 0o644))
}

// render renders g in one format.
func render(t *testing.T, g *reports.GroupReport, format string) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, reports.Render(&buf, g, format))
	return buf.Bytes()
}
