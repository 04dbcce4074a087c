package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/golden"
)

// copiedRoot is a copy of a test evidence root, to be written at.
func copiedRoot(t *testing.T, name string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "out")
	golden.CopyTree(t, evidenceRoot(name), root)
	return root
}

// No writer inside an evidence tree (issue 32 items 13, 14): every file
// a verb writes for people is resolved through its links and refused,
// exit 2, naming the path and the tree, when it lies inside a --from or
// --baseline root or the run's --out; the sealed row is left as it was.
func TestNoWriterInsideAnEvidenceTree(t *testing.T) {
	root := copiedRoot(t, "a")
	row := filepath.Join(root, "vlm", "ref-vlm-small", "result.json")
	sealed, err := os.ReadFile(row)
	require.NoError(t, err)
	link := filepath.Join(t.TempDir(), "reports")
	require.NoError(t, os.Symlink(filepath.Join(root, "vlm", "ref-vlm-small"), link))
	page := filepath.Join(root, "vlm", "page.md")
	require.NoError(t, os.WriteFile(page, []byte("<!-- trtmc-qual:vlm:begin -->\n<!-- trtmc-qual:vlm:end -->\n"), 0o644))
	other := copiedRoot(t, "baseline")

	for name, tc := range map[string]struct {
		args []string
		path string
		tree string
	}{
		"report over a sealed row (item 13)": {[]string{"report", "--from", root, "--group", "vlm", "--output-file", row}, row, root},
		"report through a link into a row":   {[]string{"report", "--from", root, "--group", "vlm", "-o", "md", "--output-file", filepath.Join(link, "r.md")}, filepath.Join(link, "r.md"), root},
		"report into the baseline":           {[]string{"report", "--from", root, "--baseline", other, "--group", "vlm", "--output-file", filepath.Join(other, "r.html")}, filepath.Join(other, "r.html"), other},
		"a docs page inside the evidence":    {[]string{"report", "--from", root, "--group", "vlm", "--update-doc", page}, page, root},
		"export through a link (item 14)":    {[]string{"export", "--from", root, "--group", "vlm", "--output-file", filepath.Join(link, "p.tar.gz")}, filepath.Join(link, "p.tar.gz"), root},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, errOut := runCLI(t, nil, tc.args...)
			assert.Equal(t, exitUsage, code, errOut)
			assert.Contains(t, errOut, tc.path+" lies inside the evidence tree "+tc.tree)
			now, err := os.ReadFile(row)
			require.NoError(t, err)
			assert.Equal(t, string(sealed), string(now), "the sealed row is untouched")
			_, err = os.Lstat(filepath.Join(link, "p.tar.gz"))
			assert.ErrorIs(t, err, os.ErrNotExist)
			_, err = os.Lstat(filepath.Join(link, "r.md"))
			assert.ErrorIs(t, err, os.ErrNotExist)
		})
	}
	// --dry-run writes nothing: a page inside the evidence may be shown.
	code, _, errOut := runCLI(t, nil, "report", "--from", root, "--group", "vlm", "--update-doc", page, "--dry-run")
	assert.NotEqual(t, exitUsage, code, errOut)

	// run --junit inside its --out is refused before anything runs.
	io, _, _ := testIO()
	out := t.TempDir()
	opts := &runOptions{IO: io, Config: &Config{}, Getenv: func(string) string { return "" }, Now: time.Now, Group: "vlm",
		Out: out, Host: "127.0.0.1", Executor: executorLocal, JUnit: filepath.Join(out, "vlm", "junit.xml")}
	err = runQualify(context.Background(), opts)
	require.Error(t, err)
	assert.Equal(t, exitUsage, codeFor(err))
	assert.Contains(t, err.Error(), "--junit "+opts.JUnit+" lies inside the evidence tree "+out)
	entries, _ := os.ReadDir(out)
	assert.Empty(t, entries, "nothing ran, nothing was written")

	// ci --smoke: --junit and --summary stay out of the smoke run's --out.
	cio, _, _ := testIO()
	err = runCI(context.Background(), &ciOptions{IO: cio, Out: out, Summary: filepath.Join(out, "s.md")})
	require.Error(t, err)
	assert.Equal(t, exitUsage, codeFor(err))
	assert.Contains(t, err.Error(), "--summary "+filepath.Join(out, "s.md")+" lies inside the evidence tree "+out)
}
