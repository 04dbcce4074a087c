package noise

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/stat"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/stats"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Run is one measured run of a profile: its row (read as report reads it,
// seal checked) and its measured matched requests in the order they
// started — the set the row's latency figures are over.
type Run struct {
	Dir     string
	Row     *verdict.Result
	StartNS []int64
	HTTP    []float64
	Task    []float64
}

// ReadRun reads the run in a profile's evidence directory
// (OUT/<group>/<profile>) as report reads it: the row checked against its
// seal, which must hold, and its joined.jsonl.
func ReadRun(dir string) (Run, error) {
	profile, group := filepath.Base(dir), filepath.Base(filepath.Dir(dir))
	row, err := reports.ReadRow(dir, group, profile)
	if err != nil {
		return Run{}, err
	}
	if row == nil {
		return Run{}, fmt.Errorf("%s: no %s", dir, reports.ResultFile)
	}
	if !row.EvidenceIntact() {
		return Run{}, fmt.Errorf("%s: the evidence does not hold its seal", dir)
	}
	r := Run{Dir: dir, Row: row}
	lines, err := verdict.ReadJoined(filepath.Join(dir, reports.JoinedFile))
	if err != nil {
		return Run{}, err
	}
	if lines == nil {
		return Run{}, fmt.Errorf("%s: no %s", dir, reports.JoinedFile)
	}
	lines = slices.DeleteFunc(lines, func(l verdict.JoinedLine) bool {
		return l.Phase != verdict.PhaseMeasured || l.Status != verdict.JoinMatched || l.HTTPMS == nil || l.TaskMS == nil
	})
	slices.SortStableFunc(lines, func(a, b verdict.JoinedLine) int { return cmp.Compare(a.StartNS, b.StartNS) })
	for _, l := range lines {
		r.StartNS = append(r.StartNS, l.StartNS)
		r.HTTP = append(r.HTTP, *l.HTTPMS)
		r.Task = append(r.Task, *l.TaskMS)
	}
	if len(r.HTTP) < 2 {
		return Run{}, fmt.Errorf("%s: %d measured matched requests", dir, len(r.HTTP))
	}
	return r, nil
}

// ReadPublished reads the row of a published evidence directory as it was
// recorded: the packs kept in docs/evidence keep result.json and
// manifest.json only, so their seal cannot hold here; their figures are
// the ones the docs publish.
func ReadPublished(ctx context.Context, dir string) (*verdict.Result, error) {
	path := filepath.Join(dir, reports.ResultFile)
	data, err := fileio.ReadFile(ctx, path, 16<<20)
	if err != nil {
		return nil, err
	}
	return verdict.DecodeResult(path, data, filepath.Base(filepath.Dir(dir)), filepath.Base(dir))
}

// Fields are what two runs must share to be compared: the profile, and
// what `report --baseline` requires of a pair (reports.ComparableFields:
// the one definition).
func (r Run) Fields() []stats.Field {
	return append([]stats.Field{{Name: "profile", Value: r.Row.Profile}}, reports.ComparableFields(r.Row)...)
}

// Metric is one figure of a row.
type Metric struct {
	Name  string
	Value func(*verdict.Result) *float64
}

// Metrics are the row figures whose run-to-run spread make bench reports.
var Metrics = []Metric{
	{"http_p50", func(r *verdict.Result) *float64 { return r.LatencyMS.HTTP.P50 }},
	{"http_p95", func(r *verdict.Result) *float64 { return r.LatencyMS.HTTP.P95 }},
	{"task_p50", func(r *verdict.Result) *float64 { return r.LatencyMS.Task.P50 }},
	{"task_p95", func(r *verdict.Result) *float64 { return r.LatencyMS.Task.P95 }},
	{"images_per_sec", func(r *verdict.Result) *float64 { return r.ImagesPerSec }},
}

// Spread is one metric over repeated runs: the trials summary of the
// rows' figures, and the standard deviation of their logarithms (the
// run-to-run scale noise a Scenario's RunSD models).
type Spread struct {
	Metric  string
	Summary stats.TrialSummary
	LogSD   float64
}

// Spreads summarises each metric over the runs (every run must have it).
func Spreads(runs []Run) ([]Spread, error) {
	var out []Spread
	for _, m := range Metrics {
		vals := make([]float64, 0, len(runs))
		for _, r := range runs {
			v := m.Value(r.Row)
			if v == nil {
				return nil, fmt.Errorf("%s: no %s", r.Dir, m.Name)
			}
			vals = append(vals, *v)
		}
		s, err := stats.SummariseTrials(vals)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		out = append(out, Spread{Metric: m.Name, Summary: s, LogSD: logSD(vals)})
	}
	return out, nil
}

// logSD is the sample standard deviation of the logarithms (0 for fewer
// than two values).
func logSD(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	l := make([]float64, len(v))
	for i, x := range v {
		l[i] = math.Log(x)
	}
	return stat.StdDev(l, nil)
}

// PointOf is a stats.PointFunc that returns a row's recorded figures (p50
// and p95 only): the interval is then beside the very figure the row shows.
func PointOf(p verdict.Percentiles) stats.PointFunc {
	return func(_ []float64, qs ...int) []float64 {
		out := make([]float64, len(qs))
		for i, q := range qs {
			switch {
			case q == 50 && p.P50 != nil:
				out[i] = *p.P50
			case q == 95 && p.P95 != nil:
				out[i] = *p.P95
			default:
				out[i] = math.NaN()
			}
		}
		return out
	}
}

// Interval formats a quantile estimate compactly: "1.24 [1.10, 1.45]"; a
// side without a bound says how many requests would bound it:
// "4.37 [2.89, unbounded: n ≥ 72]".
func Interval(q stats.QuantileEstimate) string {
	side := func(b stats.Bound) string {
		if b.Unbounded {
			return fmt.Sprintf("unbounded: n ≥ %d", stats.MinSampleForBounds(float64(q.Percent)/100, q.Confidence))
		}
		return strconv.FormatFloat(*b.Value, 'f', 2, 64)
	}
	return fmt.Sprintf("%.2f [%s, %s]", q.Point, side(q.Lower), side(q.Upper))
}
