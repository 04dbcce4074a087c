//go:build integration

package reports_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/trtmc-qual/trtmc-qual/reports"
)

// The HTML report, checked in a real browser: headless Chromium from
// Debian's packages (scripts/install-chromium.sh). Run with
//
//	scripts/install-chromium.sh && go test -tags integration -run Browser ./reports
//
// Set TRTMC_SCREENSHOT_DIR to keep the screenshot for a human to look at.

// probePage loads the report in two iframes, 1400 and 900 px wide, and
// writes what the browser shows at 1400 px (innerText, which leaves out
// collapsed <details>; the laid-out size of every plot; computed colours;
// the tables, cells and answers) and, at both widths, every word broken
// across lines into the DOM for --dump-dom to print.
const probePage = `<!DOCTYPE html><html><body>
<iframe id="f" src="results.html" style="width:1400px;height:900px"></iframe>
<iframe id="narrow" src="results.html" style="width:900px;height:900px"></iframe>
<pre id="out"></pre>
<script>
// brokenWords: each run of letters whose characters the browser laid out
// on more than one line (a break inside a word), with its context.
function brokenWords(d) {
  var out = [], walker = d.createTreeWalker(d.body, NodeFilter.SHOW_TEXT, null), node;
  while ((node = walker.nextNode())) {
    if (node.parentElement.closest('svg, title, style')) continue;
    var re = /[A-Za-z]{2,}/g, m, t = node.data;
    while ((m = re.exec(t))) {
      var r = d.createRange();
      r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
      var tops = {}, lines = 0;
      Array.prototype.forEach.call(r.getClientRects(), function (c) {
        var k = Math.round(c.top);
        if (c.width > 0 && !tops[k]) { tops[k] = true; lines++; }
      });
      if (lines > 1) out.push(m[0] + ' in ' + node.parentElement.tagName + ': ' + t.substr(Math.max(0, m.index - 30), m[0].length + 60));
    }
  }
  return out;
}
function probe(d) {
  var res = {text: d.body.innerText, plots: [], sections: [], rows: [], columns: [], links: [], tables: [], answers: [], sets: [],
    scrollWidth: d.documentElement.scrollWidth, clientWidth: d.documentElement.clientWidth};
  d.querySelectorAll('table.results').forEach(function (tb) {
    var ids = [];
    tb.querySelectorAll('tbody tr').forEach(function (tr) { ids.push(tr.dataset.profile); });
    res.tables.push({id: tb.id, profiles: ids});
  });
  d.querySelectorAll('table.results thead th').forEach(function (th) {
    var r = th.getBoundingClientRect();
    res.columns.push({name: th.innerText, left: r.left, right: r.right});
  });
  d.querySelectorAll('table.results a.ev').forEach(function (a) { res.links.push(a.getAttribute('href')); });
  res.charts = [];
  d.querySelectorAll('.group-charts svg.plot').forEach(function (s) {
    var r = s.getBoundingClientRect();
    res.charts.push({kind: s.classList[1], right: r.right, bars: s.querySelectorAll('rect.bar').length});
  });
  res.chartWhiskers = d.querySelectorAll('.group-charts g.ci').length;
  res.swatches = [];
  d.querySelectorAll('.group-charts rect.swatch').forEach(function (w) {
    var series = w.dataset.series, bar = d.querySelector('.group-charts rect.bar.' + series.split('-').reverse().join('.'));
    var ws = getComputedStyle(w), bs = bar ? getComputedStyle(bar) : null;
    res.swatches.push({series: series, swatch: ws.fill + ' ' + ws.fillOpacity, bar: bs ? bs.fill + ' ' + bs.fillOpacity : 'none'});
  });
  d.querySelectorAll('section svg.plot').forEach(function (s) {
    var r = s.getBoundingClientRect();
    res.plots.push({kind: s.classList[1], width: r.width, height: r.height,
      profile: s.closest('section').id, setHTTP: +s.dataset.httpPoints, setTask: +s.dataset.taskPoints,
      http: s.querySelectorAll('circle.pt.http:not(.out)').length,
      task: s.querySelectorAll('circle.pt.task:not(.out)').length,
      out: s.querySelectorAll('circle.pt.out').length,
      bad: s.querySelectorAll('.mark-bad').length,
      legend: Array.prototype.map.call(s.querySelectorAll('.swatch + text'), function (t) { return t.textContent; }),
      whiskers: s.querySelectorAll('g.ci').length, unbounded: s.querySelectorAll('g.ci path.unbounded').length,
      whiskersInside: Array.prototype.every.call(s.querySelectorAll('g.ci'), function (g) {
        var a = g.getBoundingClientRect(), b = s.getBoundingClientRect();
        return a.left >= b.left - 1 && a.right <= b.right + 1 && a.width > 0; }),
      lines: s.querySelectorAll('polyline, path.ecdf').length});
  });
  d.querySelectorAll('section.checkpoint').forEach(function (s) {
    res.sections.push(s.id + '=' + s.dataset.status);
  });
  d.querySelectorAll('table.results tbody tr').forEach(function (tr) {
    var v = tr.querySelector('td.verdict'), cells = tr.querySelectorAll('td');
    res.rows.push({profile: tr.dataset.profile, verdict: v.innerText, color: getComputedStyle(v).color,
      http: cells[3].innerText, task: cells[4].innerText, hardware: cells[6].innerText});
  });
  d.querySelectorAll('.diff').forEach(function (x) {
    var side = function (c, tag) {
      var p = x.querySelector('.answer.' + c + ' pre');
      if (!p) return {};
      var r = p.getBoundingClientRect();
      return {text: p.innerText, marked: Array.prototype.map.call(p.querySelectorAll(tag), function (e) { return e.innerText; }),
        markColor: p.querySelector(tag) ? getComputedStyle(p.querySelector(tag)).backgroundColor : '', visible: r.width > 0 && r.height > 0};
    };
    res.answers.push({request: x.dataset.request, native: side('native', 'del'), http: side('http', 'ins')});
  });
  d.querySelectorAll('p.set').forEach(function (p) {
    res.sets.push({profile: p.closest('section').id, n: +p.dataset.n, full: +p.dataset.full, text: p.innerText});
  });
  res.broken = brokenWords(d);
  return res;
}
var loaded = 0;
function done() {
  if (++loaded < 2) return;
  var res = probe(document.getElementById('f').contentDocument);
  res.brokenNarrow = brokenWords(document.getElementById('narrow').contentDocument);
  document.getElementById('out').textContent = JSON.stringify(res);
}
document.getElementById('f').addEventListener('load', done);
document.getElementById('narrow').addEventListener('load', done);
</script></body></html>`

