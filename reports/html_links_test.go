package reports_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/trtmc-qual/trtmc-qual/reports"
)

var hrefRE = regexp.MustCompile(`href="([^"#][^"]*)"`)

// hrefs are the evidence links of an HTML report, unescaped.
func hrefs(t *testing.T, page []byte) []string {
	t.Helper()
	var out []string
	for _, m := range hrefRE.FindAllStringSubmatch(string(page), -1) {
		out = append(out, strings.ReplaceAll(m[1], "&amp;", "&"))
	}
	return out
}

// TestHTMLLinksResolve: results.html written where `run` writes it links
// every row's evidence by relative paths that resolve from there, and so
// does a report written elsewhere (`report --output-file`); moving the
// whole evidence folder (an archive) keeps them working.
func TestHTMLLinksResolve(t *testing.T) {
	root := filepath.Join(t.TempDir(), "evidence")
	require.NoError(t, os.CopyFS(root, os.DirFS(RootA)))
	g, err := published(Load([]string{root}, "vlm"))
	require.NoError(t, err)
	groupDir := filepath.Join(root, "vlm")
	require.NoError(t, WriteGroupFiles(groupDir, g))

	moved := filepath.Join(t.TempDir(), "unpacked")
	require.NoError(t, os.Rename(root, moved))
	page, err := os.ReadFile(filepath.Join(moved, "vlm", "results.html"))
	require.NoError(t, err)
	links := hrefs(t, page)
	require.NotEmpty(t, links)
	for _, l := range links {
		assert.False(t, filepath.IsAbs(l), l)
		assert.FileExists(t, filepath.Join(moved, "vlm", filepath.FromSlash(l)))
	}
	assert.Contains(t, links, "ref-vlm-base/result.json")
	assert.Contains(t, links, "ref-vlm-base/joined.jsonl")

	// --output-file in another directory: relative to that file.
	g, err = published(Load([]string{moved}, "vlm"))
	require.NoError(t, err)
	elsewhere := filepath.Join(t.TempDir(), "site")
	g.LinkDir = elsewhere
	var b strings.Builder
	require.NoError(t, Render(&b, g, FormatHTML))
	for _, l := range hrefs(t, []byte(b.String())) {
		assert.True(t, strings.HasPrefix(l, "../"), l)
		assert.FileExists(t, filepath.Join(elsewhere, filepath.FromSlash(l)))
	}
}
