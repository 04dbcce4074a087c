package reports_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	gast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	gtext "github.com/yuin/goldmark/text"

	. "github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

func summaryOf(t *testing.T, g *GroupReport, f *ReconcileFact) string {
	t.Helper()
	g.Summary = SummaryOptions{Reconcile: f, Pack: "detection-pack.tar.gz"}
	return string(render(t, g, FormatSummary))
}

var currentFact = &ReconcileFact{Ref: "main", Commit: "a832817e6ed9603b100bbff25dce3f04c65beaca", Head: "a832817e6ed9603b100bbff25dce3f04c65beaca", Normal: 2}

// unchangedDrift is a drift check that proves the group's specs unchanged.
var unchangedDrift = &DriftFact{Base: "main", BaseCommit: "a832817e6ed9603b100bbff25dce3f04c65beaca", Head: "HEAD",
	HeadCommit: "88ceb9f5217a9f9318e3393a404761e09891194c", Families: 2, ByCategory: map[string]int{}}

// shape is a summary's rendered structure as GitHub reads it (goldmark,
// GFM): one word per top-level block, in order — "p", "h3 Title",
// "list N" (a list of N items), "code", "html", "table N" (N body rows).
// Two lists that CommonMark runs together show as one list of their
// items summed, so a list's count proves it stands alone.
func shape(t *testing.T, md string) []string {
	t.Helper()
	src := []byte(md)
	doc := goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser().Parse(gtext.NewReader(src))
	var out []string
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *gast.Heading:
			out = append(out, fmt.Sprintf("h%d %s", n.Level, plainText(n, src)))
		case *gast.List:
			out = append(out, fmt.Sprintf("list %d", n.ChildCount()))
		case *gast.Paragraph:
			out = append(out, "p")
		case *gast.FencedCodeBlock:
			out = append(out, "code")
		case *gast.HTMLBlock:
			out = append(out, "html")
		default:
			out = append(out, n.Kind().String())
		}
	}
	return out
}

// plainText is the text of a node's inline children.
func plainText(n gast.Node, src []byte) string {
	var b strings.Builder
	_ = gast.Walk(n, func(c gast.Node, entering bool) (gast.WalkStatus, error) {
		if t, ok := c.(*gast.Text); ok && entering {
			b.Write(t.Segment.Value(src))
		}
		return gast.WalkContinue, nil
	})
	return b.String()
}

// headings are the h3 titles of a shape, in order.
func headings(s []string) []string {
	var out []string
	for _, b := range s {
		if h, ok := strings.CutPrefix(b, "h3 "); ok {
			out = append(out, h)
		}
	}
	return out
}

// after is the block that follows the heading h in a shape.
func after(t *testing.T, s []string, h string) string {
	t.Helper()
	i := slices.Index(s, "h3 "+h)
	require.GreaterOrEqual(t, i, 0, "no heading %q in %v", h, s)
	require.Less(t, i+1, len(s), "nothing after %q", h)
	return s[i+1]
}

