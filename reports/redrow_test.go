package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// A red row read at a glance (issue 36): what the HTML report's pieces
// show of a failed row. The whole page is checked in a browser by
// html_browser_test.go.

// The failed fixture row's mismatches: both answers, from the sealed
// mismatches.jsonl, for exactly the requests the page shows.
func TestLoadReadsBothAnswersOfTheShownMismatches(t *testing.T) {
	g, err := Load([]string{RootA}, "vlm")
	require.NoError(t, err)
	row := RowOf(t, g, "ref-vlm-base")
	require.Empty(t, row.mismatches.note)
	ids := shownMismatchIDs(row.joined)
	require.Len(t, ids, 2)
	assert.Equal(t, shownMismatch{Native: "3 shapes: red square, blue disc, green square", HTTP: "3 shapes: red square, blue disc"}, row.mismatches.byID[ids[0]])
	assert.Equal(t, shownMismatch{Native: "2", HTTP: "2 <|im_end|>"}, row.mismatches.byID[ids[1]])
	assert.Nil(t, RowOf(t, g, "ref-vlm-small").mismatches.byID, "a row without mismatches reads no file")
}

// mismatchDir is a copy of the failed fixture row's evidence, its
// mismatches.jsonl replaced by data and the directory sealed again when
// reseal is set.
func mismatchDir(t *testing.T, data string, reseal bool) string {
	t.Helper()
	root := CopyTree(t, RootA)
	dir := filepath.Join(root, "vlm", "ref-vlm-base")
	require.NoError(t, os.WriteFile(filepath.Join(dir, MismatchesFile), []byte(data), 0o644))
	if reseal {
		require.NoError(t, evidence.Seal(dir, map[string]any{"harness_version": "test"}))
	}
	return dir
}

// Only the file the run sealed is read: a mismatches.jsonl changed after
// the seal, one the manifest does not list, one over the cap, one of a
// retired seal, or a malformed line shows no answer, and the note says
// why (fail closed: the page never shows answers the evidence does not
// prove).
func TestMismatchesAreReadOnlyAsSealed(t *testing.T) {
	ids := []string{"req-ref-vlm-base-0017"}
	line := `{"request_id":"req-ref-vlm-base-0017","phase":"measured","diff":"d","http_answer":"forged","native_answer":"forged too"}` + "\n"

	dir := mismatchDir(t, line, true)
	got := readSealedMismatches(dir, ids)
	assert.Empty(t, got.note, "resealed: read")
	assert.Equal(t, "forged", got.byID[ids[0]].HTTP)

	dir = mismatchDir(t, line, false) // changed after the seal
	got = readSealedMismatches(dir, ids)
	assert.Nil(t, got.byID)
	assert.Contains(t, got.note, "not the file the run sealed")

	dir = mismatchDir(t, line, true)
	require.NoError(t, os.Rename(filepath.Join(dir, MismatchesFile), filepath.Join(dir, "moved.jsonl")))
	require.NoError(t, evidence.Seal(dir, nil))
	require.NoError(t, os.Rename(filepath.Join(dir, "moved.jsonl"), filepath.Join(dir, MismatchesFile)))
	got = readSealedMismatches(dir, ids)
	assert.Nil(t, got.byID)
	assert.Contains(t, got.note, "the sealed manifest does not list it")

	dir = mismatchDir(t, strings.Repeat(line, 4), true)
	data, why := readSealed(dir, MismatchesFile, int64(len(line)*3))
	assert.Nil(t, data)
	assert.Contains(t, why, "is not read", "over the cap")

	dir = mismatchDir(t, line+"{not json\n", true)
	got = readSealedMismatches(dir, ids)
	assert.Nil(t, got.byID)
	assert.Contains(t, got.note, MismatchesFile+" line 2:")

	dir = mismatchDir(t, line, true)
	mpath := filepath.Join(dir, evidence.ManifestFile)
	mdata, err := os.ReadFile(mpath)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(mpath, bytes.Replace(mdata, []byte(`"harness_version": "test"`), []byte(`"harness_version": "tesT"`), 1), 0o644))
	got = readSealedMismatches(dir, ids)
	assert.Nil(t, got.byID, "a manifest whose seal does not match its bytes")
	assert.Contains(t, got.note, "seal is not sound")
}

