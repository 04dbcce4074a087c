package reports_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"

	. "github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
)

// hostileText is what a server's error body, a correctness case's gate, an
// inventory's checkpoint or a recorded version may hold, each trying to
// become markup where the harness writes it (issue 32, item 12).
var hostileText = []string{
	`<img src=x onerror=alert(1)>`,
	`[click](https://evil.example/x) ![p](https://evil.example/p.png)`,
	`</details></summary><script>alert(1)</script>`,
	`<!-- trtmc-qual:vlm:end -->`,
	"`x` | y | *z* _w_ ~~v~~ &lt;b&gt;",
	`# heading`,
	`https://evil.example/autolink www.evil.example me@evil.example`,
	"line one\n- injected item\n\n<details open>",
	`a/<wbr>b<wbr/>c/d`,
}

// withForeignText is the vlm report of RootA with text in every field that
// comes from outside the harness: each row's checkpoint, gate names,
// reasons, exclusion and AIPerf version, and a note.
func withForeignText(t *testing.T, s string) *GroupReport {
	t.Helper()
	g, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	for i := range g.Rows {
		row := &g.Rows[i]
		row.Checkpoint = s
		if row.Status == StatusExcluded || row.Status == StatusNotRun {
			row.Note = s
		}
		res := row.Result
		if res == nil {
			continue
		}
		for j := range res.Correctness.Gates {
			res.Correctness.Gates[j].Name = s
			ref := 0.5
			res.Correctness.Gates[j].Reference = &ref
		}
		if res.Correctness != nil {
			res.Correctness.Metrics = map[string]float64{s: 1, "reporting " + s: 2}
		}
		res.Answers.Labels = []string{s, s, s, s, s}
		row.Gaps = []string{s}
		for j := range res.Reasons {
			res.Reasons[j].Message = s
		}
		if res.Exclusion != "" {
			res.Exclusion = s
		}
		if res.Provenance.AIPerfVersion != "" {
			res.Provenance.AIPerfVersion = s
		}
	}
	g.Notes = append(g.Notes, s)
	g.Summary = SummaryOptions{Reconcile: &ReconcileFact{Ref: s, Commit: s, Head: "abc"}, Link: "https://x.example/" + s,
		Drift: &DriftFact{Base: s, BaseCommit: s, Head: s, HeadCommit: s, Families: 1, Changes: 1, ByCategory: map[string]int{s: 1}}}
	return g
}

// gfm renders Markdown as GitHub does, raw HTML passed through.
func gfm(t *testing.T, md string) string {
	t.Helper()
	var out bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	require.NoError(t, gm.Convert([]byte(md), &out))
	return out.String()
}

var htmlTagRe = regexp.MustCompile(`<(/?[a-zA-Z][a-zA-Z0-9]*)`)

// htmlTags lists a page's elements in order, but for the "<wbr>" the HTML
// writer puts right after a separator of foreign text ("/" in a path,
// breakable; "/", ",", "]" or "}" in a mismatch's answer), so a long one
// wraps there: that one is the writer's, never the evidence's. Any other
// <wbr> is listed (hostileText has some).
func htmlTags(page string) string {
	var b strings.Builder
	for _, m := range htmlTagRe.FindAllStringSubmatchIndex(page, -1) {
		tag := page[m[2]:m[3]]
		if tag == "wbr" && m[0] > 0 && strings.IndexByte("/,]}", page[m[0]-1]) >= 0 && strings.HasPrefix(page[m[0]:], "<wbr>") {
			continue
		}
		b.WriteString(tag + " ")
	}
	return b.String()
}

// writers are every writer of published text, by name.
func writers(t *testing.T) map[string]func(g *GroupReport) string {
	return map[string]func(g *GroupReport) string{
		"md (rendered)":      func(g *GroupReport) string { return gfm(t, string(render(t, g, FormatMarkdown))) },
		"summary (rendered)": func(g *GroupReport) string { return gfm(t, string(render(t, g, FormatSummary))) },
		"docs block (rendered)": func(g *GroupReport) string {
			var b bytes.Buffer
			require.NoError(t, RenderDocBlock(&b, g, DocBlockOptions{HeadingLevel: 2, Link: "https://x.example/r?a=1"}))
			return gfm(t, b.String())
		},
		"html": func(g *GroupReport) string { return string(render(t, g, FormatHTML)) },
	}
}