type shownPlot struct {
	Kind    string   `json:"kind"`
	Width   float64  `json:"width"`
	Height  float64  `json:"height"`
	Profile string   `json:"profile"`
	SetHTTP int      `json:"setHTTP"`
	SetTask int      `json:"setTask"`
	HTTP    int      `json:"http"`
	Task    int      `json:"task"`
	Out     int      `json:"out"`
	Bad     int      `json:"bad"`
	Legend  []string `json:"legend"`
	Lines   int      `json:"lines"`
	// Whiskers are the 95 % intervals drawn, Unbounded their arrows.
	Whiskers       int  `json:"whiskers"`
	Unbounded      int  `json:"unbounded"`
	WhiskersInside bool `json:"whiskersInside"`
}

type shownSide struct {
	Text      string   `json:"text"`
	Marked    []string `json:"marked"`
	MarkColor string   `json:"markColor"`
	Visible   bool     `json:"visible"`
}

type shownRow struct {
	Profile  string `json:"profile"`
	Verdict  string `json:"verdict"`
	Color    string `json:"color"`
	HTTP     string `json:"http"`
	Task     string `json:"task"`
	Hardware string `json:"hardware"`
}

type shown struct {
	Text     string      `json:"text"`
	Plots    []shownPlot `json:"plots"`
	Sections []string    `json:"sections"`
	Rows     []shownRow  `json:"rows"`
	Tables   []struct {
		ID       string   `json:"id"`
		Profiles []string `json:"profiles"`
	} `json:"tables"`
	Columns []struct {
		Name  string  `json:"name"`
		Left  float64 `json:"left"`
		Right float64 `json:"right"`
	} `json:"columns"`
	Links  []string `json:"links"`
	Charts []struct {
		Kind  string  `json:"kind"`
		Right float64 `json:"right"`
		Bars  int     `json:"bars"`
	} `json:"charts"`
	ChartWhiskers int `json:"chartWhiskers"`
	Swatches      []struct {
		Series string `json:"series"`
		Swatch string `json:"swatch"`
		Bar    string `json:"bar"`
	} `json:"swatches"`
	Answers []struct {
		Request string    `json:"request"`
		Native  shownSide `json:"native"`
		HTTP    shownSide `json:"http"`
	} `json:"answers"`
	Sets []struct {
		Profile string `json:"profile"`
		N       int    `json:"n"`
		Full    int    `json:"full"`
		Text    string `json:"text"`
	} `json:"sets"`
	Broken       []string `json:"broken"`
	BrokenNarrow []string `json:"brokenNarrow"`
	ScrollWidth  float64  `json:"scrollWidth"`
	ClientWidth  float64  `json:"clientWidth"`
}