// markSides renders both sides of the word diff of a and b.
func markSides(a, b string) (native, http string) {
	ops := wordOps(a, b)
	keep := keptOps(ops)
	var n, h strings.Builder
	writeAnswerSide(&n, ops, keep, '-', "del", false)
	writeAnswerSide(&h, ops, keep, '+', "ins", false)
	return n.String(), h.String()
}

// The difference is marked word by word, escaped, with far common text
// elided and each side capped.
func TestAnswerDiffMarksTheWordsThatDiffer(t *testing.T) {
	n, h := markSides("3 shapes: red square, blue disc, green square", "3 shapes: red square, blue disc")
	assert.Equal(t, "3 shapes: red square,<wbr> blue disc<del>,<wbr> green square</del>", n)
	assert.Equal(t, "3 shapes: red square,<wbr> blue disc", h)

	n, h = markSides("a cat sat", "a dog sat")
	assert.Equal(t, "a <del>cat</del> sat", n)
	assert.Equal(t, "a <ins>dog</ins> sat", h)

	n, h = markSides(`{"x_min":0.1234,"label":"<b>"}`, `{"x_min":0.1236,"label":"<b>"}`)
	assert.Equal(t, `{&#34;x_min&#34;:0.<del>1234</del>,<wbr>&#34;label&#34;:&#34;&lt;b&gt;&#34;}<wbr>`, n, "escaped; only the differing number marked")
	assert.Contains(t, h, "<ins>1236</ins>")

	long := strings.Repeat("same words here ", 100)
	n, _ = markSides(long+"end one", long+"end two")
	assert.True(t, strings.HasPrefix(n, `<span class="elided">…</span>`), "common text far from the change is elided: %.80s", n)
	assert.True(t, strings.HasSuffix(n, "<del>one</del>"))
	assert.Less(t, len(n), 400)

	n, _ = markSides(strings.Repeat("x ", 3000), strings.Repeat("y ", 3000))
	assert.Contains(t, n, "cut here: the whole answer is in "+MismatchesFile)
	assert.Less(t, strings.Count(n, "x"), maxAnswerShownRunes)

	n, h = markSides("same", "same")
	assert.Equal(t, "same", n, "nothing differs: all shown, nothing marked")
	assert.Equal(t, "same", h)
}

// The verdict cell of a row that is not qualified gives its first reason,
// escaped and cut, and how many more there are.
func TestVerdictCellGivesTheFirstReason(t *testing.T) {
	g, err := Load([]string{RootA}, "vlm")
	require.NoError(t, err)
	base := RowOf(t, g, "ref-vlm-base")
	assert.Equal(t, `failed<span class="why"><code>mismatched</code> measured: 2 of 50 requests: the native and HTTP answers differ</span> <span class="more">+2 more reasons</span>`,
		verdictHTML(&base))
	small := RowOf(t, g, "ref-vlm-small")
	assert.Equal(t, "qualified", verdictHTML(&small))
	xl := RowOf(t, g, "ref-vlm-xl")
	assert.Equal(t, "excluded: needs two GPUs; the qualification host has one", verdictHTML(&xl), "an exclusion says its reason already")

	base.Result.Reasons = []verdict.Reason{{Code: verdict.CodeServerExit, Message: "<b>" + strings.Repeat("word ", 40) + "/a/b/c"}}
	cell := verdictHTML(&base)
	assert.Contains(t, cell, "<code>server_exit</code> &lt;b&gt;word word")
	assert.NotContains(t, cell, "more")
	why := regexp.MustCompile(`<span class="why">(.*)</span>`).FindStringSubmatch(cell)
	require.NotNil(t, why)
	assert.True(t, strings.HasSuffix(why[1], "word…"), "cut at a word: %q", why[1])
}

// Normal profiles first, then variants, then partial and excluded ones,
// failures first in each.
func TestRowSectionsSeparateTheKinds(t *testing.T) {
	g, err := Load([]string{RootA}, "vlm")
	require.NoError(t, err)
	var got []string
	for _, s := range rowSections(g.Rows) {
		var ids []string
		for _, r := range s.rows {
			ids = append(ids, r.Profile)
		}
		got = append(got, s.id+": "+strings.Join(ids, " "))
	}
	assert.Equal(t, []string{
		"normal: ref-vlm-large ref-vlm-medium ref-vlm-base ref-vlm-tiny ref-vlm-small",
		"variant: ref-vlm-small-fp16",
		"other: ref-vlm-small-l0 ref-vlm-xl",
	}, got)
}