// TestSummaryCompleteGroup: every normal profile in scope qualified, one
// excluded with its reason, a variant apart, the reconciliation current:
// the summary reads as complete and states the seeds' facts.
func TestSummaryCompleteGroup(t *testing.T) {
	g, err := published(Load([]string{RootComplete}, "detection"))
	require.NoError(t, err)
	s := summaryOf(t, g, currentFact)
	assert.True(t, strings.HasPrefix(s, "**detection: complete.** The 1 existing normal profile in scope passed owning-family correctness and real pip-installed AIPerf 0.13.0 qualification (50 measured + 5 warmup requests; all 55 complete native/HTTP matches; zero client errors). "+
		"Measured at TRTMC source commit `e82d4d98b889bbd7e787fb302db9128504081d27` (ref-detect-small). The inventory was reconciled with TRTMC's specs at `a832817e6ed9603b100bbff25dce3f04c65beaca`.\n"), s)
	assert.Empty(t, Incomplete(g))
	for _, want := range []string{
		"- **ref-detect-small** (trtmc-ref/ref-detect-small, FP32/TP1, bundle `9d3a8e005fdf`, source `e82d4d98b889`): qualified; correctness map_50_95 0.912 ≥ 0.5 ✓, map_50 0.981 ≥ 0.75 ✓; " +
			"HTTP p50/p95 16.61/17.42 ms, Task p50/p95 7.69/8.30 ms, 52.28 images/s; 463 boxes checked; image sizes 96×64 (28), 128×96 (27).\n",
		"- **Workload:** one image per request, single turn, non-streaming, concurrency 1; 5 warmup + 50 measured requests per model; AIPerf `image_retrieval`, POST `/v1/infer` on `trtmc-refserver`; hardware: one NVIDIA H200 (h200).\n",
		"- **Caveat:** short integration measurements at concurrency 1, not capacity or performance gates; build, load, startup, the correctness case, the native replay and warmup are outside every timing;",
		"- **Inventory:** reconciled against TRTMC `main` at `a832817e6ed9603b100bbff25dce3f04c65beaca`: 2 normal profiles in the specs, 0 needing action; `main` is still at that commit (current).",
		"- **Model specs, thresholds and contracts:** not checked (pass `--drift FILE` from `inventory drift -o json`).",
		"- **Excluded normal profiles, with their reasons:**\n  - **ref-detect-large**: checkpoint licence does not allow CI redistribution\n",
		"- **Variants and partial profiles, listed apart (never counted as models):**\n  - **ref-detect-small-tp2** (variant, of ref-detect-small): qualified\n",
		"`tar xzf detection-pack.tar.gz && trtmc-qual report --from detection-pack --group detection --rejudge`",
		"[ref-detect-small](detection/ref-detect-small)",
		"```sh\ntrtmc-qual run --group detection --profile ref-detect-small --out out/demo\n```",
	} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "missing")
	assert.NotContains(t, s, "unchanged", "no drift check given: the specs are never called unchanged")
	assert.NotContains(t, s, "Measurement source commits", "a complete group's first sentence names them; said once")
	assert.Equal(t, []string{"p", "h3 Models", "p", "list 1", "h3 Workload and method", "list 5", "h3 Not counted, and not supported", "list 2",
		"h3 Reproduce", "p", "code", "html", "code", "html", "h3 Evidence", "p", "p"}, shape(t, s))
}

