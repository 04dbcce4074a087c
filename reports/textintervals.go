package reports

import (
	"fmt"
	"strconv"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// How sure the figures are (issue 35) in the text formats: Markdown and
// the docs block keep their few columns and add a collapsed table of every
// percentile with its n and 95 % interval (the interval text is the HTML
// report's, intervalText); CSV has a column for each bound.

// intervalsTable is the table of every measured row's series: n, then p50,
// p90, p95 and p99 each with its 95 % interval — or, for a row of
// repeated trials, the median across trials with their range — and the
// stability check. Rows whose figures carry neither are left out.
func intervalsTable(rows []Row, esc func(string) string) Table {
	t := Table{Header: []string{"profile", "series", "n", "p50 ms (95 % CI)", "p90 ms (95 % CI)", "p95 ms (95 % CI)", "p99 ms (95 % CI)", "stability"}}
	for _, row := range rows {
		r := row.Result
		if r == nil || !r.Measured() {
			continue
		}
		for _, s := range []struct {
			name string
			p    verdict.Percentiles
		}{{"HTTP", r.LatencyMS.HTTP}, {"Task", r.LatencyMS.Task}} {
			if s.p.Intervals == nil && s.p.AcrossTrials == nil {
				continue
			}
			cells := []string{row.Profile, s.name, seriesN(s.p)}
			for _, pct := range verdict.IntervalPercents {
				cells = append(cells, percentileText(s.p, pct))
			}
			cells = append(cells, driftText(s.p.Drift))
			if esc != nil {
				for j := range cells {
					cells[j] = esc(cells[j])
				}
			}
			t.Rows = append(t.Rows, cells)
		}
	}
	return t
}

// seriesN is a series' n: its intervals' sample count, or the trials.
func seriesN(p verdict.Percentiles) string {
	if iv := p.Interval(50); iv != nil {
		return strconv.Itoa(iv.N)
	}
	if s := p.Spread("p50"); s != nil {
		return fmt.Sprintf("%d trials", s.Trials)
	}
	return Missing
}

// percentileText is one figure with its interval ("13.17 (12.90–13.41)",
// "15.34 (≥ 14.98)"), or across trials with their range ("13.17 (3
// trials: 12.90–13.41)").
func percentileText(p verdict.Percentiles, pct int) string {
	if iv := p.Interval(pct); iv != nil {
		return fmtMS(&iv.Point) + " (" + intervalText(iv) + ")"
	}
	if s := p.Spread(fmt.Sprintf("p%d", pct)); s != nil {
		return fmtMS(&s.Median) + fmt.Sprintf(" (%d trials: %s)", s.Trials, spreadText(s))
	}
	return fmtMS(p.Percentile(pct))
}

// driftText is the stability check of a series in a few words.
func driftText(d *verdict.DriftCheck) string {
	switch {
	case d == nil:
		return Missing
	case !d.Checked:
		return fmt.Sprintf("not checked (n %d)", d.N)
	case d.Change == nil || d.Lower == nil || d.Upper == nil:
		return Missing
	}
	word := "stable"
	if d.Unstable {
		word = "unstable"
	}
	return fmt.Sprintf("%s: last half %+.0f%% [%+.0f%%, %+.0f%%]", word, 100**d.Change, 100**d.Lower, 100**d.Upper)
}

// rateLines are each row's images/s with its interval, or across trials
// with their range, one line each.
func rateLines(rows []Row) []string {
	var out []string
	for _, row := range rows {
		r := row.Result
		if r == nil || !r.Measured() {
			continue
		}
		switch {
		case r.ImagesPerSecInterval != nil:
			iv := r.ImagesPerSecInterval
			out = append(out, fmt.Sprintf("%s: images/s %s (AIPerf); %s from the %d measured requests' cycles, 95 %% CI %s",
				row.Profile, fmtRate(r.ImagesPerSec), fmtRate(&iv.Point), iv.N, rateIntervalText(iv)))
		case r.ImagesPerSecAcrossTrials != nil:
			s := r.ImagesPerSecAcrossTrials
			out = append(out, fmt.Sprintf("%s: images/s %s, the median of %d trials (%s)", row.Profile, fmtRate(&s.Median), s.Trials, spreadText(s)))
		}
	}
	return out
}

// writeIntervalsDetails writes the collapsed Markdown block of the rows'
// intervals ("" when no row has any).
func writeIntervalsDetails(p *printer, rows []Row) {
	t := intervalsTable(rows, mdEscape)
	rates := rateLines(rows)
	if len(t.Rows) == 0 && len(rates) == 0 {
		return
	}
	p.f("\n<details><summary>How sure the timing figures are: each percentile's 95 %% interval and n</summary>\n\n")
	p.f("Distribution-free 95 %% intervals from order statistics over each row's set (≥ or ≤: n is too small to bound that side; unbounded: neither); with trials, the median across trials and their range. Stability: the last half of the measured requests against the first (a note, never a verdict).\n\n")
	if len(t.Rows) > 0 {
		p.table(t, "")
	}
	if len(rates) > 0 {
		if len(t.Rows) > 0 {
			p.f("\n")
		}
		for _, l := range rates {
			p.f("- %s\n", mdEscape(l))
		}
	}
	p.f("\n</details>\n")
}

// intervalCSVHeader are the CSV columns of the figures' uncertainty, after
// the rest: every percentile of each series with its bounds (empty where n
// cannot bound that side), each series' n and stability, images/s's
// bounds, and the trials.
func intervalCSVHeader() []string {
	h := []string{"trials", "http_n", "http_p90_ms", "http_p99_ms", "task_n", "task_p90_ms", "task_p99_ms"}
	for _, s := range []string{"http", "task"} {
		for _, pct := range verdict.IntervalPercents {
			h = append(h, fmt.Sprintf("%s_p%d_lower_ms", s, pct), fmt.Sprintf("%s_p%d_upper_ms", s, pct))
		}
	}
	return append(h, "http_unstable", "task_unstable", "images_per_sec_lower", "images_per_sec_upper")
}

func intervalCSV(v map[string]string, res *verdict.Result) {
	v["trials"] = strconv.Itoa(res.Workload.TrialCount())
	for _, s := range []struct {
		name string
		p    verdict.Percentiles
	}{{"http", res.LatencyMS.HTTP}, {"task", res.LatencyMS.Task}} {
		v[s.name+"_p90_ms"], v[s.name+"_p99_ms"] = fmtPlain(s.p.P90), fmtPlain(s.p.P99)
		if iv := s.p.Interval(50); iv != nil {
			v[s.name+"_n"] = strconv.Itoa(iv.N)
		}
		for _, pct := range verdict.IntervalPercents {
			if iv := s.p.Interval(pct); iv != nil {
				v[fmt.Sprintf("%s_p%d_lower_ms", s.name, pct)] = fmtPlain(iv.Lower)
				v[fmt.Sprintf("%s_p%d_upper_ms", s.name, pct)] = fmtPlain(iv.Upper)
			}
		}
		if d := s.p.Drift; d != nil && d.Checked {
			v[s.name+"_unstable"] = strconv.FormatBool(d.Unstable)
		}
	}
	if iv := res.ImagesPerSecInterval; iv != nil {
		v["images_per_sec_lower"], v["images_per_sec_upper"] = fmtPlain(&iv.Lower), fmtPlain(iv.Upper)
	}
}
