package reports_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
)

const page = `# Results

Intro text stays.

<!-- trtmc-qual:vlm:begin -->
old table
<!-- trtmc-qual:vlm:end -->

<!-- trtmc-qual:detection:begin -->
detection stays
<!-- trtmc-qual:detection:end -->
Tail stays, without a final newline.`

func TestUpdateBlockReplacesOnlyTheBlock(t *testing.T) {
	got, changed, err := updateBlock([]byte(page), "p.md", "vlm", []byte("| a |\n|---|\n| 1 |"))
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, strings.Replace(page, "old table\n", "| a |\n|---|\n| 1 |\n", 1), string(got),
		"everything outside the block byte for byte; a final newline added to the content")

	again, changed, err := updateBlock(got, "p.md", "vlm", []byte("| a |\n|---|\n| 1 |"))
	require.NoError(t, err)
	assert.False(t, changed, "idempotent")
	assert.Equal(t, string(got), string(again))

	// An empty block, markers indented, CRLF pages keep CRLF.
	crlf := "x\r\n  <!-- trtmc-qual:vlm:begin -->\r\n  <!-- trtmc-qual:vlm:end -->\r\ny\r\n"
	got, _, err = updateBlock([]byte(crlf), "p.md", "vlm", []byte("a\nb\n"))
	require.NoError(t, err)
	assert.Equal(t, "x\r\n  <!-- trtmc-qual:vlm:begin -->\r\na\r\nb\r\n  <!-- trtmc-qual:vlm:end -->\r\ny\r\n", string(got))

	// Markers inside a fenced example are documentation, not markers.
	doc := "```md\n<!-- trtmc-qual:vlm:begin -->\n<!-- trtmc-qual:vlm:end -->\n```\n" + page
	got, _, err = updateBlock([]byte(doc), "p.md", "vlm", []byte("new\n"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(got), "```md\n<!-- trtmc-qual:vlm:begin -->\n<!-- trtmc-qual:vlm:end -->\n```\n"))
	assert.Contains(t, string(got), "<!-- trtmc-qual:vlm:begin -->\nnew\n<!-- trtmc-qual:vlm:end -->\n\n<!-- trtmc-qual:detection")
}

// TestUpdateBlockRejectsBrokenMarkers breaks the markers on purpose: each
// is an error naming the file and, where there is one, the line.
func TestUpdateBlockRejectsBrokenMarkers(t *testing.T) {
	b, e := BlockMarkers("vlm")
	for name, tc := range map[string]struct{ doc, want string }{
		"missing both":    {"# page\n", "p.md: no " + b + " ... " + e + " block"},
		"missing end":     {"a\n" + b + "\nx\n", "p.md:2: " + b + " without " + e + " after it"},
		"missing begin":   {"a\nb\n" + e + "\n", "p.md:3: " + e + " comes before any " + b},
		"doubled begin":   {b + "\n" + b + "\n" + e + "\n", "p.md:2: second " + b + " (the first is on line 1)"},
		"doubled end":     {b + "\n" + e + "\n" + e + "\n", "p.md:3: second " + e + " (the first is on line 2)"},
		"doubled block":   {b + "\n" + e + "\n" + b + "\n" + e + "\n", "p.md:3: second " + b},
		"end first":       {e + "\n" + b + "\n", "p.md:1: " + e + " comes before any " + b},
		"only in a fence": {"```\n" + b + "\n" + e + "\n```\n", "p.md: no "},
		"other group":     {"<!-- trtmc-qual:detection:begin -->\n<!-- trtmc-qual:detection:end -->\n", "p.md: no "},
	} {
		_, _, err := updateBlock([]byte(tc.doc), "p.md", "vlm", []byte("x\n"))
		var be *BlockError
		if assert.ErrorAs(t, err, &be, name) {
			assert.Contains(t, err.Error(), tc.want, name)
		}
	}
}

func TestUnifiedDiff(t *testing.T) {
	assert.Equal(t, "", unifiedDiff("a", "b", []byte("x\n"), []byte("x\n")))
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n"
	b := "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n"
	assert.Equal(t, `--- a
+++ b
@@ -2,7 +2,7 @@
 2
 3
 4
-5
+five
 6
 7
 8
@@ -13,3 +13,4 @@
 13
 14
 15
+16
`, unifiedDiff("a", "b", []byte(a), []byte(b)))
}

