package reports

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/markdown"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// The completion summary's per-model lines, its workload and method, and
// what is not counted: every figure read from the rows, every foreign
// string escaped (markdown.Text, markdown.Code).

// writeModels writes one line per normal profile in scope (the group):
// its identity, verdict, correctness, timing, output, images and labels.
func writeModels(p *printer, s *summaryFacts) {
	p.f("\n### Models\n\n")
	if len(s.models) == 0 {
		p.f("No normal profile in scope.\n")
		return
	}
	p.f("Per normal profile in scope: checkpoint, precision/parallelism, served bundle (sha256), TRTMC source commit; verdict; " +
		"correctness gates (native / reference where the case states it); HTTP and Task p50/p95 and images/s over the measured matched requests " +
		"(n when not all measured); what the answers held; image sizes and label space.\n\n")
	for i := range s.models {
		p.f("- %s\n", modelLine(&s.models[i]))
	}
}

// modelLine is one model's line.
func modelLine(row *Row) string {
	source := "source commit not recorded"
	if res := row.Result; res != nil && res.Provenance.SourceCommit != "" {
		source = "source " + markdown.Code(short(res.Provenance.SourceCommit))
	}
	bundle := "bundle not recorded"
	if row.BundleSHA256 != "" {
		bundle = "bundle " + markdown.Code(short(row.BundleSHA256))
	}
	head := fmt.Sprintf("**%s** (%s, %s, %s, %s)", mdEscape(row.Profile), mdEscape(text.OneLine(orMissing(row.Checkpoint))),
		mdEscape(precisionParallelism(row)), bundle, source)
	res := row.Result
	if res == nil {
		return head + ": " + mdEscape(text.OneLine(summaryVerdict(row))) + noteSuffix(row.Note) + "."
	}
	parts := []string{mdEscape(text.OneLine(summaryVerdict(row))), "correctness " + correctnessText(res.Correctness)}
	if timed(res) {
		parts = append(parts, timingText(res))
		for _, x := range []string{checkedText(res), imageSizesText(res.ImageSizes), labelSpaceText(res.Answers.Labels)} {
			if x != "" {
				parts = append(parts, x)
			}
		}
	}
	return head + ": " + strings.Join(parts, "; ") + "."
}

func noteSuffix(note string) string {
	if note == "" {
		return ""
	}
	return " — " + mdEscape(text.OneLine(note))
}

// precisionParallelism is "FP16/TP1" (as recorded, upper-cased).
func precisionParallelism(row *Row) string {
	return strings.ToUpper(orMissing(row.Precision)) + "/" + strings.ToUpper(orMissing(row.Parallelism))
}

// correctnessText is each gate as "name value op threshold ✓", with the
// reference ("native / reference") and, for a lower bound under the
// reference, the largest drop it allows; then the metrics no gate holds
// (reporting-only).
func correctnessText(c *verdict.Correctness) string {
	if c == nil || !c.Ran || c.Error != "" || len(c.Gates) == 0 {
		return correctnessCell(c)
	}
	parts := make([]string, len(c.Gates))
	for i, g := range c.Gates {
		mark := "✓"
		if !g.Passed {
			mark = "✗"
		}
		name := mdEscape(text.OneLine(g.Name))
		if g.Reference == nil {
			parts[i] = fmt.Sprintf("%s %s %s %s %s", name, metricText(g.Value), opText(g.Op), metricText(g.Threshold), mark)
			continue
		}
		ref := *g.Reference
		s := fmt.Sprintf("%s %s / %s (native / reference), gate %s %s", name, metricText(g.Value), metricText(ref), opText(g.Op), metricText(g.Threshold))
		if (g.Op == ">=" || g.Op == ">") && ref >= g.Threshold {
			s += ", maximum drop " + metricText(ref-g.Threshold)
		}
		parts[i] = s + " " + mark
	}
	out := strings.Join(parts, ", ")
	if only := reportingOnly(c); len(only) > 0 {
		out += "; reporting-only (no gate): " + strings.Join(only, ", ")
	}
	return out
}

// maxReportingOnly bounds the reporting-only metrics a model line names.
const maxReportingOnly = 6

