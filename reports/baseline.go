package reports

import (
	"fmt"
	"math"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// DefaultRegressionThresholdPct is the p50 increase, in percent, beyond
// which a row is marked as a regression against a baseline.
const DefaultRegressionThresholdPct = 10.0

// BaselineInfo says that rows were compared with an earlier run.
type BaselineInfo struct {
	ThresholdPct float64 `json:"threshold_pct"`
	// Compared is the number of rows with at least one p50 in both runs.
	Compared    int `json:"compared"`
	Regressions int `json:"regressions"`
	// NotCompared is the number of rows with a baseline row that were not
	// compared because one of the two does not hold its seal (the notes
	// name each); a figure from changed evidence is never compared.
	NotCompared int `json:"not_compared"`
}

// BaselineDelta compares a row's p50s with the baseline's.
type BaselineDelta struct {
	HTTPP50 *Delta `json:"http_p50,omitempty"`
	TaskP50 *Delta `json:"task_p50,omitempty"`
}

// Delta is one p50 against its baseline.
type Delta struct {
	BaselineMS float64 `json:"baseline_ms"`
	CurrentMS  float64 `json:"current_ms"`
	// ChangePct is (current - baseline) / baseline * 100, rounded to 0.01.
	ChangePct float64 `json:"change_pct"`
	Regressed bool    `json:"regressed"`
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
	return &Delta{BaselineMS: *base, CurrentMS: *cur, ChangePct: math.Round(pct*100) / 100, Regressed: pct > thresholdPct}
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