func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed; CI must run scripts/install-chromium.sh")
	}
	t.Skip("chromium is not installed (run scripts/install-chromium.sh)")
	return ""
}

func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--allow-file-access-from-files"}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "chromium %v: %s", args, tail(stderr.String(), 2000))
	return out
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// showInBrowser writes the published vlm report of RootA and what
// Chromium shows of it (probePage); dir is where the page is.
func showInBrowser(t *testing.T, bin string) (s shown, dir string) {
	t.Helper()
	g, err := Load([]string{RootA}, "vlm")
	require.NoError(t, err)
	WithIntervals(t, g) // what issue 35's join records, which the fixtures predate
	g, err = published(g, nil)
	require.NoError(t, err)
	dir = t.TempDir()
	require.NoError(t, WriteGroupFiles(dir, g))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "probe.html"), []byte(probePage), 0o644))
	dom := string(runChromium(t, bin, "--virtual-time-budget=10000", "--dump-dom", "file://"+filepath.Join(dir, "probe.html")))
	start := strings.Index(dom, `<pre id="out">`)
	require.GreaterOrEqual(t, start, 0, "probe output missing from the dumped DOM")
	body := dom[start+len(`<pre id="out">`):]
	end := strings.Index(body, "</pre>")
	require.Greater(t, end, 0, "the probe did not run: %s", tail(dom, 500))
	require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(body[:end])), &s))
	return s, dir
}

func TestBrowserShowsHTMLReport(t *testing.T) {
	bin := chromium(t)
	s, dir := showInBrowser(t, bin)

	// The summary; normal profiles, variants, then partial and excluded
	// profiles, each table failure-first, and the cards in that order.
	assert.Contains(t, s.Text, "1 of 5 normal profiles qualified (1 failed, 1 error, 1 interrupted, 1 not-run)")
	require.Len(t, s.Tables, 3)
	assert.Equal(t, "results-normal", s.Tables[0].ID)
	assert.Equal(t, []string{"ref-vlm-large", "ref-vlm-medium", "ref-vlm-base", "ref-vlm-tiny", "ref-vlm-small"}, s.Tables[0].Profiles)
	assert.Equal(t, "results-variant", s.Tables[1].ID)
	assert.Equal(t, []string{"ref-vlm-small-fp16"}, s.Tables[1].Profiles)
	assert.Equal(t, "results-other", s.Tables[2].ID)
	assert.Equal(t, []string{"ref-vlm-small-l0", "ref-vlm-xl"}, s.Tables[2].Profiles, "the L0 partial below the counted models")
	assert.Equal(t, []string{
		"p-ref-vlm-large=error", "p-ref-vlm-medium=interrupted", "p-ref-vlm-base=failed",
		"p-ref-vlm-tiny=not-run", "p-ref-vlm-small=aiperf-qualified", "p-ref-vlm-small-fp16=aiperf-qualified",
		"p-ref-vlm-small-l0=failed", "p-ref-vlm-xl=excluded",
	}, s.Sections)

	checkVerdictCells(t, s)
	checkLayout(t, s, dir)
	checkMismatchesShown(t, s)
	checkOneSetPerRow(t, s)
	checkPlots(t, s)
	checkScreenshots(t, bin, dir)
}