// TestSummaryNeverReadsAsAPass: one failed row, an unreconciled or stale
// inventory, a failed variant, no normal profile at all: each opens with
// NOT complete and names what is missing, under its own heading.
func TestSummaryNeverReadsAsAPass(t *testing.T) {
	load := func() *GroupReport {
		g, err := published(Load([]string{RootComplete}, "detection"))
		require.NoError(t, err)
		return g
	}
	g := load()
	failRow(t, g, "ref-detect-small")
	s := summaryOf(t, g, currentFact)
	assert.True(t, strings.HasPrefix(s, "**detection: NOT complete — 0 of 1 normal profile in scope qualified.** Requests of the normal profiles in scope: 50 measured + 5 warmup requests; all 55 complete native/HTTP matches; zero client errors.\n\n"+
		"### What is missing\n\n- **ref-detect-small** (normal): failed — join/mismatched: measured: 1 of 50 requests"), s)
	assert.Equal(t, "list 1", after(t, shape(t, s), "What is missing"))

	for name, tc := range map[string]struct {
		fact *ReconcileFact
		want string
	}{
		"none":       {nil, "- the inventory's reconciliation with TRTMC's specs: none given"},
		"unchecked":  {&ReconcileFact{Ref: "main", Commit: "abc"}, "whether the reconciliation at `abc` is current: not checked"},
		"stale":      {&ReconcileFact{Ref: "main", Commit: "abc", Head: "def"}, "reconciled at `abc`, but `main` is now `def`"},
		"needs work": {&ReconcileFact{Ref: "main", Commit: "abc", Head: "abc", NeedAction: 2}, "2 profiles need action"},
	} {
		s := summaryOf(t, load(), tc.fact)
		assert.True(t, strings.HasPrefix(s, "**detection: NOT complete — 1 of 1 normal profile in scope qualified.**"), name)
		assert.Contains(t, s, tc.want, name)
		said := "`abc`"
		if tc.fact == nil {
			said = "reconciliation with TRTMC's specs"
		}
		assert.Equal(t, 1, strings.Count(s, said), "%s: the reconciliation is said once, in What is missing", name)
		assert.NotContains(t, s, "- **Inventory:**", "%s: a reconciliation that is not current is only in What is missing", name)
	}

	g = load()
	failRow(t, g, "ref-detect-small-tp2")
	s = summaryOf(t, g, currentFact)
	assert.Contains(t, s, "NOT complete", "a variant that ran and failed blocks (the coverage rule)")
	assert.Contains(t, s, "- **ref-detect-small-tp2** (variant): failed")
	assert.Equal(t, 1, strings.Count(s, "ref-detect-small-tp2** ("), "the failed variant is named once, in What is missing")

	v, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	s = summaryOf(t, v, currentFact)
	assert.True(t, strings.HasPrefix(s, "**vlm: NOT complete — 1 of 5 normal profiles in scope qualified.**"), s)
	assert.Contains(t, s, "- **ref-vlm-tiny** (normal): not-run — planned; no result in the evidence")
	assert.Contains(t, s, "  - **ref-vlm-xl**: needs two GPUs; the qualification host has one")
	assert.Contains(t, s, "130 measured + 15 warmup requests; 141 of 145 requests with complete native/HTTP matches")
	assert.Contains(t, s, "  - not recorded: ref-vlm-large")
	sh := shape(t, s)
	assert.Equal(t, "list 5", after(t, sh, "What is missing"), "5 rows, one list")
	assert.Equal(t, "p", after(t, sh, "Models"))
}

// failRow makes a row failed as a run would (a mismatch) and sums up again.
func failRow(t *testing.T, g *GroupReport, profile string) {
	t.Helper()
	for i := range g.Rows {
		if g.Rows[i].Profile == profile {
			r := *g.Rows[i].Result
			r.Problems = append(r.Problems, verdict.Problem{Stage: "join", Code: verdict.CodeMismatched, Message: "measured: 1 of 50 requests: the native and HTTP answers differ"})
			verdict.Judge(&r)
			g.Rows[i].Result, g.Rows[i].Status, g.Rows[i].Verdict = &r, StatusFailed, r.Verdict
		}
	}
	g.Summarize()
}

