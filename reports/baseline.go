package reports

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/stats"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// `report --baseline` (issue 35): a row is compared with the same
// profile's row of an earlier run only when both hold their seals and
// agree on everything that makes two measurements comparable
// (ComparableFields); then the per-request times of both, read from their
// sealed joined.jsonl (every trial's), are compared by the baseline rule
// of reports/stats — the one rule `make bench` part 6 measures.

// DefaultRegressionThresholdPct is the rule's minimum effect, in percent:
// a change smaller than it is never called (stats.DefaultMinEffect;
// docs/reports.md says how it was set).
const DefaultRegressionThresholdPct = 100 * stats.DefaultMinEffect

// The row-level baseline decisions beyond the rule's own (stats.Decision:
// improved, regressed, no_change, inconclusive).
const (
	// BaselineNotComparable: the two rows differ in a field of
	// ComparableFields; nothing is computed.
	BaselineNotComparable = "not_comparable"
	// BaselineNotCompared: a side does not hold its seal, or its
	// per-request times could not be read from its sealed joined.jsonl.
	BaselineNotCompared = "not_compared"
)

// BaselineInfo says that rows were compared with an earlier run, and by
// which rule.
type BaselineInfo struct {
	// ThresholdPct is the rule's minimum effect, in percent: a change is
	// called only when the interval of the difference excludes zero and
	// the change is at least this large.
	ThresholdPct float64 `json:"threshold_pct"`
	// Method names the interval of the difference (reports/stats), at
	// Confidence.
	Method     string  `json:"method,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
	// RunSD is the rule's run-to-run component (stats.Rule.RunSD, sd of
	// the log of a run's median), added for each side that is a single
	// run; 0: the within-run interval alone (--run-noise 0).
	RunSD float64 `json:"run_sd"`
	// Compared is the number of rows with at least one series compared.
	Compared    int `json:"compared"`
	Regressions int `json:"regressions"`
	// Improvements and Inconclusive count the compared rows with a
	// series called improved (and none regressed), and those whose data
	// could not tell (an interval too wide for either call or "no change").
	Improvements int `json:"improvements"`
	Inconclusive int `json:"inconclusive"`
	// NoChange counts the compared rows where no change as large as the
	// minimum effect is plausible in any series.
	NoChange int `json:"no_change"`
	// NotComparable is the number of rows with a baseline row that differs
	// in what makes two measurements comparable (bundle, inventory entry,
	// workload, Task-time source, hardware scope, AIPerf version...): each
	// row names the differences.
	NotComparable int `json:"not_comparable"`
	// NotCompared is the number of rows with a baseline row that were not
	// compared because one of the two does not hold its seal, or its
	// per-request times could not be read (the notes name each); a figure
	// from changed evidence is never compared.
	NotCompared int `json:"not_compared"`
}

// BaselineDelta compares a row's HTTP and Task times with its baseline
// row's, or says why they are not comparable or not compared.
type BaselineDelta struct {
	// HTTPP50 and TaskP50 are the HTTP and the Task times' changes (the
	// names are those of the first rule, which compared p50s).
	HTTPP50 *Delta `json:"http_p50,omitempty"`
	TaskP50 *Delta `json:"task_p50,omitempty"`
	// Decision is the row's: regressed when a series regressed, else
	// improved when one improved, else inconclusive when one is, else
	// no_change; not_comparable or not_compared when nothing was compared.
	Decision string `json:"decision,omitempty"`
	// NotComparable names every field that makes the pair incomparable
	// (no delta is computed then).
	NotComparable []Difference `json:"not_comparable,omitempty"`
	// NotCompared says why a comparable pair was not compared.
	NotCompared string `json:"not_compared,omitempty"`
}

// Difference is one field that differs between a baseline row and the
// current row (a side that lacks it says so).
type Difference struct {
	Field           string `json:"field"`
	Baseline        string `json:"baseline"`
	Current         string `json:"current"`
	MissingBaseline bool   `json:"missing_baseline,omitempty"`
	MissingCurrent  bool   `json:"missing_current,omitempty"`
}

func (d Difference) String() string {
	return stats.Difference{Name: d.Field, Base: d.Baseline, Current: d.Current,
		MissingBase: d.MissingBaseline, MissingCurrent: d.MissingCurrent}.String()
}

// Delta is one series (the per-request times of the measured matched
// requests, every trial's) against its baseline's, by the baseline rule
// of reports/stats.
type Delta struct {
	// BaselineMS and CurrentMS are the medians (with trials: the median
	// across trials of each trial's median), rounded to 0.1 µs.
	BaselineMS float64 `json:"baseline_ms"`
	CurrentMS  float64 `json:"current_ms"`
	// ChangePct is the rule's estimate of the relative change, in percent
	// (rounded to 0.01); [LowerPct, UpperPct] its interval, the one the
	// decision uses: with the run-to-run component for a side that is a
	// single run (BaselineInfo.RunSD).
	ChangePct float64 `json:"change_pct"`
	LowerPct  float64 `json:"lower_pct"`
	UpperPct  float64 `json:"upper_pct"`
	// WithinLowerPct and WithinUpperPct are the interval from the requests
	// (and trials) alone, within the runs: what the two runs' own data
	// show, before the run-to-run component.
	WithinLowerPct float64 `json:"within_lower_pct"`
	WithinUpperPct float64 `json:"within_upper_pct"`
	// RunNoiseSides is the number of sides the run-to-run component was
	// added for (single runs; 0 with trials on both sides or --run-noise 0).
	RunNoiseSides int `json:"run_noise_sides"`
	// Decision is improved, regressed, no_change or inconclusive;
	// Regressed is Decision == regressed.
	Decision  string `json:"decision"`
	Regressed bool   `json:"regressed"`
	// Method is the interval's (stats.Comparison.Method): the
	// Hodges–Lehmann shift of the log times for one run against one, the
	// two-stage bootstrap of the medians when a side has trials.
	Method string `json:"method,omitempty"`
	// The requests and trials on each side.
	BaselineN      int `json:"baseline_n"`
	CurrentN       int `json:"current_n"`
	BaselineTrials int `json:"baseline_trials"`
	CurrentTrials  int `json:"current_trials"`
}

// BaselineRule is the rule `report --baseline` applies: stats.DefaultRule
// with a minimum effect of thresholdPct percent and a run-to-run component
// of runSD (sd of the log of a run's median; stats.DefaultRunSD unless
// --run-noise).
func BaselineRule(thresholdPct, runSD float64) stats.Rule {
	r := stats.DefaultRule()
	r.MinEffect = thresholdPct / 100
	r.RunSD = runSD
	return r
}

// ComparableFields are what two rows of one profile must share to be
// compared: the served bundle and its precision, the inventory entry it
// was run for (its digest: any change of the entry), the workload
// (warmup, measured, concurrency; the number of trials may differ — the
// rule compares a set of trials with another), where Task time comes from,
// the hardware scope and AIPerf's version. `make bench` part 5 checks its
// repeated runs by the same fields.
func ComparableFields(r *verdict.Result) []stats.Field {
	w := r.Workload
	return []stats.Field{
		{Name: "bundle", Value: r.Provenance.BundleSHA256},
		{Name: "precision", Value: r.Precision},
		{Name: "inventory entry", Value: r.Provenance.InventoryEntrySHA256},
		{Name: "workload", Value: fmt.Sprintf("%d+%d at concurrency %d", w.Warmup, w.Measured, w.Concurrency)},
		{Name: "Task-time source", Value: r.LatencyMS.TaskSource},
		{Name: "hardware scope", Value: r.Provenance.HardwareScope},
		{Name: "AIPerf version", Value: r.Provenance.AIPerfVersion},
	}
}

// ApplyBaseline compares every row with the same profile's row in base by
// rule (BaselineRule). Both rows come from ReadRow (Load). A pair is
// compared only when both hold their seals (else not compared, with a
// note: a changed figure must neither make nor hide a regression), agree
// on ComparableFields (else not comparable, each difference named), and
// both joined.jsonl (every trial's) are the files their runs sealed and
// hold measured matched times (else not compared, with a note). Rows that
// measured nothing (excluded, not run) are left alone.
func ApplyBaseline(g, base *GroupReport, rule stats.Rule) error {
	if err := rule.Validate(); err != nil {
		return err
	}
	info := &BaselineInfo{ThresholdPct: 100 * rule.MinEffect, Method: rule.Method, Confidence: rule.Confidence, RunSD: rule.RunSD}
	old := map[string]*Row{}
	for i := range base.Rows {
		if base.Rows[i].Result != nil {
			old[base.Rows[i].Profile] = &base.Rows[i]
		}
	}
	for i := range g.Rows {
		row := &g.Rows[i]
		row.Baseline = nil
		b, ok := old[row.Profile]
		if !ok || row.Result == nil || nothingMeasured(b.Result) || nothingMeasured(row.Result) {
			continue
		}
		d := comparePair(b, row, rule)
		row.Baseline = d
		info.count(d.Decision)
		if d.Decision == BaselineNotCompared {
			g.Notes = append(g.Notes, fmt.Sprintf("baseline: %s not compared: %s", row.Profile, d.NotCompared))
		}
	}
	g.Baseline = info
	return nil
}

// nothingMeasured: a row whose run measured nothing by design.
func nothingMeasured(r *verdict.Result) bool {
	return r.Verdict == verdict.VerdictExcluded || r.Verdict == verdict.VerdictNotRun
}

func (b *BaselineInfo) count(decision string) {
	switch decision {
	case BaselineNotComparable:
		b.NotComparable++
		return
	case BaselineNotCompared:
		b.NotCompared++
		return
	}
	b.Compared++
	switch stats.Decision(decision) {
	case stats.Regressed:
		b.Regressions++
	case stats.Improved:
		b.Improvements++
	case stats.Inconclusive:
		b.Inconclusive++
	default:
		b.NoChange++
	}
}

// comparePair is the baseline's verdict on one pair of rows.
func comparePair(base, cur *Row, rule stats.Rule) *BaselineDelta {
	notCompared := func(why string) *BaselineDelta {
		return &BaselineDelta{Decision: BaselineNotCompared, NotCompared: why}
	}
	if which := untrusted(base.Result, cur.Result); which != "" {
		return notCompared(which)
	}
	if diffs := stats.Differences(ComparableFields(base.Result), ComparableFields(cur.Result)); len(diffs) > 0 {
		d := &BaselineDelta{Decision: BaselineNotComparable}
		for _, x := range diffs {
			d.NotComparable = append(d.NotComparable, Difference{Field: x.Name, Baseline: x.Base, Current: x.Current,
				MissingBaseline: x.MissingBase, MissingCurrent: x.MissingCurrent})
		}
		return d
	}
	bt, why := sealedTimes(base)
	if why != "" {
		return notCompared("the baseline row's " + why)
	}
	ct, why := sealedTimes(cur)
	if why != "" {
		return notCompared("the current row's " + why)
	}
	d := &BaselineDelta{}
	var err error
	if d.HTTPP50, err = seriesDelta(rule, bt.http, ct.http); err != nil {
		return notCompared("HTTP times: " + err.Error())
	}
	if d.TaskP50, err = seriesDelta(rule, bt.task, ct.task); err != nil {
		return notCompared("Task times: " + err.Error())
	}
	if d.HTTPP50 == nil && d.TaskP50 == nil {
		return notCompared("no measured matched request has a time on both sides")
	}
	d.Decision = rowDecision(d.HTTPP50, d.TaskP50)
	return d
}

// rowDecision: regressed when a series regressed, else improved when one
// improved, else inconclusive when one is, else no_change.
func rowDecision(ds ...*Delta) string {
	for _, want := range []stats.Decision{stats.Regressed, stats.Improved, stats.Inconclusive} {
		for _, d := range ds {
			if d != nil && d.Decision == string(want) {
				return string(want)
			}
		}
	}
	return string(stats.NoChange)
}

// seriesDelta compares one series' trials by rule; nil when a side has no
// times (the series was not recorded).
func seriesDelta(rule stats.Rule, base, cur [][]float64) (*Delta, error) {
	if len(base) == 0 || len(cur) == 0 {
		return nil, nil
	}
	c, err := rule.Compare(base, cur)
	if err != nil {
		return nil, err
	}
	pct := func(v float64) float64 { return math.Round(v*10000) / 100 }
	ms := func(v float64) float64 { return math.Round(v*1e4) / 1e4 }
	return &Delta{BaselineMS: ms(c.BaseMedian), CurrentMS: ms(c.CurrentMedian),
		ChangePct: pct(c.RelChange), LowerPct: pct(c.RelLower), UpperPct: pct(c.RelUpper),
		WithinLowerPct: pct(c.WithinRelLower), WithinUpperPct: pct(c.WithinRelUpper), RunNoiseSides: c.RunNoiseSides,
		Decision: string(c.Decision), Regressed: c.Decision == stats.Regressed, Method: c.Method,
		BaselineN: c.BaseN, CurrentN: c.CurrentN, BaselineTrials: c.BaseTrials, CurrentTrials: c.CurrentTrials}, nil
}

// untrusted says which of a baseline pair does not hold its seal, with the
// first reason; "" when both do.
func untrusted(base, cur *verdict.Result) string {
	for _, c := range []struct {
		name string
		r    *verdict.Result
	}{{"the baseline row", base}, {"the current row", cur}} {
		if !c.r.EvidenceIntact() {
			why := ""
			for _, rs := range c.r.Reasons {
				if rs.Class == verdict.ClassBroken {
					why = " (" + string(rs.Code) + ": " + text.OneLine(rs.Message) + ")"
					break
				}
			}
			return c.name + "'s evidence does not hold its seal" + why
		}
	}
	return ""
}

// trialTimes are a row's per-request times, one slice a trial, of the
// measured requests whose answers matched (the set the row's figures are
// over); a trial without any is left out.
type trialTimes struct {
	http, task [][]float64
}

// sealedTimes reads a row's per-request times from its joined.jsonl — each
// trial's for a row of repeated trials — checking every file read against
// the digest its run sealed; why (completing "the ... row's") says why
// none were read.
func sealedTimes(row *Row) (t trialTimes, why string) {
	if row.dir == "" {
		return t, "evidence directory is unknown"
	}
	files := []string{JoinedFile}
	if ts := row.Result.Trials; len(ts) > 0 {
		files = files[:0]
		for _, tr := range ts {
			rel := tr.Joined
			if rel == "" {
				rel = verdict.TrialJoined(tr.Trial)
			}
			files = append(files, rel)
		}
	}
	for _, rel := range files {
		lines, why := readSealedJoined(row.dir, rel)
		if why != "" {
			return trialTimes{}, why
		}
		var h, k []float64
		for _, l := range lines {
			if l.Phase != verdict.PhaseMeasured || l.Status != verdict.JoinMatched {
				continue
			}
			if l.HTTPMS != nil {
				h = append(h, *l.HTTPMS)
			}
			if l.TaskMS != nil {
				k = append(k, *l.TaskMS)
			}
		}
		if len(h) > 0 {
			t.http = append(t.http, h)
		}
		if len(k) > 0 {
			t.task = append(t.task, k)
		}
	}
	return t, ""
}

// readSealedJoined reads one joined.jsonl of a sealed evidence directory
// as a stream, digesting exactly the bytes it decodes, and keeps its lines
// only when the digest is the one the manifest lists; why says why not.
func readSealedJoined(dir, rel string) (lines []verdict.JoinedLine, why string) {
	if !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, fmt.Sprintf("%s is not read: not a path inside the evidence directory", rel)
	}
	dg, sealed, why := sealedEntry(dir, rel)
	if why != "" {
		return nil, why
	}
	path := filepath.Join(dir, filepath.FromSlash(rel))
	f, _, err := fileio.OpenRegular(path)
	if err != nil {
		return nil, fmt.Sprintf("%s is not read: %s", rel, fileio.ReadProblem("it", rel, err))
	}
	defer f.Close()
	w := dg.Writer()
	in := io.TeeReader(fileio.NewContextReader(context.Background(), f), w)
	lines, decodeErr := verdict.DecodeJoined(in)
	if _, err := io.Copy(io.Discard, in); err != nil {
		return nil, fmt.Sprintf("%s is not read: %v", rel, err)
	}
	if w.Sum() != sealed {
		return nil, fmt.Sprintf("%s is not read: it is not the file the run sealed (its digest differs)", rel)
	}
	if decodeErr != nil {
		var ee *verdict.EvidenceError
		if errors.As(decodeErr, &ee) {
			ee.File = rel
		}
		return nil, fmt.Sprintf("%s is not read: %v", rel, decodeErr)
	}
	if lines == nil {
		return nil, fmt.Sprintf("%s holds no request", rel)
	}
	return lines, ""
}

// changeText is a compared series as text: its decision, the estimated
// change and its 95 % interval ("regressed +18.2% [+9.1%, +27.3%]").
func changeText(d *Delta) string {
	return fmt.Sprintf("%s %s [%s, %s]", decisionWord(d.Decision), pctText(d.ChangePct), pctText(d.LowerPct), pctText(d.UpperPct))
}

// decisionWord is a decision as a reader says it.
func decisionWord(d string) string { return strings.ReplaceAll(d, "_", " ") }

func pctText(v float64) string { return fmt.Sprintf("%+.1f%%", v) }

// baselineRowText is what the baseline says of one row, in one line: each
// series' change with its interval and medians, or why the pair was not
// comparable or not compared ("" without a baseline).
func baselineRowText(d *BaselineDelta) string {
	switch {
	case d == nil:
		return ""
	case d.Decision == BaselineNotComparable:
		parts := make([]string, len(d.NotComparable))
		for i, x := range d.NotComparable {
			parts[i] = x.String()
		}
		return "not comparable: " + strings.Join(parts, "; ")
	case d.Decision == BaselineNotCompared:
		return "not compared: " + d.NotCompared
	}
	var parts []string
	for _, s := range []struct {
		name string
		d    *Delta
	}{{"HTTP", d.HTTPP50}, {"Task", d.TaskP50}} {
		if s.d == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s%s (median %s → %s ms, n %s)", s.name, changeText(s.d), withinText(s.d),
			fmtMS(&s.d.BaselineMS), fmtMS(&s.d.CurrentMS), sidesN(s.d)))
	}
	return strings.Join(parts, "; ")
}

// withinText is the interval within the runs alone when the run-to-run
// component widened it: " [within the runs +2.1%, +9.8%]"; "" otherwise.
func withinText(d *Delta) string {
	if d.WithinLowerPct == d.LowerPct && d.WithinUpperPct == d.UpperPct {
		return ""
	}
	return fmt.Sprintf(" [within the runs %s, %s]", pctText(d.WithinLowerPct), pctText(d.WithinUpperPct))
}

// sidesN is the requests on each side, with the trials when either has
// more than one: "50 → 50", "150 in 3 trials → 50".
func sidesN(d *Delta) string {
	side := func(n, trials int) string {
		if trials > 1 {
			return fmt.Sprintf("%d in %d trials", n, trials)
		}
		return fmt.Sprint(n)
	}
	return side(d.BaselineN, d.BaselineTrials) + " → " + side(d.CurrentN, d.CurrentTrials)
}

// baselineSentence is the report's sentences on the comparison: the
// counts, and the rule.
func baselineSentence(b *BaselineInfo) string {
	s := fmt.Sprintf("Compared with a baseline run: %d %s compared — %d regressed, %d improved, %d no change, %d inconclusive",
		b.Compared, text.Plural(b.Compared, "row", "rows"), b.Regressions, b.Improvements, b.NoChange, b.Inconclusive)
	if b.NotComparable > 0 {
		s += fmt.Sprintf("; %d not comparable (see each row)", b.NotComparable)
	}
	if b.NotCompared > 0 {
		s += fmt.Sprintf("; %d not compared (evidence that does not hold its seal, or times that could not be read; see the notes)", b.NotCompared)
	}
	s += fmt.Sprintf(". A change is called only when its %.0f %% interval excludes zero and it is at least %s%%", 100*b.Confidence, fmtPct(b.ThresholdPct))
	if b.RunSD > 0 {
		return s + fmt.Sprintf(" (run-to-run sd %.3g included for each side that is a single run; the interval within the runs alone in brackets after it).", b.RunSD)
	}
	return s + " (the interval within the runs alone: run-to-run sd 0)."
}

// baselineRows are the rows with a baseline delta.
func baselineRows(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if r.Baseline != nil {
			out = append(out, r)
		}
	}
	return out
}

// taskCell is the Task p50/p95 cell, which says its source: "(server)"
// (the server's request records) or "(native)" (the native answers).
func taskCell(l verdict.Latency, d *Delta) string {
	c := p50Cell(l.Task, d)
	if l.TaskSource != "" && l.Task.P50 != nil {
		c += " (" + l.TaskSource + ")"
	}
	return c
}

// p50Cell is "p50 / p95", the p50 marked "(+15% ▲)" when the baseline rule
// called the series regressed, "(-12% ▼)" improved.
func p50Cell(p verdict.Percentiles, d *Delta) string {
	p50 := fmtMS(p.P50)
	if d != nil {
		switch stats.Decision(d.Decision) {
		case stats.Regressed:
			p50 += fmt.Sprintf(" (%+.0f%% ▲)", d.ChangePct)
		case stats.Improved:
			p50 += fmt.Sprintf(" (%+.0f%% ▼)", d.ChangePct)
		}
	}
	return p50 + " / " + fmtMS(p.P95)
}

// baselineCSVHeader are the CSV columns of a report with a baseline: the
// row's decision, each series' change with its interval and decision, why
// a pair was not comparable or not compared, and each series' interval
// within the runs alone. The first three are those of the first rule,
// kept; the last four came with the run-to-run component, after the rest.
func baselineCSVHeader() []string {
	return []string{"http_p50_change_pct", "task_p50_change_pct", "p50_regressed", "baseline_decision",
		"http_change_lower_pct", "http_change_upper_pct", "http_decision",
		"task_change_lower_pct", "task_change_upper_pct", "task_decision", "baseline_note",
		"http_within_lower_pct", "http_within_upper_pct", "task_within_lower_pct", "task_within_upper_pct"}
}

func baselineCSV(v map[string]string, d *BaselineDelta) {
	if d == nil {
		return
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
	regressed := false
	for _, s := range []struct {
		name string
		d    *Delta
	}{{"http", d.HTTPP50}, {"task", d.TaskP50}} {
		if s.d == nil {
			continue
		}
		v[s.name+"_p50_change_pct"] = f(s.d.ChangePct)
		v[s.name+"_change_lower_pct"], v[s.name+"_change_upper_pct"] = f(s.d.LowerPct), f(s.d.UpperPct)
		v[s.name+"_within_lower_pct"], v[s.name+"_within_upper_pct"] = f(s.d.WithinLowerPct), f(s.d.WithinUpperPct)
		v[s.name+"_decision"] = s.d.Decision
		regressed = regressed || s.d.Regressed
	}
	v["p50_regressed"] = strconv.FormatBool(regressed)
	v["baseline_decision"] = d.Decision
	if d.Decision == BaselineNotComparable || d.Decision == BaselineNotCompared {
		v["baseline_note"] = baselineRowText(d)
	}
}