// The verdict cells, in colour, each red one with its first reason; the
// hardware column in one spelling.
func checkVerdictCells(t *testing.T, s shown) {
	t.Helper()
	require.Len(t, s.Rows, 8)
	verdicts := map[string]string{}
	for _, r := range s.Rows {
		verdicts[r.Profile] = strings.Join(strings.Fields(r.Verdict), " ")
		switch {
		case strings.HasPrefix(r.Verdict, "qualified"):
			assert.Equal(t, "rgb(27, 122, 58)", r.Color, r.Profile)
		case strings.HasPrefix(r.Verdict, "failed"), strings.HasPrefix(r.Verdict, "error"), strings.HasPrefix(r.Verdict, "interrupted"):
			assert.Equal(t, "rgb(198, 40, 40)", r.Color, r.Profile)
		}
		assert.NotContains(t, r.Hardware, "cpu", "%s: one spelling in the hardware column", r.Profile)
	}
	assert.Equal(t, map[string]string{
		"ref-vlm-large":    "error server_exit server exited with status 1 during startup: load bundle: precision fp32 is not built for…",
		"ref-vlm-medium":   "interrupted interrupted interrupted (SIGINT) during stage aiperf after 30 of 50 measured requests",
		"ref-vlm-base":     "failed mismatched measured: 2 of 50 requests: the native and HTTP answers differ +2 more reasons",
		"ref-vlm-small-l0": "failed correctness_failed the family's correctness case failed: answer_exact_match 0.625 ≥ 0.900 does not hold",
		"ref-vlm-tiny":     "not-run",
		"ref-vlm-xl":       "excluded: needs two GPUs; the qualification host has one",
		"ref-vlm-small":    "qualified", "ref-vlm-small-fp16": "qualified",
	}, verdicts)
}

// At 1400 px the page does not scroll sideways, and the verdict and
// latency columns are on screen; no word breaks across lines at 1400 or
// 900 px; the links resolve; the charts fit, their legends as their bars.
func checkLayout(t *testing.T, s shown, dir string) {
	t.Helper()
	t.Logf("at 1400 px: document.scrollWidth %v, columns %+v", s.ScrollWidth, s.Columns)
	assert.LessOrEqual(t, s.ScrollWidth, 1400.0, "document.scrollWidth at 1400 px")
	cols := map[string]float64{}
	for _, c := range s.Columns {
		cols[c.Name] = max(cols[c.Name], c.Right)
	}
	for _, name := range []string{"profile", "verdict", "HTTP p50/p95 ms", "Task p50/p95 ms", "images/s", "GPU / hardware"} {
		right, ok := cols[name]
		if assert.True(t, ok, "column %q", name) {
			assert.LessOrEqual(t, right, 1400.0, "column %q ends at %v px", name, right)
		}
	}
	assert.Empty(t, s.Broken, "words broken across lines at 1400 px")
	assert.Empty(t, s.BrokenNarrow, "words broken across lines at 900 px")
	require.NotEmpty(t, s.Links)
	for _, l := range s.Links {
		assert.FileExists(t, filepath.Join(dir, filepath.FromSlash(l)))
	}
	require.Len(t, s.Charts, 2)
	for _, c := range s.Charts {
		assert.Positive(t, c.Bars, c.Kind)
		assert.LessOrEqual(t, c.Right, 1400.0, c.Kind)
	}
	require.Len(t, s.Swatches, 4)
	for _, w := range s.Swatches {
		assert.Equal(t, w.Bar, w.Swatch, "the %s swatch is drawn as its bars", w.Series)
	}
}