// The golden summaries (make golden rewrites them; review the diff), each
// also checked for its structure as GitHub renders it: the headings in
// order, every list standing alone with its own items.
func TestSummaryGoldens(t *testing.T) {
	for name, tc := range map[string]struct {
		group func(t *testing.T) *GroupReport
		drift *DriftFact
		// headings are the h3 titles in order; lists the item count of
		// the list under a heading.
		headings []string
		lists    map[string]string
		complete bool
	}{
		// A detection group, complete: boxes checked, mAP native /
		// reference with the gate and its maximum drop, a reporting-only
		// metric, the label space, the gaps every profile declares, the
		// specs proven unchanged.
		"summary-detection-complete": {detectionWithReference, unchangedDrift,
			[]string{"Models", "Workload and method", "Not counted, and not supported", "Reproduce", "Evidence"},
			map[string]string{"Models": "p", "Not counted, and not supported": "list 3"}, true},
		// The same group with its one model failed, the specs changed.
		"summary-detection-failed": {func(t *testing.T) *GroupReport {
			g := detectionWithReference(t)
			failRow(t, g, "ref-detect-small")
			return g
		}, &DriftFact{Base: "main", BaseCommit: "a832817e6ed9603b100bbff25dce3f04c65beaca", Head: "HEAD", HeadCommit: "88ceb9f5217a9f9318e3393a404761e09891194c",
			Families: 2, Changes: 3, ByCategory: map[string]int{"threshold": 2, "manifest": 1}},
			[]string{"What is missing", "Models", "Workload and method", "Not counted, and not supported", "Reproduce", "Evidence"},
			map[string]string{"What is missing": "list 1"}, false},
		// A vision-language group, complete: output tokens; one excluded
		// normal profile; a variant and a partial that never ran, apart.
		"summary-vlm-complete": {vlmComplete, unchangedDrift,
			[]string{"Models", "Workload and method", "Not counted, and not supported", "Reproduce", "Evidence"},
			map[string]string{"Not counted, and not supported": "list 2"}, true},
		// Excluded, failed, broken, interrupted and not-run profiles: a
		// group that is not complete, nor reconciled.
		"summary-vlm-not-complete": {func(t *testing.T) *GroupReport {
			g, err := published(Load([]string{RootA}, "vlm"))
			require.NoError(t, err)
			return g
		}, nil,
			[]string{"What is missing", "Models", "Workload and method", "Not counted, and not supported", "Reproduce", "Evidence"},
			map[string]string{"What is missing": "list 6", "Not counted, and not supported": "list 2"}, false},
		// A variant the host could not run (tp4 on 3 GPUs) is listed as
		// not run and does not block; the group is complete.
		"summary-gpu-variant-not-run": {func(t *testing.T) *GroupReport {
			g, err := published(Load([]string{filepath.Join("testdata", "evidence", "gpu")}, "detection"))
			require.NoError(t, err)
			return g
		}, nil,
			[]string{"Models", "Workload and method", "Not counted, and not supported", "Reproduce", "Evidence"},
			map[string]string{"Not counted, and not supported": "list 2"}, true},
	} {
		t.Run(name, func(t *testing.T) {
			g := tc.group(t)
			reconcile := currentFact
			if name == "summary-vlm-not-complete" {
				reconcile = nil
			}
			g.Summary = SummaryOptions{Reconcile: reconcile, Drift: tc.drift, Pack: g.Group + "-evidence.tar.gz"}
			out := render(t, g, FormatSummary)
			golden.Assert(t, name, out)
			assert.Equal(t, tc.complete, len(Incomplete(g)) == 0)
			sh := shape(t, string(out))
			assert.Equal(t, tc.headings, headings(sh))
			for h, want := range tc.lists {
				assert.Equal(t, want, after(t, sh, h), "the block under %q", h)
			}
			models := 0
			for _, r := range g.Rows {
				if r.Counted && r.Status != StatusExcluded {
					models++
				}
			}
			i := slices.Index(sh, "h3 Models")
			assert.Equal(t, fmt.Sprintf("list %d", models), sh[i+2], "one item per model: %v", sh)
			if !tc.complete {
				assert.Equal(t, fmt.Sprintf("list %d", len(Incomplete(g))), after(t, sh, "What is missing"))
			}
		})
	}
}

// detectionWithReference is the complete detection group as a TRTMC
// detector would leave it: the gates with the reference model's values, a
// reporting-only metric, the family's label space, and capability gaps
// declared for every profile.
func detectionWithReference(t *testing.T) *GroupReport {
	f := copyGroup(t, RootComplete, "detection")
	ps := f.snapshot()
	for _, p := range ps {
		p.Gaps = []string{"score threshold per request", "batch of images"}
	}
	f.writeSnapshot(ps)
	f.pinAll()
	f.editRow("ref-detect-small", func(r *verdict.Result) {
		// TRTMC's detection gates: the native mAP at most 0.02 below the
		// reference model's on the same images.
		ref := []float64{0.911882, 0.9806492}
		for i := range r.Correctness.Gates {
			r.Correctness.Gates[i].Reference = &ref[i]
			r.Correctness.Gates[i].Threshold = ref[i] - 0.02
		}
		r.Correctness.Metrics["box_iou_mean"] = 0.9731
		// How sure the timing figures are (issue 35's row fields).
		r.LatencyMS.HTTP.Intervals = intervals(r.LatencyMS.HTTP, 0.2, false)
		r.LatencyMS.Task.Intervals = intervals(r.LatencyMS.Task, 0.1, true)
		up := *r.ImagesPerSec * 1.03
		r.ImagesPerSecInterval = &verdict.RateInterval{N: 50, Images: 50, Point: *r.ImagesPerSec * 1.02, Lower: *r.ImagesPerSec * 1.01, Upper: &up,
			Confidence: 0.95, Method: "bootstrap-t"}
		r.Answers.Labels = []string{"red_square", "green_square", "blue_square", "yellow_square", "red_disc", "green_disc", "blue_disc", "yellow_disc"}
	})
	return f.load()
}

