package reports

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	require.NoError(t, os.CopyFS(root, os.DirFS(rootA)))
	g, err := Load([]string{root}, "vlm")
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
	g, err = Load([]string{moved}, "vlm")
	require.NoError(t, err)
	elsewhere := filepath.Join(t.TempDir(), "site")
	g.LinkDir = elsewhere
	var b strings.Builder
	require.NoError(t, renderHTML(&b, g))
	for _, l := range hrefs(t, []byte(b.String())) {
		assert.True(t, strings.HasPrefix(l, "../"), l)
		assert.FileExists(t, filepath.Join(elsewhere, filepath.FromSlash(l)))
	}
}

func TestPresentEvidence(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"result.json", "server.log", "aiperf/profile_export.jsonl", "joined.jsonl"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "native.log"), 0o755)) // not a regular file
	var got []string
	for _, l := range presentEvidence(dir) {
		got = append(got, l.Group+":"+l.Path)
	}
	assert.Equal(t, []string{"result:result.json", "logs:server.log", "aiperf:aiperf/profile_export.jsonl", "joined:joined.jsonl"}, got)
}

// TestGroupChartPlotsEveryMeasuredProfile: one HTTP and one Task bar pair
// per measured profile, and an images/s bar; none for unmeasured rows.
func TestGroupChartPlotsEveryMeasuredProfile(t *testing.T) {
	g, err := Load([]string{rootA}, "vlm")
	require.NoError(t, err)
	measured, httpP50, taskP95, rate := 0, 0, 0, 0
	for _, r := range g.Rows {
		if r.Result != nil && r.Result.Measured() {
			measured++
			l := r.Result.LatencyMS
			httpP50 += btoi(l.HTTP.P50 != nil)
			taskP95 += btoi(l.Task.P95 != nil)
			rate += btoi(r.Result.ImagesPerSec != nil)
		}
	}
	require.Positive(t, httpP50)
	svg := groupCharts(g.Rows)
	assert.Equal(t, 2*measured, strings.Count(svg, `class="row-label"`), "a row per measured profile in each chart")
	assert.Equal(t, httpP50, strings.Count(svg, `class="bar p50 http"`))
	assert.Equal(t, taskP95, strings.Count(svg, `class="bar p95 task"`))
	assert.Equal(t, rate, strings.Count(svg, `class="bar rate"`))
	assert.NotContains(t, svg, "<script")
	assert.Empty(t, groupCharts(nil))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