// TestUnifiedDiffAgreesWithDiff compares with diffutils' `diff -u` on
// random edits (the headers aside), where diff is installed.
func TestUnifiedDiffAgreesWithDiff(t *testing.T) {
	diff, err := exec.LookPath("diff")
	if err != nil {
		t.Skip("diff not installed")
	}
	rng := rand.New(rand.NewSource(1))
	dir := t.TempDir()
	for n := range 40 {
		var a, b []string
		for i := range 5 + rng.Intn(40) {
			line := fmt.Sprintf("line %d\n", i)
			a = append(a, line)
			switch rng.Intn(8) {
			case 0: // deleted
			case 1:
				b = append(b, "changed "+line)
			case 2:
				b = append(b, line, "inserted\n")
			default:
				b = append(b, line)
			}
		}
		pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		require.NoError(t, os.WriteFile(pa, []byte(strings.Join(a, "")), 0o644))
		require.NoError(t, os.WriteFile(pb, []byte(strings.Join(b, "")), 0o644))
		out, _ := exec.Command(diff, "-u", "--label", "a", "--label", "b", pa, pb).Output()
		assert.Equal(t, string(out), unifiedDiff("a", "b", []byte(strings.Join(a, "")), []byte(strings.Join(b, ""))), "case %d", n)
	}
}

// Issue 25 item 19: a page that starts with a UTF-8 byte-order mark has its
// begin marker on line 1, and the mark is kept.
func TestUpdateBlockAfterByteOrderMark(t *testing.T) {
	b, e := BlockMarkers("vlm")
	doc := "\xef\xbb\xbf" + b + "\nold\n" + e + "\ntail\n"
	got, changed, err := updateBlock([]byte(doc), "p.md", "vlm", []byte("new\n"))
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, "\xef\xbb\xbf"+b+"\nnew\n"+e+"\ntail\n", string(got))
	_, _, err = updateBlock([]byte("\xef\xbb\xbf"+e+"\n"+b+"\n"), "p.md", "vlm", nil)
	assert.EqualError(t, err, "p.md:1: "+e+" comes before any "+b)
	blk, err := FindBlock([]byte("\xef\xbb\xbf# Title\n\n"+b+"\n"+e+"\n"), "p.md", "vlm")
	require.NoError(t, err)
	assert.Equal(t, 1, blk.HeadingLevel, "a heading on the first line, after the mark")
	assert.Equal(t, 3, blk.BeginLine)
}

// TestFindBlockHeadingLevel: the block's headings follow the page's last
// heading above the begin marker (ATX or setext), fences ignored.
func TestFindBlockHeadingLevel(t *testing.T) {
	b, e := BlockMarkers("vlm")
	for doc, want := range map[string]int{
		b + "\n" + e + "\n":                                   0,
		"# T\n\n## Results\n\n" + b + "\n" + e + "\n":         2,
		"# T\n### Deep\ntext\n" + b + "\n" + e + "\n":         3,
		"Title\n=====\n\n" + b + "\n" + e + "\n":              1,
		"# T\n\nSection\n-------\n" + b + "\n" + e + "\n":     2,
		"# T\n```\n## not a heading\n```\n" + b + "\n" + e:    1,
		"#nospace\n" + b + "\n" + e + "\n":                    0,
		"# T\n" + b + "\n" + e + "\n## After\n":               1,
		"## T\n\n- item\n---\n" + b + "\n" + e + "\n":         2,
		"###### six\n" + b + "\n" + e + "\n":                  6,
		"####### seven is text\n" + b + "\n" + e + "\n":       0,
		"## T\n\n| a |\n|---|\n" + b + "\n" + e + "\n":        2,
		"# T\r\n## Results\r\n" + b + "\r\n" + e + "\r\n":     2,
		"## T\n<!-- comment -->\n---\n" + b + "\n" + e + "\n": 2,
	} {
		blk, err := FindBlock([]byte(doc), "p.md", "vlm")
		require.NoError(t, err, doc)
		assert.Equal(t, want, blk.HeadingLevel, "%q", doc)
	}
}

