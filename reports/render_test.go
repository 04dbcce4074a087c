package reports_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
	"github.com/trtmc-qual/trtmc-qual/reports/stats"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

func render(t *testing.T, g *GroupReport, format string) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Render(&buf, g, format))
	return buf.Bytes()
}

func TestGoldenVLMAllFormats(t *testing.T) {
	g, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	for _, f := range GroupFormats() {
		t.Run(f, func(t *testing.T) {
			golden.Assert(t, "vlm."+f, render(t, g, f))
		})
	}
}

func TestGoldenDetectionWithoutInventory(t *testing.T) {
	g, err := published(Load([]string{RootA}, "detection"))
	require.NoError(t, err)
	for _, f := range []string{FormatMarkdown, FormatJSON, FormatCSV} {
		golden.Assert(t, "detection."+f, render(t, g, f))
	}
}

func TestGoldenMerged(t *testing.T) {
	g, err := published(Load([]string{RootA, RootB}, "vlm"))
	require.NoError(t, err)
	for _, f := range []string{FormatMarkdown, FormatJSON, FormatHTML} {
		golden.Assert(t, "merged."+f, render(t, g, f))
	}
}

func TestGoldenBaseline(t *testing.T) {
	g, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	base, err := published(Load([]string{RootBaseline}, "vlm"))
	require.NoError(t, err)
	require.NoError(t, ApplyBaseline(g, base, BaselineRule(DefaultRegressionThresholdPct, stats.DefaultRunSD)))
	for _, f := range []string{FormatMarkdown, FormatJSON, FormatCSV, FormatTable} {
		golden.Assert(t, "baseline."+f, render(t, g, f))
	}
}

// TestRunAndReportAgree is the byte-identity contract: what WriteGroupFiles
// writes (run's path) equals what Render prints (report's path) for the same
// evidence, loaded afresh.
func TestRunAndReportAgree(t *testing.T) {
	g, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, WriteGroupFiles(dir, g))
	again, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	again.LinkDir = dir // as `report --output-file DIR/results.html` links
	for name, format := range GroupFiles() {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, string(render(t, again, format)), string(got), name)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 4, "no temporary files are left behind")
}

func TestRenderRejectsUnknownFormat(t *testing.T) {
	g, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	err = Render(&bytes.Buffer{}, g, "xml")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "valid values are md, csv, json, html, table, tsv")
}

// TestPublicFormatsNeedAPublisher breaks the publication on purpose: a
// report nobody publishes (no Publisher, not a public copy) renders no
// public format, so nothing is published unmapped; the exact formats
// render as they are.
func TestPublicFormatsNeedAPublisher(t *testing.T) {
	g, err := Load([]string{RootA}, "vlm")
	require.NoError(t, err)
	for _, f := range []string{FormatMarkdown, FormatHTML, FormatSummary} {
		var b bytes.Buffer
		err := Render(&b, g, f)
		require.Error(t, err, f)
		assert.Contains(t, err.Error(), "the report has no publisher", f)
		assert.Zero(t, b.Len(), "%s: nothing written", f)
	}
	require.Error(t, g.JUnit(&bytes.Buffer{}))
	require.Error(t, RenderDocBlock(&bytes.Buffer{}, g, DocBlockOptions{}))
	for _, f := range []string{FormatCSV, FormatJSON, FormatTable, FormatTSV} {
		require.NoError(t, Render(&bytes.Buffer{}, g, f), f)
	}
	assert.False(t, g.IsPublic())
}

func TestMarkdownShowsWhatReviewersCheck(t *testing.T) {
	g, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	md := string(render(t, g, FormatMarkdown))
	for _, want := range []string{
		"**1 of 5 normal profiles qualified (1 failed, 1 error, 1 interrupted, 1 not-run); 1 excluded with a reason; 2 variant or partial profiles listed separately, not counted.**",
		"answer_exact_match 0.958 ≥ 0.900 ✓",
		"answer_exact_match 0.625 ≥ 0.900 ✗",
		"excluded: needs two GPUs; the qualification host has one",
		"| ref-vlm-tiny ", // not-run row present
		"3 (2 mismatched, 1 echo differs)",
		"1 (1 server record)",
		"30/50", // interrupted measured phase
		"trtmc-qual run --group vlm --profile ref-vlm-small --out out/demo",
		"--header 'Authorization:Bearer [REDACTED]'",
	} {
		assert.Contains(t, md, want)
	}
	assert.NotContains(t, md, "server exited with status 2", "a previous run set aside is ignored")
	assert.NotContains(t, md, "| 0.00 ", "a missing value is never shown as 0")
}