// intervals are a series' p50 and p95 with 95 % intervals of ±width;
// p95's upper side unbounded when asked.
func intervals(q verdict.Percentiles, width float64, unboundedP95 bool) []verdict.PercentileInterval {
	iv := func(pct int, v *float64, unbounded bool) verdict.PercentileInterval {
		lo, hi := *v-width, *v+width
		out := verdict.PercentileInterval{Percent: pct, N: q.Count, Point: *v, Lower: &lo, Upper: &hi, Confidence: 0.95, Coverage: 0.96}
		if unbounded {
			out.Upper, out.UpperUnbounded = nil, true
		}
		return out
	}
	return []verdict.PercentileInterval{iv(50, q.P50, false), iv(95, q.P95, unboundedP95)}
}

// A row of repeated trials shows each figure as the median across them,
// with its range.
func TestSummaryTrials(t *testing.T) {
	g, err := published(Load([]string{RootComplete}, "detection"))
	require.NoError(t, err)
	for i := range g.Rows {
		if g.Rows[i].Profile != "ref-detect-small" {
			continue
		}
		r := *g.Rows[i].Result
		r.Workload.Trials = 3
		r.LatencyMS.HTTP.Count = 150
		r.LatencyMS.HTTP.AcrossTrials = []verdict.TrialSpread{{Figure: "p50", Trials: 3, Median: 16.613, Min: 16.5, Max: 16.9}, {Figure: "p95", Trials: 3, Median: 17.423, Min: 17.2, Max: 18.01}}
		r.ImagesPerSecAcrossTrials = &verdict.TrialSpread{Figure: "images_per_sec", Trials: 3, Median: 52.279, Min: 51.9, Max: 52.6}
		g.Rows[i].Result = &r
	}
	s := summaryOf(t, g, currentFact)
	assert.Contains(t, s, "HTTP p50/p95 16.61/17.42 ms (median of 3 trials, ranges 16.50–16.90 / 17.20–18.01), Task p50/p95 7.69/8.30 ms, 52.28 images/s (median of 3 trials, range 51.90–52.60)")
	assert.Contains(t, s, "5 warmup + 50 measured requests per model, in each of 3 trials")
}

// vlmComplete is root B's vision-language group with only the profiles
// it ran: three normal profiles qualified, one excluded, a variant and a
// partial profile that never ran.
func vlmComplete(t *testing.T) *GroupReport {
	f := copyGroup(t, RootB, "vlm")
	var keep []*verdict.InventoryEntry
	for _, p := range f.snapshot() {
		if p.ID != "ref-vlm-large" && p.ID != "ref-vlm-medium" {
			keep = append(keep, p)
		}
	}
	f.writeSnapshot(keep)
	f.pinAll()
	return f.load()
}