// TestDocBlock: the block a docs page gets has no title of its own, its
// headings one level under the page's, the compact columns, the coverage
// and reasons, the commands collapsed; it is the same bytes every time,
// so updating a page twice changes nothing.
func TestDocBlock(t *testing.T) {
	g, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	var blk bytes.Buffer
	require.NoError(t, RenderDocBlock(&blk, g, DocBlockOptions{HeadingLevel: 2}))
	golden.Assert(t, "docblock.md", blk.Bytes())
	det, err := published(Load([]string{RootA}, "detection"))
	require.NoError(t, err)
	var detBlk bytes.Buffer
	require.NoError(t, RenderDocBlock(&detBlk, det, DocBlockOptions{HeadingLevel: 1}))
	golden.Assert(t, "detection.docblock.md", detBlk.Bytes()) // what cmd's --update-doc test expects in its page
	text := blk.String()
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "#") {
			assert.True(t, strings.HasPrefix(l, "### "), "every heading one under the page's ##: %q", l)
		}
		if strings.HasPrefix(l, "| profile ") && strings.Contains(l, "checkpoint") {
			assert.Equal(t, "| profile | checkpoint | precision | correctness | matched | errors | HTTP p50/p95 ms | Task p50/p95 ms | images/s | output | GPU | source commit | verdict |",
				strings.Join(strings.Fields(l), " "), "the compact columns")
		}
	}
	assert.True(t, strings.HasPrefix(text, "**1 of 5 normal profiles qualified"), "the summary first, no title")
	assert.Contains(t, text, "### Coverage")
	assert.Contains(t, text, "### Reasons\n\n- **ref-vlm-base** — failed")
	assert.Regexp(t, `(?s)<details><summary>Reproduce \(6 profiles\)</summary>.*trtmc-qual run --group vlm.*</details>\n$`, text)
	assert.NotContains(t, text, "| GPU UUIDs", "not a column of the block")

	var again bytes.Buffer
	require.NoError(t, RenderDocBlock(&again, g, DocBlockOptions{HeadingLevel: 2}))
	assert.Equal(t, text, again.String(), "deterministic")
	for level, want := range map[int]string{0: "## Coverage", 1: "## Coverage", 5: "###### Coverage", 6: "###### Coverage"} {
		var b bytes.Buffer
		require.NoError(t, RenderDocBlock(&b, g, DocBlockOptions{HeadingLevel: level}))
		assert.Contains(t, b.String(), "\n"+want+"\n", "level %d", level)
		assert.NotContains(t, b.String(), "\n# ", "never an H1")
	}
	var linked bytes.Buffer
	require.NoError(t, RenderDocBlock(&linked, g, DocBlockOptions{Link: "https://example.org/pack/vlm/results.html"}))
	assert.Contains(t, linked.String(), "[full report](https://example.org/pack/vlm/results.html)")

	// In a page: the block replaces the old one; a second update changes nothing.
	page := []byte("# Models\n\n## Results\n\n<!-- trtmc-qual:vlm:begin -->\nold\n<!-- trtmc-qual:vlm:end -->\n\nAfter.\n")
	fb, err := FindBlock(page, "p.md", "vlm")
	require.NoError(t, err)
	updated := fb.Replace(page, blk.Bytes())
	fb2, err := FindBlock(updated, "p.md", "vlm")
	require.NoError(t, err)
	assert.Equal(t, 2, fb2.HeadingLevel, "the block's own headings do not count: they are below the marker")
	assert.Equal(t, string(updated), string(fb2.Replace(updated, blk.Bytes())))
}

// applyPatch applies a unified diff with patch(1) and returns the result.
func applyPatch(t *testing.T, a []byte, diff string) []byte {
	t.Helper()
	p, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("patch not installed")
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "a")
	require.NoError(t, os.WriteFile(f, a, 0o644))
	cmd := exec.Command(p, "-s", "-o", filepath.Join(dir, "out"), f)
	cmd.Stdin = strings.NewReader(diff)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n%s", out, diff)
	got, err := os.ReadFile(filepath.Join(dir, "out"))
	require.NoError(t, err)
	return got
}