func TestHTMLIsSelfContained(t *testing.T) {
	g, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	h := string(render(t, g, FormatHTML))
	for _, banned := range []string{"<script", "<link", "src=\"http", "href=\"http", "@import", "url("} {
		assert.NotContains(t, h, banned)
	}
	// Failure first: the error row's section precedes the qualified one.
	assert.Less(t, strings.Index(h, `id="p-ref-vlm-large"`), strings.Index(h, `id="p-ref-vlm-small"`))
	assert.Equal(t, 5, strings.Count(h, `class="plot plot-timeline"`), "one timeline per result with joined requests")
	assert.Contains(t, h, `data-requests="55"`)
	assert.Contains(t, h, `<span class="del">-&#34;3 shapes: red square, blue disc, green square&#34;</span>`)
}

// TestGoldenGPU renders tensor-parallel rows (GPU provenance, hygiene
// checks) and a tp=4 row the scheduler did not run on a 3-GPU host.
func TestGoldenGPU(t *testing.T) {
	g, err := published(Load([]string{filepath.Join("testdata", "evidence", "gpu")}, "detection"))
	require.NoError(t, err)
	for _, f := range []string{FormatMarkdown, FormatCSV, FormatHTML} {
		golden.Assert(t, "gpu."+f, render(t, g, f))
	}
	require.Len(t, g.Rows, 3)
	byID := map[string]Row{}
	for _, r := range g.Rows {
		byID[r.Profile] = r
	}
	tp4 := byID["ref-detect-small-tp4"]
	assert.Equal(t, StatusNotRun, tp4.Status)
	assert.Contains(t, tp4.Note, "needs 4 GPUs")
	assert.Equal(t, verdict.KindVariant, tp4.Kind)
	assert.True(t, g.Coverage.OK, "a variant that did not run is not coverage: it never blocks (Row.Blocks)")
	// The same row, had it run and failed, blocks.
	tp4.Status = StatusFailed
	assert.True(t, tp4.Blocks())
	md := string(render(t, g, FormatMarkdown))
	assert.Contains(t, md, "2× NVIDIA H200")
	assert.Contains(t, md, "580.159.04 / 13.0")
	csv := string(render(t, g, FormatCSV))
	assert.Contains(t, csv, "idle_before_timing pass; in_use_while_serving pass; released_after_stop pass")
}

// TestJudgeKeepsNotRun: a row the scheduler did not start (too few GPUs)
// is not-run, never qualified or failed, whatever else it holds.
func TestJudgeKeepsNotRun(t *testing.T) {
	r := &verdict.Result{Correctness: &verdict.Correctness{Ran: true, Passed: true},
		Problems: []verdict.Problem{{Stage: "schedule", Code: verdict.CodeInsufficientGPUs, Message: "needs 2 GPUs"}}}
	verdict.Judge(r)
	assert.Equal(t, verdict.VerdictNotRun, r.Verdict)
	require.NotEmpty(t, r.Reasons)
	assert.Equal(t, verdict.CodeInsufficientGPUs, r.Reasons[0].Code, "the scheduler's reason first")
	assert.Equal(t, verdict.ClassNotRun, r.Reasons[0].Class)
	r = &verdict.Result{Problems: []verdict.Problem{{Stage: "schedule", Code: verdict.CodeGPURequired, Message: "family needs a GPU"}}}
	verdict.Judge(r)
	assert.Equal(t, verdict.VerdictError, r.Verdict, "a GPU family on CPU slots is a setup error")
}

// The text formats carry the intervals compactly: Markdown and the docs
// block keep their columns and add a collapsed table of every percentile
// with n and its interval (the HTML report's interval text) and the
// images/s lines; CSV has a column for each bound. Goldens over the
// fixtures with the figures issue 35's join records.
func TestGoldenIntervalsText(t *testing.T) {
	g, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	WithIntervals(t, g)
	WithDrift(t, g)
	for _, f := range []string{FormatMarkdown, FormatCSV} {
		golden.Assert(t, "intervals."+f, render(t, g, f))
	}
	var blk bytes.Buffer
	require.NoError(t, RenderDocBlock(&blk, g, DocBlockOptions{HeadingLevel: 2}))
	golden.Assert(t, "intervals.docblock.md", blk.Bytes())
}
