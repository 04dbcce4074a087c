package reports_test

import (
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// editResult rewrites one stored result.json of a copied evidence root.
func editResult(t *testing.T, root, group, profile string, edit func(m map[string]any)) {
	t.Helper()
	p := filepath.Join(root, group, profile, ResultFile)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	edit(m)
	data, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, data, 0o644))
}

// runPasted runs a pasted command line in bash with trtmc-qual replaced by
// a recorder of its argv, in a scratch directory; it returns the argv and
// whatever files the line created.
func runPasted(t *testing.T, line string) ([]string, []string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	dir := t.TempDir()
	cmd := exec.Command(bash, "-c", `trtmc-qual() { printf '%s\0' trtmc-qual "$@"; }; `+line)
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err, "line: %s", line)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var made []string
	for _, e := range entries {
		made = append(made, e.Name())
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"), made
}

// Issue 13, finding 1: the reproduce command was stored and printed
// unquoted: pasting it ran what an argument held. The harness now stores it
// quoted word by word (text.ShellQuote, control and bidi characters as
// $'...' escapes); results.md and results.html print it so that, pasted
// into bash, it is exactly the argv and runs nothing else.
func TestReproduceCommandIsQuotedInMarkdownAndHTML(t *testing.T) {
	root := CopyTree(t, RootA)
	argv := []string{"trtmc-qual", "--config", "conf dir/$(touch PWNED-config).yaml", "run", "--group", "vlm",
		"--out", "out/`touch PWNED-tick`;touch PWNED-semi", "--gpus", "0,1", "--only", "ref-vlm-small", "x\u202ey\x1b[2J"}
	editResult(t, root, "vlm", "ref-vlm-small", func(m map[string]any) {
		m["command"] = text.ShellJoin(argv) // what the harness stores (the seal then says it changed)
	})
	g, err := published(Load([]string{root}, "vlm"))
	require.NoError(t, err)

	md := string(render(t, g, FormatMarkdown))
	block := regexp.MustCompile("(?s)### ref-vlm-small\n\n(`{3,})sh\n(.*?)\n`{3,}\n").FindStringSubmatch(md)
	require.NotNil(t, block, md)
	got, made := runPasted(t, block[2])
	assert.Equal(t, argv, got, "the Markdown command reads back as the recorded argv")
	assert.Empty(t, made, "pasting the Markdown command ran something")

	page := string(render(t, g, FormatHTML))
	pre := regexp.MustCompile(`(?s)id="p-ref-vlm-small".*?<pre class="cmd">(.*?)</pre>`).FindStringSubmatch(page)
	require.NotNil(t, pre)
	// As a browser copies it: <wbr> (a break opportunity after "/") is no text.
	got, made = runPasted(t, html.UnescapeString(strings.ReplaceAll(pre[1], "<wbr>", "")))
	assert.Equal(t, argv, got, "the HTML command reads back as the recorded argv")
	assert.Empty(t, made)

	for name, out := range map[string]string{"md": md, "html": page, "csv": string(render(t, g, FormatCSV))} {
		assert.NotContains(t, out, "\u202e", name)
		assert.NotContains(t, out, "\x1b", name)
	}
}

// A hostile stored command shows its line with control and bidi characters escaped, inside a fence no
// backtick run in it can close.
func TestLegacyCommandCannotEscapeItsBlock(t *testing.T) {
	root := CopyTree(t, RootA)
	editResult(t, root, "vlm", "ref-vlm-small", func(m map[string]any) {
		m["command"] = "trtmc-qual run\n```\n<img src=x onerror=alert(1)>\n```` \u202e\x1b[2J"
	})
	g, err := published(Load([]string{root}, "vlm"))
	require.NoError(t, err)
	md := string(render(t, g, FormatMarkdown))
	assert.Contains(t, md, "`````sh\ntrtmc-qual run\n```\n<img src=x onerror=alert(1)>\n```` \\u{202e}\\u{1b}[2J\n`````\n")
	page := string(render(t, g, FormatHTML))
	assert.NotContains(t, page, "<img src=x")
	assert.NotContains(t, page, "\x1b")
}

// A reason that quotes a child's output may carry escape sequences and
// bidi overrides; no human-readable format lets them out raw (JSON is data
// and escapes control characters itself).
func TestRenderedTextHasNoRawControlCharacters(t *testing.T) {
	root := CopyTree(t, RootA)
	editResult(t, root, "vlm", "ref-vlm-large", func(m map[string]any) {
		m["problems"] = []any{map[string]any{"stage": "server", "code": "server_exit",
			"message": "server died; last output:\n\x1b[2J\x1b]0;owned\x07 evil\u202etxt \u200b"}}
	})
	g, err := published(Load([]string{root}, "vlm"))
	require.NoError(t, err)
	for _, f := range []string{FormatMarkdown, FormatHTML, FormatCSV, FormatTSV, FormatTable} {
		out := string(render(t, g, f))
		for _, bad := range []string{"\x1b", "\x07", "\u202e", "\u200b"} {
			assert.NotContains(t, out, bad, "%s lets %q out raw", f, bad)
		}
	}
	assert.Contains(t, string(render(t, g, FormatMarkdown)), `\u{1b}\[2J`)
}