// Each fact once (issue 36): an excluded partial profile is listed once,
// not as an exclusion and again as a partial; a variant that never ran is
// not missing on a run that failed, but listed apart as not run.
func TestSummaryEachFactOnce(t *testing.T) {
	g, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	for i := range g.Rows {
		if g.Rows[i].Profile == "ref-vlm-small-l0" {
			g.Rows[i].Status, g.Rows[i].Note, g.Rows[i].Result = StatusExcluded, "L0 smoke profile: no full-model coverage", nil
		}
	}
	g.Summarize()
	s := summaryOf(t, g, nil)
	assert.Equal(t, 1, strings.Count(s, "**ref-vlm-small-l0**"), s)
	assert.Contains(t, s, "  - **ref-vlm-small-l0** (partial): excluded: L0 smoke profile: no full-model coverage\n")

	gpu, err := published(Load([]string{filepath.Join("testdata", "evidence", "gpu")}, "detection"))
	require.NoError(t, err)
	failRow(t, gpu, "ref-detect-small")
	s = summaryOf(t, gpu, currentFact)
	missing := Incomplete(gpu)
	require.Len(t, missing, 1, "only the failed model is missing: %v", missing)
	assert.Contains(t, missing[0], "**ref-detect-small** (normal): failed")
	assert.Contains(t, s, "- **Not run: variants and partial profiles that did not run (not coverage; they never block complete):**\n  - **ref-detect-small-tp4** (variant, of ref-detect-small): not-run — ")
	assert.False(t, gpu.Coverage.OK, "the failed model blocks")
}

// Every word of the headline that claims something is derived: "unchanged"
// only with a drift check that found the group's families unchanged;
// "pip-installed" only when every row records AIPerf's distribution.
func TestSummaryHeadlineClaimsAreDerived(t *testing.T) {
	load := func() *GroupReport {
		g, err := published(Load([]string{RootComplete}, "detection"))
		require.NoError(t, err)
		return g
	}
	for name, tc := range map[string]struct {
		drift     *DriftFact
		unchanged bool
		line      string
	}{
		"no drift check":    {nil, false, "not checked"},
		"unchanged":         {unchangedDrift, true, "unchanged between `main` (`a832817e6ed9`) and `HEAD` (`88ceb9f5217a`): no manifest, threshold, reference or test file of the 2 families checked differs"},
		"no family checked": {&DriftFact{Base: "main", Head: "HEAD"}, false, "not established: the drift check between `main` (`—`) and `HEAD` (`—`) found no family folder of the group"},
		"changed": {&DriftFact{Base: "main", Head: "HEAD", Families: 1, Changes: 1, ByCategory: map[string]int{"threshold": 1}}, false,
			"**changed** between `main` (`—`) and `HEAD` (`—`): 1 file of the 1 family checked differs (threshold 1;"},
	} {
		g := load()
		g.Summary = SummaryOptions{Reconcile: currentFact, Drift: tc.drift}
		s := string(render(t, g, FormatSummary))
		first, _, _ := strings.Cut(s, "\n")
		assert.Equal(t, tc.unchanged, strings.Contains(first, "passed unchanged owning-family correctness"), name)
		assert.Contains(t, s, "- **Model specs, thresholds and contracts:** "+tc.line, name)
		assert.Empty(t, Incomplete(g), "%s: the drift check informs; complete is the coverage rule", name)
	}

	g := load()
	for i := range g.Rows {
		if g.Rows[i].Profile == "ref-detect-small" {
			r := *g.Rows[i].Result
			r.Provenance.AIPerfDist = nil
			g.Rows[i].Result = &r
		}
	}
	g.Summary = SummaryOptions{Reconcile: currentFact}
	first, _, _ := strings.Cut(string(render(t, g, FormatSummary)), "\n")
	assert.Contains(t, first, "and real AIPerf 0.13.0 qualification", "no installed distribution recorded: not called pip-installed")
}

// A model's figures say over how many requests they are when that is not
// every measured request; a row that broke before AIPerf shows none.
func TestSummaryModelLineStatesN(t *testing.T) {
	g, err := published(Load([]string{RootA}, "vlm"))
	require.NoError(t, err)
	s := summaryOf(t, g, nil)
	assert.Contains(t, s, "HTTP p50/p95 19.00/20.12 ms (n = 46 of 50), Task p50/p95 14.97/16.40 ms (n = 46 of 50), 42.72 images/s; 366 output tokens")
	assert.Contains(t, s, "- **ref-vlm-large** (trtmc-ref/ref-vlm-large, FP32/TP1, bundle `e9779ab5da5a`, source commit not recorded): error; correctness not run.\n")
	assert.Contains(t, s, "HTTP p50/p95 13.17/15.34 ms, Task p50/p95 9.49/11.48 ms, 63.39 images/s; 366 output tokens", "all 50: no n")
}

