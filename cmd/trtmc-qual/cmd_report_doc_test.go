package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const docPage = `# Qualified checkpoints

Maintained by hand above the block.

<!-- trtmc-qual:detection:begin -->
stale table
<!-- trtmc-qual:detection:end -->

And below it.
`

func TestReportUpdateDoc(t *testing.T) {
	root := publishableRoot(t, "ref-detect-small")
	page := filepath.Join(t.TempDir(), "qualification.md")
	require.NoError(t, os.WriteFile(page, []byte(docPage), 0o640))
	update := func(args ...string) (exitCode, string, string) {
		t.Helper()
		return runCLI(t, nil, append([]string{"report", "--from", root, "--group", "detection", "--update-doc", page}, args...)...)
	}
	// The block is the docs block of the re-derived rows (its rendering is
	// reports.TestDocBlock's): here, what surrounds it and what it says.
	code, block, errOut := runCLI(t, nil, "report", "--from", root, "--group", "detection", "--format", "md")
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, block, "**1 of 1 normal profile qualified.**")

	// --dry-run: the diff on stdout, the page untouched.
	code, out, errOut := update("--dry-run")
	assert.Equal(t, exitOK, code, errOut)
	assert.True(t, strings.HasPrefix(out, "--- "+page+"\n+++ "+page+" (updated)\n@@ "), out)
	assert.Contains(t, out, "\n-stale table\n")
	assert.Contains(t, errOut, "would change")
	data, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.Equal(t, docPage, string(data), "dry run writes nothing")

	// The update: only the block changes, the mode is kept.
	code, out, errOut = update()
	assert.Equal(t, exitOK, code, errOut)
	assert.Empty(t, out, "nothing on stdout")
	assert.Contains(t, errOut, "updated block detection of "+page)
	data, err = os.ReadFile(page)
	require.NoError(t, err)
	want := string(data)
	head, rest, ok := strings.Cut(want, "<!-- trtmc-qual:detection:begin -->\n")
	require.True(t, ok)
	blk, tail, ok := strings.Cut(rest, "<!-- trtmc-qual:detection:end -->\n")
	require.True(t, ok)
	assert.Equal(t, "# Qualified checkpoints\n\nMaintained by hand above the block.\n\n", head)
	assert.Equal(t, "\nAnd below it.\n", tail)
	assert.Contains(t, blk, "**1 of 1 normal profile qualified.**")
	assert.Contains(t, blk, "| ref-detect-small |")
	assert.NotContains(t, blk, "stale table")
	st, err := os.Stat(page)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm())

	// Idempotent: a second run, and a dry run, change nothing.
	code, _, errOut = update()
	assert.Equal(t, exitOK, code)
	assert.Contains(t, errOut, "is up to date")
	code, out, _ = update("--dry-run")
	assert.Equal(t, exitOK, code)
	assert.Empty(t, out, "no diff")
	data, err = os.ReadFile(page)
	require.NoError(t, err)
	assert.Equal(t, want, string(data))

	// Through a symlink: the page it points to is updated, the link stays.
	link := filepath.Join(t.TempDir(), "link.md")
	require.NoError(t, os.Symlink(page, link))
	require.NoError(t, os.WriteFile(page, []byte(docPage), 0o640))
	code, _, errOut = runCLI(t, nil, "report", "--from", root, "--group", "detection", "--update-doc", link)
	assert.Equal(t, exitOK, code, errOut)
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "still a link")
	data, err = os.ReadFile(page)
	require.NoError(t, err)
	assert.Equal(t, want, string(data))
}

// TestReportUpdateDocRefusesBrokenPages breaks the page and the flags on
// purpose: each is a usage error (exit 2) that leaves the page as it was.
func TestReportUpdateDocRefusesBrokenPages(t *testing.T) {
	dir := t.TempDir()
	root := publishableRoot(t, "ref-detect-small")
	for name, tc := range map[string]struct {
		page string
		args []string
		want string
	}{
		"no markers":      {"# page\n", nil, "no <!-- trtmc-qual:detection:begin --> ... <!-- trtmc-qual:detection:end --> block"},
		"doubled begin":   {"a\n<!-- trtmc-qual:detection:begin -->\n<!-- trtmc-qual:detection:begin -->\n<!-- trtmc-qual:detection:end -->\n", nil, ".md:3: second <!-- trtmc-qual:detection:begin --> (the first is on line 2)"},
		"end only":        {"a\n\n<!-- trtmc-qual:detection:end -->\n", nil, ".md:3: <!-- trtmc-qual:detection:end --> comes before any"},
		"csv into a page": {docPage, []string{"--format", "csv"}, "--update-doc writes the Markdown report; --format csv does not fit"},
		"and output-file": {docPage, []string{"--output-file", filepath.Join(dir, "x.md")}, "--update-doc and --output-file both name a file"},
		"html page":       {docPage, nil, "this flag writes md, but the extension says html"},
	} {
		page := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".md")
		if name == "html page" {
			page = filepath.Join(dir, "page.html")
		}
		require.NoError(t, os.WriteFile(page, []byte(tc.page), 0o644))
		code, out, errOut := runCLI(t, nil, append([]string{"report", "--from", root, "--group", "detection", "--update-doc", page}, tc.args...)...)
		assert.Equal(t, exitUsage, code, name)
		assert.Empty(t, out, name)
		assert.Contains(t, errOut, tc.want, name)
		data, err := os.ReadFile(page)
		require.NoError(t, err)
		assert.Equal(t, tc.page, string(data), "%s: the page is untouched", name)
	}
	// A page over the cap (reports.MaxPageBytes) is refused, with or
	// without --dry-run, before anything is diffed or written.
	big := filepath.Join(dir, "big.md")
	require.NoError(t, os.WriteFile(big, append([]byte(docPage), make([]byte, 16<<20)...), 0o644))
	for _, args := range [][]string{nil, {"--dry-run"}} {
		code, out, errOut := runCLI(t, nil, append([]string{"report", "--from", root, "--group", "detection", "--update-doc", big}, args...)...)
		assert.Equal(t, exitUsage, code, errOut)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "big.md is larger than 16 MiB")
	}
	code, _, errOut := runCLI(t, nil, "report", "--from", root, "--group", "detection", "--update-doc", filepath.Join(dir, "missing.md"))
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "missing.md: no such file")
	code, _, errOut = runCLI(t, nil, "report", "--from", root, "--group", "detection", "--dry-run")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--dry-run only applies to --update-doc")
}