// Both answers of each mismatch are on screen, the words that differ
// marked in colour; the reasons, the reproducible command shown; the
// comparator's finding and the AIPerf argv wait in collapsed <details>.
func checkMismatchesShown(t *testing.T, s shown) {
	t.Helper()
	require.Len(t, s.Answers, 2)
	first, second := s.Answers[0], s.Answers[1]
	assert.Equal(t, "req-ref-vlm-base-0017", first.Request)
	assert.Equal(t, "3 shapes: red square, blue disc, green square", first.Native.Text)
	assert.Equal(t, "3 shapes: red square, blue disc", first.HTTP.Text)
	assert.Equal(t, []string{", green square"}, first.Native.Marked)
	assert.Empty(t, first.HTTP.Marked)
	assert.True(t, first.Native.Visible && first.HTTP.Visible)
	assert.Equal(t, "2", second.Native.Text)
	assert.Equal(t, "2 <|im_end|>", second.HTTP.Text, "escaped, shown as text")
	assert.Equal(t, []string{" <|im_end|>"}, second.HTTP.Marked)
	assert.NotEqual(t, "rgba(0, 0, 0, 0)", first.Native.MarkColor, "a deletion has a background")
	assert.NotEqual(t, "rgba(0, 0, 0, 0)", second.HTTP.MarkColor, "an insertion has a background")
	for _, want := range []string{
		"server exited with status 1 during startup: load bundle: precision fp32 is not built for this device",
		"measured: 2 of 50 requests: the native and HTTP answers differ",
		"the family's correctness case failed: answer_exact_match 0.625 ≥ 0.900 does not hold",
		"native answer", "HTTP answer", "the comparator's finding",
		"no record with this request id in server-records.jsonl",
		"No per-request evidence",
		"trtmc-qual run --group vlm --profile ref-vlm-small --out out/demo",
		"AIPerf argv as recorded",
	} {
		assert.Contains(t, s.Text, want)
	}
	assert.NotContains(t, s.Text, `-"3 shapes: red square, blue disc, green square"`, "the comparator's finding is collapsed")
	assert.NotContains(t, s.Text, "--warmup-request-count", "the AIPerf argv is collapsed")
}

// Every figure and plot of a row is over its set, the measured requests
// that matched, with n where that is not every measured request.
func checkOneSetPerRow(t *testing.T, s shown) {
	t.Helper()
	rows := map[string]shownRow{}
	for _, r := range s.Rows {
		rows[r.Profile] = r
	}
	assert.Contains(t, rows["ref-vlm-base"].HTTP, "n=46 of 50")
	assert.Contains(t, rows["ref-vlm-base"].Task, "n=46 of 50")
	assert.Contains(t, rows["ref-vlm-medium"].HTTP, "n=30 of 50")
	assert.NotContains(t, rows["ref-vlm-small"].HTTP+rows["ref-vlm-small-l0"].HTTP, "n=", "every measured request matched")
	sets := map[string]int{}
	for _, st := range s.Sets {
		sets[st.Profile] = st.N
		assert.Equal(t, 50, st.Full, st.Profile)
		if st.N != st.Full && st.N > 0 {
			assert.Contains(t, st.Text, fmt.Sprintf("(n=%d)", st.N), st.Profile)
		}
	}
	assert.Equal(t, 46, sets["p-ref-vlm-base"])
	for _, p := range s.Plots {
		n, ok := sets[p.Profile]
		require.True(t, ok, p.Profile)
		assert.Equal(t, [2]int{n, n}, [2]int{p.SetHTTP, p.SetTask}, "%s %s: HTTP and Task values of the set", p.Profile, p.Kind)
		assert.Contains(t, p.Legend, fmt.Sprintf("HTTP (n=%d)", n), "%s %s", p.Profile, p.Kind)
	}
}

