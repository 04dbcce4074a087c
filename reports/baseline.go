package reports

import (
	"fmt"
	"math"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// DefaultRegressionThresholdPct is the minimum effect of the baseline
// rule, in percent: a change of a median smaller than it is never called
// (reports/stats.DefaultMinEffect; docs/reports.md says how it was set).
const DefaultRegressionThresholdPct = 10.0

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
	// Compared is the number of rows with at least one series compared.
	Compared    int `json:"compared"`
	Regressions int `json:"regressions"`
	// Improvements and Inconclusive count the compared rows with a
	// series called improved (and none regressed), and those whose data
	// could not tell (an interval too wide for either call or "no change").
	Improvements int `json:"improvements"`
	Inconclusive int `json:"inconclusive"`
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
// row's, or says why they are not comparable.
type BaselineDelta struct {
	HTTPP50 *Delta `json:"http_p50,omitempty"`
	TaskP50 *Delta `json:"task_p50,omitempty"`
	// NotComparable names every field that makes the pair incomparable
	// (no delta is computed then).
	NotComparable []Difference `json:"not_comparable,omitempty"`
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

// Delta is one series (the per-request times of the measured matched
// requests, every trial's) against its baseline's, by the baseline rule
// of reports/stats.
type Delta struct {
	// BaselineMS and CurrentMS are the medians (with trials: the median
	// across trials of each trial's median).
	BaselineMS float64 `json:"baseline_ms"`
	CurrentMS  float64 `json:"current_ms"`
	// ChangePct is the rule's estimate of the relative change, in percent
	// (rounded to 0.01); [LowerPct, UpperPct] its interval.
	ChangePct float64 `json:"change_pct"`
	LowerPct  float64 `json:"lower_pct"`
	UpperPct  float64 `json:"upper_pct"`
	// Decision is improved, regressed, no_change or inconclusive;
	// Regressed is Decision == regressed.
	Decision  string `json:"decision"`
	Regressed bool   `json:"regressed"`
	// The requests and trials on each side.
	BaselineN      int `json:"baseline_n"`
	CurrentN       int `json:"current_n"`
	BaselineTrials int `json:"baseline_trials"`
	CurrentTrials  int `json:"current_trials"`
}

// ApplyBaseline compares every row's HTTP and Task p50 with the same
// profile's in base and marks increases beyond thresholdPct percent. Both
// rows come from ReadRow (Load); a pair where either row's evidence does
// not hold its seal is not compared, and a note says why: a changed
// figure must neither make nor hide a regression.
func ApplyBaseline(g, base *GroupReport, thresholdPct float64) {
	info := &BaselineInfo{ThresholdPct: thresholdPct}
	old := map[string]*verdict.Result{}
	for _, r := range base.Rows {
		if r.Result != nil {
			old[r.Profile] = r.Result
		}
	}
	for i := range g.Rows {
		row := &g.Rows[i]
		row.Baseline = nil
		b, ok := old[row.Profile]
		if !ok || row.Result == nil {
			continue
		}
		if which := untrusted(b, row.Result); which != "" {
			info.NotCompared++
			g.Notes = append(g.Notes, fmt.Sprintf("baseline: %s not compared: %s", row.Profile, which))
			continue
		}
		d := &BaselineDelta{
			HTTPP50: delta(b.LatencyMS.HTTP.P50, row.Result.LatencyMS.HTTP.P50, thresholdPct),
			TaskP50: delta(b.LatencyMS.Task.P50, row.Result.LatencyMS.Task.P50, thresholdPct),
		}
		if d.HTTPP50 == nil && d.TaskP50 == nil {
			continue
		}
		row.Baseline = d
		info.Compared++
		if d.regressed() {
			info.Regressions++
		}
	}
	g.Baseline = info
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

func delta(base, cur *float64, thresholdPct float64) *Delta {
	if base == nil || cur == nil || *base <= 0 {
		return nil
	}
	pct := (*cur - *base) / *base * 100
	d := &Delta{BaselineMS: *base, CurrentMS: *cur, ChangePct: math.Round(pct*100) / 100, Regressed: pct > thresholdPct, Decision: "inconclusive"}
	if d.Regressed {
		d.Decision = "regressed"
	}
	return d
}

func (d *BaselineDelta) regressed() bool {
	return d != nil && (d.HTTPP50 != nil && d.HTTPP50.Regressed || d.TaskP50 != nil && d.TaskP50.Regressed)
}

// p50Cell is "p50 / p95", with the p50 marked "(+15% ▲)" when it regressed.
// taskCell is the Task p50/p95 cell, which says its source: "(server)"
// (the server's request records) or "(native)" (the native answers).
func taskCell(l verdict.Latency, d *Delta) string {
	c := p50Cell(l.Task, d)
	if l.TaskSource != "" && l.Task.P50 != nil {
		c += " (" + l.TaskSource + ")"
	}
	return c
}

func p50Cell(p verdict.Percentiles, d *Delta) string {
	p50 := fmtMS(p.P50)
	if d != nil && d.Regressed {
		p50 += fmt.Sprintf(" (%+.0f%% ▲)", d.ChangePct)
	}
	return p50 + " / " + fmtMS(p.P95)
}