// reportingOnly are the correctness metrics that no gate holds (nor are a
// gate's reference side, ref_<name>), as "name value", sorted.
func reportingOnly(c *verdict.Correctness) []string {
	gated := map[string]bool{}
	for _, g := range c.Gates {
		gated[g.Name] = true
		dir, base := path.Split(g.Name)
		gated[dir+"ref_"+base] = true
	}
	var names []string
	for n := range c.Metrics {
		if !gated[n] {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var out []string
	for i, n := range names {
		if i == maxReportingOnly {
			out = append(out, fmt.Sprintf("%d more", len(names)-i))
			break
		}
		out = append(out, mdEscape(text.OneLine(n))+" "+metricText(c.Metrics[n]))
	}
	return out
}

// metricText is a correctness figure with up to six significant digits,
// as the case reported it (0.468307, 463, 0.02).
func metricText(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// opText is a gate's operator as a sign, escaped (an unknown operator is
// the row's own text).
func opText(op string) string { return mdEscape(text.OneLine(verdict.OpSymbol(op))) }

// timed says the row measured something to show: a latency or a
// throughput (a row that broke before AIPerf ran has neither).
func timed(res *verdict.Result) bool {
	return res.Measured() && (res.LatencyMS.HTTP.Count > 0 || res.ImagesPerSec != nil)
}

// timingText is "HTTP p50/p95 15.83/20.13 ms, Task p50/p95 7.52/9.29 ms,
// 60.17 images/s", each latency with its n when that is not every
// measured request, and how sure each figure is where the row says
// (seriesIntervalText, rateText).
func timingText(res *verdict.Result) string {
	want := res.Workload.Measured
	if want == 0 {
		want = verdict.QualificationMeasured
	}
	trials := res.Workload.TrialCount()
	pct := func(name string, q verdict.Percentiles) string {
		s := fmt.Sprintf("%s p50/p95 %s/%s ms", name, fmtMS(q.P50), fmtMS(q.P95))
		var notes []string
		if q.Count != want && q.Count != want*trials {
			notes = append(notes, fmt.Sprintf("n = %d of %d", q.Count, want*trials))
		}
		if iv := seriesIntervalText(q); iv != "" {
			notes = append(notes, iv)
		}
		if len(notes) > 0 {
			s += " (" + strings.Join(notes, "; ") + ")"
		}
		return s
	}
	l := res.LatencyMS
	return fmt.Sprintf("%s, %s, %s", pct("HTTP", l.HTTP), pct("Task", l.Task), rateText(res))
}

// seriesIntervalText is how sure a series' p50 and p95 are: "95 %
// intervals 15.60–16.02 / ≥ 19.10" (distribution-free, from order
// statistics, each side written by intervalText, as the HTML report writes
// it), or, in a row of repeated trials, "median of 3 trials, ranges
// 15.61–16.10 / 19.80–20.50"; "" when the row has neither (an earlier
// version, a series with gaps).
func seriesIntervalText(q verdict.Percentiles) string {
	if p50, p95 := q.Spread("p50"), q.Spread("p95"); p50 != nil && p95 != nil {
		return fmt.Sprintf("median of %d trials, ranges %s–%s / %s–%s", p50.Trials,
			fmtMS(&p50.Min), fmtMS(&p50.Max), fmtMS(&p95.Min), fmtMS(&p95.Max))
	}
	p50, p95 := q.Interval(50), q.Interval(95)
	if p50 == nil || p95 == nil {
		return ""
	}
	return fmt.Sprintf("%s %% intervals %s / %s", strconv.FormatFloat(p50.Confidence*100, 'g', 3, 64),
		intervalText(p50), intervalText(p95))
}

// rateText is "60.17 images/s", with its spread over repeated trials or
// the interval of the estimate from the request cycles where the row has
// one ("61.02 from the request cycles, 95 % interval 59.80–62.10", or "≥ 59.80" where
// the upper side is unbounded, as the HTML report writes it).
func rateText(res *verdict.Result) string {
	s := fmtRate(res.ImagesPerSec) + " images/s"
	if t := res.ImagesPerSecAcrossTrials; t != nil {
		return s + fmt.Sprintf(" (median of %d trials, range %s–%s)", t.Trials, fmtRate(&t.Min), fmtRate(&t.Max))
	}
	if r := res.ImagesPerSecInterval; r != nil {
		return s + fmt.Sprintf(" (%s from the request cycles, %s %% interval %s)", fmtRate(&r.Point),
			strconv.FormatFloat(r.Confidence*100, 'g', 3, 64), rateIntervalText(r))
	}
	return s
}

// checkedText is what the answers held: "463 boxes checked" or "366
// output tokens" (over the measured requests).
func checkedText(res *verdict.Result) string {
	switch {
	case res.Boxes != nil:
		return fmt.Sprintf("%d %s checked", *res.Boxes, text.Plural(*res.Boxes, "box", "boxes"))
	case res.OutputTokens != nil:
		return fmt.Sprintf("%d output %s", *res.OutputTokens, text.Plural(*res.OutputTokens, "token", "tokens"))
	}
	return ""
}

// imageSizesText is "image sizes 96×64 (28), 128×96 (27)".
func imageSizesText(sizes []verdict.ImageSize) string {
	if len(sizes) == 0 {
		return ""
	}
	parts := make([]string, len(sizes))
	for i, s := range sizes {
		parts[i] = fmt.Sprintf("%d×%d (%d)", s.Width, s.Height, s.Count)
	}
	return "image sizes " + strings.Join(parts, ", ")
}

// labelSpaceText is "label space: 80 labels (0, 1 … 79)": the family's
// labels as it numbers or names them ("" for a family without one).
func labelSpaceText(labels []string) string {
	if len(labels) == 0 {
		return ""
	}
	esc := func(ls []string) string {
		out := make([]string, len(ls))
		for i, l := range ls {
			out[i] = mdEscape(text.OneLine(l))
		}
		return strings.Join(out, ", ")
	}
	shown := esc(labels)
	if len(labels) > 4 {
		shown = esc(labels[:2]) + " … " + esc(labels[len(labels)-1:])
	}
	return fmt.Sprintf("label space: %d %s (%s)", len(labels), text.Plural(len(labels), "label", "labels"), shown)
}
