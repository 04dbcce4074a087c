//go:build integration

package reports_test

import (
	"context"
	"encoding/json"
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

// probePage loads the report in an iframe and writes what the browser shows
// (innerText, which leaves out collapsed <details>; the laid-out size of
// every plot; computed colours) into the DOM for --dump-dom to print.
const probePage = `<!DOCTYPE html><html><body>
<iframe id="f" src="results.html" style="width:1400px;height:900px"></iframe>
<pre id="out"></pre>
<script>
document.getElementById('f').addEventListener('load', function () {
  var d = this.contentDocument;
  var res = {text: d.body.innerText, plots: [], sections: [], rows: [], columns: [], links: [],
    scrollWidth: d.documentElement.scrollWidth, clientWidth: d.documentElement.clientWidth};
  d.querySelectorAll('#results thead th').forEach(function (th) {
    var r = th.getBoundingClientRect();
    res.columns.push({name: th.innerText, left: r.left, right: r.right});
  });
  d.querySelectorAll('#results a.ev').forEach(function (a) { res.links.push(a.getAttribute('href')); });
  res.charts = [];
  d.querySelectorAll('.group-charts svg.plot').forEach(function (s) {
    var r = s.getBoundingClientRect();
    res.charts.push({kind: s.classList[1], right: r.right, bars: s.querySelectorAll('rect.bar').length});
  });
  d.querySelectorAll('section svg.plot').forEach(function (s) {
    var r = s.getBoundingClientRect();
    res.plots.push({kind: s.classList[1], width: r.width, height: r.height,
      profile: s.closest('section').id,
      http: s.querySelectorAll('circle.pt.http').length,
      task: s.querySelectorAll('circle.pt.task').length,
      bad: s.querySelectorAll('.mark-bad').length,
      lines: s.querySelectorAll('polyline, path.ecdf').length});
  });
  d.querySelectorAll('section.checkpoint').forEach(function (s) {
    res.sections.push(s.id + '=' + s.dataset.status);
  });
  d.querySelectorAll('#results tbody tr').forEach(function (tr) {
    var v = tr.querySelector('td.verdict');
    res.rows.push({profile: tr.dataset.profile, verdict: v.innerText, color: getComputedStyle(v).color});
  });
  document.getElementById('out').textContent = JSON.stringify(res);
});
</script></body></html>`

type shownPlot struct {
	Kind    string  `json:"kind"`
	Width   float64 `json:"width"`
	Height  float64 `json:"height"`
	Profile string  `json:"profile"`
	HTTP    int     `json:"http"`
	Task    int     `json:"task"`
	Bad     int     `json:"bad"`
	Lines   int     `json:"lines"`
}

type shown struct {
	Text     string      `json:"text"`
	Plots    []shownPlot `json:"plots"`
	Sections []string    `json:"sections"`
	Rows     []struct {
		Profile string `json:"profile"`
		Verdict string `json:"verdict"`
		Color   string `json:"color"`
	} `json:"rows"`
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
	ScrollWidth float64 `json:"scrollWidth"`
	ClientWidth float64 `json:"clientWidth"`
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

func TestBrowserShowsHTMLReport(t *testing.T) {
	bin := chromium(t)
	g, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, WriteGroupFiles(dir, g))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "probe.html"), []byte(probePage), 0o644))

	dom := string(runChromium(t, bin, "--virtual-time-budget=10000", "--dump-dom", "file://"+filepath.Join(dir, "probe.html")))
	start := strings.Index(dom, `<pre id="out">`)
	require.GreaterOrEqual(t, start, 0, "probe output missing from the dumped DOM")
	body := dom[start+len(`<pre id="out">`):]
	end := strings.Index(body, "</pre>")
	require.Greater(t, end, 0, "the probe did not run: %s", tail(dom, 500))
	var s shown
	require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(body[:end])), &s))

	// The summary and the failure-first order of the sections.
	assert.Contains(t, s.Text, "1 of 5 normal profiles qualified (1 failed, 1 error, 1 interrupted, 1 not-run)")
	assert.Equal(t, []string{
		"p-ref-vlm-large=error", "p-ref-vlm-medium=interrupted", "p-ref-vlm-base=failed",
		"p-ref-vlm-small-l0=failed", "p-ref-vlm-tiny=not-run", "p-ref-vlm-xl=excluded",
		"p-ref-vlm-small=aiperf-qualified", "p-ref-vlm-small-fp16=aiperf-qualified",
	}, s.Sections)

	// Verdict cells, in colour.
	require.Len(t, s.Rows, 8)
	verdicts := map[string]string{}
	for _, r := range s.Rows {
		verdicts[r.Profile] = r.Verdict
		switch {
		case strings.HasPrefix(r.Verdict, "qualified"):
			assert.Equal(t, "rgb(27, 122, 58)", r.Color, r.Profile)
		case strings.HasPrefix(r.Verdict, "failed"), r.Verdict == "error", r.Verdict == "interrupted":
			assert.Equal(t, "rgb(198, 40, 40)", r.Color, r.Profile)
		}
	}
	assert.Equal(t, map[string]string{
		"ref-vlm-large": "error", "ref-vlm-medium": "interrupted", "ref-vlm-base": "failed",
		"ref-vlm-small-l0": "failed", "ref-vlm-tiny": "not-run",
		"ref-vlm-xl":    "excluded: needs two GPUs; the qualification host has one",
		"ref-vlm-small": "qualified", "ref-vlm-small-fp16": "qualified",
	}, verdicts)

	// At 1400 px the page does not scroll sideways, and the verdict and
	// latency columns are on screen.
	t.Logf("at 1400 px: document.scrollWidth %v, columns %+v", s.ScrollWidth, s.Columns)
	assert.LessOrEqual(t, s.ScrollWidth, 1400.0, "document.scrollWidth at 1400 px")
	cols := map[string]float64{}
	for _, c := range s.Columns {
		cols[c.Name] = c.Right
	}
	for _, name := range []string{"profile", "verdict", "HTTP p50/p95 ms", "Task p50/p95 ms", "images/s", "GPU / hardware"} {
		right, ok := cols[name]
		if assert.True(t, ok, "column %q", name) {
			assert.LessOrEqual(t, right, 1400.0, "column %q ends at %v px", name, right)
		}
	}
	// The evidence links resolve from where the page is.
	require.NotEmpty(t, s.Links)
	for _, l := range s.Links {
		assert.FileExists(t, filepath.Join(dir, filepath.FromSlash(l)))
	}
	// The group's charts: latency and images/s, inside the page.
	require.Len(t, s.Charts, 2)
	for _, c := range s.Charts {
		assert.Positive(t, c.Bars, c.Kind)
		assert.LessOrEqual(t, c.Right, 1400.0, c.Kind)
	}

	// Reasons, diffs, the reproducible command are shown; the AIPerf argv
	// waits in a collapsed <details>.
	for _, want := range []string{
		"server exited with status 1 during startup: load bundle: precision fp32 is not built for this device",
		"measured: 2 of 50 requests: the native and HTTP answers differ",
		"the family's correctness case failed: answer_exact_match 0.625 ≥ 0.900 does not hold",
		`-"3 shapes: red square, blue disc, green square"`,
		`+"3 shapes: red square, blue disc"`,
		"no record with this request id in server-records.jsonl",
		"No per-request evidence",
		"trtmc-qual run --group vlm --profile ref-vlm-small --out out/demo",
		"AIPerf argv as recorded",
	} {
		assert.Contains(t, s.Text, want)
	}
	assert.NotContains(t, s.Text, "--warmup-request-count", "the AIPerf argv is collapsed")

	// Two plots per result with joined requests, laid out at full size,
	// with every point drawn.
	require.Len(t, s.Plots, 10)
	byKey := map[string]shownPlot{}
	for _, p := range s.Plots {
		assert.InDelta(t, 560, p.Width, 1, "%s %s", p.Profile, p.Kind)
		assert.InDelta(t, 250, p.Height, 1, "%s %s", p.Profile, p.Kind)
		assert.Equal(t, 2, p.Lines, "HTTP and Task lines: %s %s", p.Profile, p.Kind)
		byKey[p.Profile+" "+p.Kind] = p
	}
	small := byKey["p-ref-vlm-small plot-timeline"]
	assert.Equal(t, 55, small.HTTP)
	assert.Equal(t, 55, small.Task)
	assert.Equal(t, 0, small.Bad)
	base := byKey["p-ref-vlm-base plot-timeline"]
	assert.Equal(t, 55, base.HTTP)
	assert.Equal(t, 54, base.Task, "the request without a server record has no Task time")
	assert.Equal(t, 4, base.Bad, "two mismatches, a missing server record and an echo of another id are marked")
	assert.Equal(t, 35, byKey["p-ref-vlm-medium plot-timeline"].HTTP, "the interrupted run's requests")

	// The first screen at 1400 px, as a person opens the page: the
	// verdicts (green and red) are on it. Kept as a test artifact.
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

	// The whole page: the plots' colours are on screen.
	shot := filepath.Join(shots, "results.png")
	runChromium(t, bin, "--window-size=1400,5200", "--screenshot="+shot, "file://"+filepath.Join(dir, "results.html"))
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