// One set per row: the measured requests that matched, n where it is not
// every measured request.
func TestEveryFigureOfARowIsOverOneSet(t *testing.T) {
	g, err := Load([]string{RootA}, "vlm")
	require.NoError(t, err)
	base := RowOf(t, g, "ref-vlm-base")
	n, full := setSize(base.Result)
	assert.Equal(t, [2]int{46, 50}, [2]int{n, full})
	assert.Equal(t, base.Result.LatencyMS.HTTP.Count, n, "the set the row's percentiles are over")
	cells := summaryCells(&base)
	assert.Contains(t, cells[2], `<span class="n">n=46 of 50</span>`, "HTTP cell")
	assert.Contains(t, cells[3], `<span class="n">n=46 of 50</span>`, "Task cell")
	dist := distributionSVG(base.Profile, base.joined, base.Result.LatencyMS)
	assert.Contains(t, dist, `data-http-points="46" data-task-points="46"`)
	assert.Contains(t, dist, "HTTP (n=46)")
	tl := timelineSVG(base.Profile, base.joined)
	assert.Contains(t, tl, `data-set="46" data-http-points="46" data-task-points="46"`)
	assert.Equal(t, 46, strings.Count(tl, `class="pt http"`))
	assert.Equal(t, 55-46, strings.Count(tl, `class="pt http out"`), "the other requests, grey")

	small := RowOf(t, g, "ref-vlm-small")
	for _, c := range summaryCells(&small) {
		assert.NotContains(t, c, "n=", "every measured request matched: no n")
	}
}

// The hardware column spells a CPU row one way, whatever its scope says.
func TestHardwareCellSpellsCPUOnce(t *testing.T) {
	for _, p := range []verdict.Provenance{
		{HardwareScope: "cpu", Host: verdict.MaskHost}, {HardwareScope: "CPU", Host: verdict.MaskHost}, {Host: verdict.MaskHost},
	} {
		assert.Equal(t, "CPU", hardwareCell(p), "%+v", p)
	}
	assert.Equal(t, "CPU (h1)", hardwareCell(verdict.Provenance{HardwareScope: "cpu", Host: "h1"}))
	assert.Equal(t, Missing, hardwareCell(verdict.Provenance{}))
	assert.Equal(t, "gb300", hardwareCell(verdict.Provenance{HardwareScope: "gb300"}))
}

// Each legend swatch of the group latency chart is filled as the bars it
// stands for.
func TestChartLegendSwatchesAreTheBars(t *testing.T) {
	g, err := Load([]string{RootA}, "vlm")
	require.NoError(t, err)
	svg := groupCharts(g.Rows)
	fill := func(re string) string {
		m := regexp.MustCompile(re).FindStringSubmatch(svg)
		require.NotNil(t, m, re)
		return m[1]
	}
	for _, s := range []struct{ series, bar string }{{"http-p50", "p50 http"}, {"http-p95", "p95 http"}, {"task-p50", "p50 task"}, {"task-p95", "p95 task"}} {
		swatch := fill(`<rect class="swatch" data-series="` + s.series + `"[^>]* (fill="[^"]*"(?: fill-opacity="[^"]*")?)`)
		bar := fill(`<rect class="bar ` + s.bar + `"[^>]* (fill="[^"]*"(?: fill-opacity="[^"]*")?)`)
		assert.Equal(t, bar, swatch, s.series)
	}
}

// rootDescriber is a Mapper that knows one root's description.
type rootDescriber struct{ Mapper }

func (rootDescriber) RootDescription(name string) string {
	if name == "OUT" {
		return "the evidence root"
	}
	return ""
}

// Issue 36: a root the publisher named (--root WORK=DIR) is said as one in
// the reproduce note, never a bare "$WORK." the reader cannot place.
func TestRootsNoteSaysWhatAUserRootIs(t *testing.T) {
	assert.Equal(t, "Paths are relative to named roots; set them before running: $OUT the evidence root; "+
		"$WORK the directory named WORK by --root.", rootsNote([]string{"OUT", "WORK"}, rootDescriber{}))
}
