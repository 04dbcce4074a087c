package markdown

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
)

// Hostile are strings a server, a correctness case, an inventory or a
// manifest may hand the harness, each trying to become markup where it is
// written (issue 32, item 12). Every writer of published Markdown is
// tested with them.
var Hostile = []string{
	`<img src=x onerror=alert(1)>`,
	`[click](https://evil.example/x)`,
	`![pixel](https://evil.example/p.png)`,
	`</details><script>alert(1)</script>`,
	`<!-- trtmc-qual:vlm:end -->`,
	"`code` and ``more``",
	`*bold* _em_ __strong__ ~~gone~~`,
	`a | b | c`,
	`# heading`,
	`> quote`,
	`- item`,
	`1. first`,
	`2) second`,
	`+ plus`,
	`---`,
	`- - -`,
	`===`,
	`https://evil.example/autolink and www.evil.example`,
	`mail me@evil.example, ping @someone`,
	`&lt;b&gt; &amp; &#60;`,
	`\` + "`" + `escape\*`,
	`$\href{https://evil.example}{math}$`,
	"line one\nline two\r\n<b>three</b>",
	`answer_exact_match`,
}

// gfm renders Markdown as GitHub does (tables, autolinks, strikethrough),
// raw HTML passed through, so that any tag the text would open shows.
func gfm(t *testing.T, md string) string {
	t.Helper()
	var out bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	require.NoError(t, gm.Convert([]byte(md), &out))
	return out.String()
}

var tagRe = regexp.MustCompile(`<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*>`)

// tags lists the HTML elements in rendered output.
func tags(rendered string) []string {
	var out []string
	for _, m := range tagRe.FindAllStringSubmatch(rendered, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

// textOf is the text of rendered HTML: tags removed, entities decoded.
func textOf(rendered string) string {
	return strings.TrimSpace(html.UnescapeString(tagRe.ReplaceAllString(rendered, "")))
}

func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

func TestTextIsNeverMarkup(t *testing.T) {
	for _, s := range Hostile {
		t.Run(s, func(t *testing.T) {
			// In a paragraph, at the start of a line.
			out := gfm(t, Text(s))
			assert.Equal(t, []string{"p", "/p"}, tags(out), out)
			assert.Equal(t, strings.TrimSpace(oneLine(s)), textOf(out))
			// As a list item's text.
			out = gfm(t, "- "+Text(s)+"\n")
			assert.Equal(t, []string{"ul", "li", "/li", "/ul"}, tags(out), out)
			assert.Equal(t, strings.TrimSpace(oneLine(s)), textOf(out))
			// After other text, inside emphasis the harness wrote.
			out = gfm(t, "**x** — "+Text(s))
			assert.Equal(t, []string{"p", "strong", "/strong", "/p"}, tags(out), out)
			// In a table cell.
			var tb bytes.Buffer
			require.NoError(t, Table(&tb, []string{"a", "b"}, [][]string{{Text(s), "z"}}))
			out = gfm(t, tb.String())
			assert.NotContains(t, tags(out), "img")
			assert.NotContains(t, tags(out), "a")
			assert.Equal(t, 4, strings.Count(out, "<td>")+strings.Count(out, "<th>"), "the row keeps its two cells: %s", out)
			assert.Contains(t, html.UnescapeString(out), "<td>"+strings.TrimSpace(oneLine(s))+"</td>")
		})
	}
}

// What the harness writes itself reads as it is: figures, versions, names.
func TestTextLeavesOrdinaryTextAlone(t *testing.T) {
	for _, s := range []string{"18.97 / 21.89", "0.13.0", "answer_exact_match 0.958 ≥ 0.900 ✓", "ref-vlm-small",
		"2 (2 mismatched)", "#123", "-5 ms", "1.5x", "needs 4 GPUs (tp4) but the run has 3 (--gpus 0,1,2); not started on fewer"} {
		assert.Equal(t, s, Text(s))
	}
}

func TestCodeHoldsAnyText(t *testing.T) {
	for _, s := range append(Hostile, "`", "``x``", " `a` ", "a```b") {
		out := gfm(t, "x "+Code(s)+" y")
		assert.Equal(t, []string{"p", "code", "/code", "/p"}, tags(out), "%q: %s", s, out)
		got := html.UnescapeString(regexp.MustCompile(`(?s)<code>(.*)</code>`).FindStringSubmatch(out)[1])
		assert.Equal(t, strings.TrimSpace(oneLine(s)), strings.TrimSpace(got), "%q", s)
	}
	assert.Equal(t, "", Code(""))
	assert.Equal(t, "`a`", Code("a"))
}

func TestLinkKeepsItsDestination(t *testing.T) {
	for _, dest := range []string{"https://x.example/a b", "x)(y", "<x>", `a"b`, "vlm/p/"} {
		out := gfm(t, Link("[evil](x)", dest))
		assert.Equal(t, []string{"p", "a", "/a", "/p"}, tags(out), "%q: %s", dest, out)
		assert.Equal(t, "[evil](x)", textOf(out))
	}
}

func TestTableEscapesPipesOnce(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Table(&b, []string{"h"}, [][]string{{"a|b"}, {Text("a|b")}, {Code("a|b")}, {"x\ny"}}))
	assert.Equal(t, "| h |\n|---|\n| a\\|b |\n| a\\|b |\n| `a\\|b` |\n| x y |\n", b.String())
}