// Two plots per result with joined requests, laid out at full size, with
// every point drawn: the set's in colour, the others grey.
func checkPlots(t *testing.T, s shown) {
	t.Helper()
	require.Len(t, s.Plots, 10)
	byKey := map[string]shownPlot{}
	for _, p := range s.Plots {
		assert.InDelta(t, 560, p.Width, 1, "%s %s", p.Profile, p.Kind)
		assert.InDelta(t, 250, p.Height, 1, "%s %s", p.Profile, p.Kind)
		assert.Equal(t, 2, p.Lines, "HTTP and Task lines: %s %s", p.Profile, p.Kind)
		byKey[p.Profile+" "+p.Kind] = p
	}
	small := byKey["p-ref-vlm-small plot-timeline"]
	assert.Equal(t, [4]int{50, 50, 10, 0}, [4]int{small.HTTP, small.Task, small.Out, small.Bad}, "50 measured in the set; 5 warmup requests grey in each series")
	base := byKey["p-ref-vlm-base plot-timeline"]
	assert.Equal(t, 46, base.HTTP)
	assert.Equal(t, 46, base.Task)
	assert.Equal(t, 9+8, base.Out, "5 warmup and 4 unmatched HTTP points, 5 and 3 Task points (the request without a server record has none)")
	assert.Equal(t, 4, base.Bad, "two mismatches, a missing server record and an echo of another id are marked")
	assert.Equal(t, 30, byKey["p-ref-vlm-medium plot-timeline"].HTTP, "the interrupted run's measured requests")
	// Each distribution: the p50 and p95 of both series with their 95 %
	// intervals as whiskers inside the plot, each p95's upper side (n < 72
	// cannot bound it) an arrow; the group charts' bars have theirs.
	for _, p := range s.Plots {
		if p.Kind == "plot-distribution" {
			assert.Equal(t, [2]int{4, 2}, [2]int{p.Whiskers, p.Unbounded}, p.Profile)
			assert.True(t, p.WhiskersInside, p.Profile)
			assert.Contains(t, p.Legend, "95 % CI", p.Profile)
		}
	}
	assert.Equal(t, 5*5, s.ChartWhiskers, "p50 and p95 of HTTP and Task, and images/s, of the 5 rows with requests")
	assert.Contains(t, s.Text, "95 % CI", "the cells' intervals")
}

// The first screen at 1400 px, as a person opens the page: the verdicts
// (green and red) are on it; the whole page shows the plots' colours.
// Kept as test artifacts.
func checkScreenshots(t *testing.T, bin, dir string) {
	t.Helper()
	shots := t.TempDir()
	if d := os.Getenv("TRTMC_SCREENSHOT_DIR"); d != "" {
		require.NoError(t, os.MkdirAll(d, 0o755))
		shots = d
	}
	first := filepath.Join(shots, "results-1400.png")
	runChromium(t, bin, "--window-size=1400,900", "--screenshot="+first, "file://"+filepath.Join(dir, "results.html"))
	t.Logf("screenshot at 1400 px: %s", first)
	fimg := decodePNG(t, first)
	assert.Equal(t, 1400, fimg.Bounds().Dx())
	assert.Greater(t, countColor(fimg, 0x1b, 0x7a, 0x3a), 50, "a qualified verdict on the first screen")
	assert.Greater(t, countColor(fimg, 0xc6, 0x28, 0x28), 50, "a failed verdict on the first screen")

	shot := filepath.Join(shots, "results.png")
	runChromium(t, bin, "--window-size=1400,7000", "--screenshot="+shot, "file://"+filepath.Join(dir, "results.html"))
	img := decodePNG(t, shot)
	assert.Greater(t, countColor(img, 0x1f, 0x6f, 0xb4), 300, "HTTP series drawn")
	assert.Greater(t, countColor(img, 0xd9, 0x62, 0x0b), 300, "Task series drawn")
	assert.Greater(t, countColor(img, 0xc6, 0x28, 0x28), 300, "failure marks and badges drawn")
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	return img
}

// countColor counts pixels within a small distance of an RGB colour.
func countColor(img image.Image, r, g, b uint8) int {
	n := 0
	bounds := img.Bounds()
	near := func(a uint32, want uint8) bool {
		d := int(a>>8) - int(want)
		return d > -12 && d < 12
	}
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, r) && near(pg, g) && near(pb, b) {
				n++
			}
		}
	}
	return n
}