// TestUnifiedDiffApplies: random edits, duplicate lines, a last line
// without a newline, and differences too large for the bounded search
// (written as one deletion and one insertion): patch(1) turns a into b.
func TestUnifiedDiffApplies(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for n := range 60 {
		var a, b []string
		for i := range 1 + rng.Intn(60) {
			line := fmt.Sprintf("l%d\n", rng.Intn(8)) // many duplicates
			if rng.Intn(3) == 0 {
				line = fmt.Sprintf("u%d\n", i)
			}
			a = append(a, line)
			switch rng.Intn(6) {
			case 0:
			case 1:
				b = append(b, "x"+line)
			case 2:
				b = append(b, line, fmt.Sprintf("l%d\n", rng.Intn(8)))
			default:
				b = append(b, line)
			}
		}
		as, bs := strings.Join(a, ""), strings.Join(b, "")
		if n%5 == 0 {
			as = strings.TrimSuffix(as, "\n")
		}
		if n%7 == 0 {
			bs = strings.TrimSuffix(bs, "\n")
		}
		if as == bs {
			continue
		}
		d := unifiedDiff("a", "b", []byte(as), []byte(bs))
		assert.Equal(t, bs, string(applyPatch(t, []byte(as), d)), "case %d", n)
	}
	// Past the bound: 3000 lines replaced by 3 in the middle of a page.
	var big strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&big, "old %d\n", i)
	}
	a := "head\n1\n2\n3\n" + big.String() + "4\n5\n6\ntail\n"
	b := "head\n1\n2\n3\nnew a\nnew b\nnew c\n4\n5\n6\ntail\n"
	d := unifiedDiff("a", "b", []byte(a), []byte(b))
	assert.True(t, strings.HasPrefix(d, "--- a\n+++ b\n@@ -2,3006 +2,9 @@\n 1\n 2\n 3\n-old 0\n"), d[:80])
	assert.Equal(t, b, string(applyPatch(t, []byte(a), d)))
}

// BenchmarkDryRunDiffHugeBlock is issue 25 item 12's page: 8 MB, a block of
// 1M short lines replaced by a small one. The full LCS table took about
// 1 GB here; the bounded diff's B/op (every byte allocated, an upper bound
// on its peak) is reported, and peak-heap-MB sampled while it runs.
func BenchmarkDryRunDiffHugeBlock(b *testing.B) {
	begin, end := BlockMarkers("vlm")
	var page bytes.Buffer
	page.WriteString("# Page\n\n" + begin + "\n")
	for i := 0; page.Len() < 8<<20; i++ {
		fmt.Fprintf(&page, "| r%06d |\n", i)
	}
	page.WriteString(end + "\n")
	doc := page.Bytes()
	content := bytes.Repeat([]byte("| new row |\n"), 100)
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	peak := samplePeakHeap(b)
	for b.Loop() {
		blk, err := FindBlock(doc, "p.md", "vlm")
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteUnifiedDiff(io.Discard, "p.md", "p.md (updated)", doc, blk.Replace(doc, content)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(peak()-baseHeap)/(1<<20), "peak-heap-MB")
}

// baseHeap is the live heap before a benchmark starts sampling.
var baseHeap uint64

// samplePeakHeap samples the heap in use every millisecond until the
// benchmark ends; the returned function gives the highest value seen.
func samplePeakHeap(b *testing.B) func() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	baseHeap = ms.HeapInuse
	var mu sync.Mutex
	peak := ms.HeapInuse
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			mu.Lock()
			peak = max(peak, m.HeapInuse)
			mu.Unlock()
		}
	}()
	b.Cleanup(func() { close(done) })
	return func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// updateBlock returns doc with the lines between group's begin and end
// markers replaced by content, and whether that changed anything (see
// FindBlock and Block.Replace). Updating twice with the same content
// changes nothing the second time.
func updateBlock(doc []byte, file, group string, content []byte) ([]byte, bool, error) {
	b, err := FindBlock(doc, file, group)
	if err != nil {
		return nil, false, err
	}
	updated := b.Replace(doc, content)
	return updated, !bytes.Equal(updated, doc), nil
}

// unifiedDiff renders the line difference between a and b in the unified
// format of `diff -u` (3 lines of context), with aName and bName in the
// headers; "" when they are equal. See WriteUnifiedDiff.
func unifiedDiff(aName, bName string, a, b []byte) string {
	var out strings.Builder
	_ = WriteUnifiedDiff(&out, aName, bName, a, b)
	return out.String()
}