// Foreign text is escaped wherever it is written: with hostile text in
// every foreign field, each published writer's output has exactly the
// elements it has with plain text there — no tag, link, image, list item
// or closed <details> comes from the evidence (Markdown rendered as GitHub
// does, raw HTML passed through).
func TestForeignTextIsNeverMarkup(t *testing.T) {
	for name, write := range writers(t) {
		plain := htmlTags(write(withForeignText(t, "plain words")))
		for i, s := range hostileText {
			t.Run(fmt.Sprintf("%s/%d", name, i), func(t *testing.T) {
				out := write(withForeignText(t, s))
				assert.Equal(t, plain, htmlTags(out), "elements differ with %q", s)
			})
		}
	}
}

// JUnit is XML: every foreign string reads back as itself.
func TestForeignTextInJUnit(t *testing.T) {
	for _, s := range hostileText {
		var b bytes.Buffer
		require.NoError(t, withForeignText(t, s).JUnit(&b))
		var doc struct {
			Suites []struct {
				Cases []struct {
					Failure *struct {
						Message string `xml:"message,attr"`
					} `xml:"failure"`
					Out string `xml:"system-out"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		require.NoError(t, xml.Unmarshal(b.Bytes(), &doc), b.String())
		found := false
		for _, c := range doc.Suites[0].Cases {
			if c.Failure != nil && strings.Contains(c.Failure.Message, strings.ReplaceAll(s, "\n", " ")) ||
				strings.Contains(c.Out, "checkpoint: "+s) {
				found = true
			}
		}
		assert.True(t, found, "%q reads back from the XML", s)
	}
}

// withForeignAnswers is the vlm report of a copy of RootA whose failed
// row's mismatches.jsonl (sealed again) holds s in both answers of each
// mismatch, after a word that differs.
func withForeignAnswers(t *testing.T, s string) *GroupReport {
	t.Helper()
	root := CopyTree(t, RootA)
	dir := filepath.Join(root, "vlm", "ref-vlm-base")
	var b bytes.Buffer
	for _, id := range []string{"req-ref-vlm-base-0017", "req-ref-vlm-base-0043"} {
		line, err := json.Marshal(map[string]any{"request_id": id, "phase": "measured", "diff": "d",
			"native_answer": "native " + s, "http_answer": "http " + s})
		require.NoError(t, err)
		b.Write(append(line, '\n'))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, MismatchesFile), b.Bytes(), 0o644))
	require.NoError(t, evidence.Seal(dir, map[string]any{"harness_version": "test"}))
	g, err := published(Load([]string{root}, "vlm"))
	require.NoError(t, err)
	return g
}

// A model's answer is foreign text too: shown on both sides of a mismatch,
// hostile text in it becomes no element (the common text elided far from
// the change is the writer's one span).
func TestForeignAnswersAreNeverMarkup(t *testing.T) {
	elided := `<span class="elided">…</span>`
	page := func(s string) string {
		out := string(render(t, withForeignAnswers(t, s), FormatHTML))
		require.Contains(t, out, "<del>native</del>", "the answers are shown")
		return strings.ReplaceAll(out, elided, "")
	}
	plain := htmlTags(page("plain words"))
	for i, s := range hostileText {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			assert.Equal(t, plain, htmlTags(page(s)), "elements differ with %q", s)
		})
	}
}

// A profile name is foreign text too (a directory of the evidence, an
// inventory's id): every published writer escapes it where it names a
// row, results.md's HTTP split list included.
func TestForeignProfileNamesAreNeverMarkup(t *testing.T) {
	load := func(s string) *GroupReport {
		g, err := published(Load([]string{RootA, RootB}, "vlm"))
		require.NoError(t, err)
		split := 0
		for i := range g.Rows {
			if r := g.Rows[i].Result; r != nil && r.LatencyMS.HTTPSplit != nil {
				split++
			}
			g.Rows[i].Profile = fmt.Sprintf("%s %d", s, i)
		}
		require.NotZero(t, split, "the fixture has rows with an HTTP split")
		return g
	}
	for name, write := range writers(t) {
		plain := htmlTags(write(load("plain")))
		for _, s := range hostileText {
			assert.Equal(t, plain, htmlTags(write(load(s))), "%s: profile %q", name, s)
		}
	}
}