// "One image per request" only when the row's images are its requests:
// the dataset's image per request line (a real run's dataset_image_sizes),
// or one measured image per measured matched request; two images a line
// do not read as one.
func TestSummaryImagesPerRequest(t *testing.T) {
	for name, tc := range map[string]struct {
		dataset, measured []verdict.ImageSize
		want              string
	}{
		"a run's record": {[]verdict.ImageSize{{Width: 64, Height: 64, Count: 30}, {Width: 96, Height: 64, Count: 25}},
			[]verdict.ImageSize{{Width: 64, Height: 64, Count: 27}, {Width: 96, Height: 64, Count: 23}}, "one image per request"},
		"two images a line": {[]verdict.ImageSize{{Width: 64, Height: 64, Count: 110}}, nil,
			"images per request not established (110 dataset images for 55 request lines)"},
		"nothing recorded": {nil, nil, "images per request not recorded"},
	} {
		g, err := published(Load([]string{RootComplete}, "detection"))
		require.NoError(t, err)
		for i := range g.Rows {
			if g.Rows[i].Profile == "ref-detect-small" {
				r := *g.Rows[i].Result
				r.Provenance.DatasetImageSizes, r.ImageSizes = tc.dataset, tc.measured
				g.Rows[i].Result = &r
			}
		}
		s := summaryOf(t, g, currentFact)
		assert.Contains(t, s, "- **Workload:** "+tc.want+", single turn", name)
	}
}

// A publication's rows are re-derived: the summary says so once, not
// "(rejudged)" on every row; a verdict the re-derivation changed keeps
// what it was.
func TestSummaryRejudgedRows(t *testing.T) {
	g, err := published(Load([]string{RootComplete}, "detection"))
	require.NoError(t, err)
	for i := range g.Rows {
		if res := g.Rows[i].Result; res != nil {
			r := *res
			r.Rejudged = &verdict.Rejudge{OriginalVerdict: r.Verdict}
			if g.Rows[i].Profile == "ref-detect-small-tp2" {
				r.Rejudged.OriginalVerdict = verdict.VerdictFailed
			}
			g.Rows[i].Result = &r
		}
	}
	s := summaryOf(t, g, currentFact)
	assert.Contains(t, s, "Every verdict and figure above is re-derived from its row's raw artifacts, as `report --rejudge` does.")
	assert.Contains(t, s, "): qualified; correctness map_50_95")
	assert.Contains(t, s, "  - **ref-detect-small-tp2** (variant, of ref-detect-small): qualified (rejudged; was failed)\n")
	assert.Equal(t, 1, strings.Count(s, "rejudged;"), s)

	// One row read as stored: "every verdict" is no longer true, and the
	// summary does not say it.
	for i := range g.Rows {
		if g.Rows[i].Profile == "ref-detect-small-tp2" {
			r := *g.Rows[i].Result
			r.Rejudged = nil
			g.Rows[i].Result = &r
		}
	}
	s = summaryOf(t, g, currentFact)
	assert.NotContains(t, s, "re-derived from its row's raw artifacts", "one row is not re-derived")
}

// A capability gap is "every profile" only when every row declares it: a
// row that lists the same gap several times counts once.
func TestSummaryGapsCountEachProfileOnce(t *testing.T) {
	g, err := published(Load([]string{RootComplete}, "detection"))
	require.NoError(t, err)
	require.Greater(t, len(g.Rows), 1)
	for i := range g.Rows {
		g.Rows[i].Gaps = nil
	}
	g.Rows[0].Gaps = slices.Repeat([]string{"streaming"}, len(g.Rows))
	s := summaryOf(t, g, currentFact)
	assert.Contains(t, s, "  - streaming: "+g.Rows[0].Profile+"\n")
	assert.NotContains(t, s, "every profile")
}
