package noise

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/stats"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// TestFitTimesRecoversTheDistribution: times drawn from a known shifted
// lognormal fit back to it.
func TestFitTimesRecoversTheDistribution(t *testing.T) {
	want := Fit{Shift: 0.5, Mu: math.Log(1.2), Sigma: 0.8}
	d := distuv.LogNormal{Mu: want.Mu, Sigma: want.Sigma, Src: rand.NewPCG(1, 2)}
	v := make([]float64, 200000)
	for i := range v {
		v[i] = want.Shift + d.Rand()
	}
	f, err := FitTimes("known", v)
	require.NoError(t, err)
	assert.InDelta(t, want.Shift, f.Shift, 0.03)
	assert.InDelta(t, want.Median(), f.Median(), 0.01)
	assert.InDelta(t, want.Sigma, f.Sigma, 0.03)
	assert.InDelta(t, want.Quantile(0.95), f.Quantile(0.95), 0.05)

	_, err = FitTimes("few", v[:5])
	assert.Error(t, err)
	_, err = FitTimes("flat", make([]float64, 20))
	assert.Error(t, err)
}

// TestFitP50P95 has the row's p50 and p95 exactly.
func TestFitP50P95(t *testing.T) {
	f, err := FitP50P95("row", 2.03, 3.33)
	require.NoError(t, err)
	assert.InDelta(t, 2.03, f.Median(), 1e-12)
	assert.InDelta(t, 3.33, f.Quantile(0.95), 1e-9)
	assert.Zero(t, f.Shift)
	for _, c := range [][2]float64{{0, 1}, {2, 2}, {3, 2}, {1, math.Inf(1)}} {
		_, err := FitP50P95("bad", c[0], c[1])
		assert.Error(t, err, "%v", c)
	}
}

// TestReferenceTimesFit: the kept per-request times of the reference runs
// read and fit (make bench part 6 fits them).
func TestReferenceTimesFit(t *testing.T) {
	paths, err := filepath.Glob("testdata/*.times.json")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, p := range paths {
		series, err := ReadTimes(context.Background(), p)
		require.NoError(t, err, p)
		require.Len(t, series, 2, p)
		for _, s := range series {
			assert.Len(t, s.MS, verdict.QualificationMeasured, s.Name)
			f, err := FitTimes(s.Name, s.MS)
			require.NoError(t, err, s.Name)
			assert.Greater(t, f.Sigma, 0.0)
		}
	}
	_, err = ReadTimes(context.Background(), "testdata/nothing.json")
	assert.Error(t, err)
	bad := filepath.Join(t.TempDir(), "x.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"schema":"other","series":[]}`), 0o644))
	_, err = ReadTimes(context.Background(), bad)
	assert.ErrorContains(t, err, "schema")
}

// TestScenarioDoesNotDependOnWorkers: each pair has its own random source,
// so the comparisons are the same on one worker or several.
func TestScenarioDoesNotDependOnWorkers(t *testing.T) {
	f := Fit{Shift: 1, Mu: math.Log(1.2), Sigma: 0.5}
	s := Scenario{Rule: stats.DefaultRule(), Requests: 50, Trials: 2, RunSD: 0.05, Pairs: 12, Seed: 3, Workers: 1}
	s.Rule.Resamples = 300
	one, err := s.Compare(f, 0.2, 7)
	require.NoError(t, err)
	s.Workers = 5
	five, err := s.Compare(f, 0.2, 7)
	require.NoError(t, err)
	assert.Equal(t, one, five)
	other, err := s.Compare(f, 0.2, 8)
	require.NoError(t, err)
	assert.NotEqual(t, one, other, "another stream draws other pairs")
	assert.Equal(t, 2, one[0].BaseTrials)
	assert.Equal(t, 100, one[0].CurrentN)
}

// TestScenarioTallies: a tight distribution, no shift, the within-run rule
// (no run-to-run noise drawn, none assumed): almost nothing called, mostly
// no change; shifted 30 %: every pair regressed. Under the default rule
// the same pairs are never "no change": one run against one cannot rule
// out 10 % of run-to-run noise.
func TestScenarioTallies(t *testing.T) {
	f := Fit{Mu: math.Log(8), Sigma: 0.1}
	s := Scenario{Rule: stats.DefaultRule(), Requests: 50, Trials: 1, Pairs: 100, Seed: 1}
	s.Rule.Resamples, s.Rule.RunSD = 500, 0
	same, err := s.Compare(f, 0, 1)
	require.NoError(t, err)
	t0 := TallyUnder(s.Rule, same)
	assert.Equal(t, 100, t0.Pairs)
	assert.LessOrEqual(t, t0.Called(), 2)
	assert.Greater(t, t0.NoChange, 70)
	shifted, err := s.Compare(f, 0.3, 2)
	require.NoError(t, err)
	t30 := TallyUnder(s.Rule, shifted)
	assert.Equal(t, 100, t30.Regressed)
	assert.Equal(t, 100.0, t30.Pct(t30.Regressed))
	// A minimum effect above the shift calls nothing.
	strict := s.Rule
	strict.MinEffect = 0.5
	assert.Zero(t, TallyUnder(strict, shifted).Called())
	d := s
	d.Rule = stats.DefaultRule()
	same, err = d.Compare(f, 0, 1)
	require.NoError(t, err)
	assert.Zero(t, TallyUnder(d.Rule, same).NoChange)
	assert.Zero(t, TallyUnder(d.Rule, same).Called())

	cov, err := s.RateCoverage(f, 3)
	require.NoError(t, err)
	assert.InDelta(t, 0.95, cov, 0.06)
	_, err = Scenario{Requests: 1, Trials: 1, Pairs: 1}.Compare(f, 0, 1)
	assert.Error(t, err)
}

// writeRun writes a sealed evidence directory of a row and its joined
// requests, as run leaves it.
func writeRun(t *testing.T, dir string, httpMS []float64) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p50, p95 := httpMS[len(httpMS)/2], httpMS[len(httpMS)-1]
	r := verdict.Result{Schema: verdict.ResultSchema, Group: filepath.Base(filepath.Dir(dir)), Profile: filepath.Base(dir),
		Verdict: verdict.VerdictQualified, Reasons: []verdict.Reason{}, Problems: []verdict.Problem{}, Stages: []verdict.Stage{},
		Workload:   verdict.Workload{Warmup: 5, Measured: len(httpMS), Concurrency: 1},
		LatencyMS:  verdict.Latency{HTTP: verdict.Percentiles{P50: &p50, P95: &p95}, Task: verdict.Percentiles{P50: &p50, P95: &p95}, TaskSource: "server"},
		Provenance: verdict.Provenance{BundleSHA256: "b1", AIPerfVersion: "0.13.0", Commands: []verdict.Command{}}}
	data, err := json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, reports.ResultFile), data, 0o644))
	var lines []string
	warm, task := 50.0, 0.5
	l, _ := json.Marshal(verdict.JoinedLine{RequestID: "w", Phase: verdict.PhaseWarmup, Status: verdict.JoinMatched, HTTPMS: &warm, TaskMS: &task, StartNS: 1})
	lines = append(lines, string(l))
	for i := len(httpMS) - 1; i >= 0; i-- { // written out of order on purpose
		h := httpMS[i]
		status := verdict.JoinMatched
		if i == 3 {
			status = verdict.JoinMismatched
		}
		l, _ := json.Marshal(verdict.JoinedLine{RequestID: string(rune('a' + i)), Phase: verdict.PhaseMeasured, Status: status,
			HTTPMS: &h, TaskMS: &task, StartNS: int64(1e9 + i*int(1e7))})
		lines = append(lines, string(l))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, reports.JoinedFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	require.NoError(t, evidence.Seal(dir, map[string]any{}))
}

// TestReadRun reads the measured matched requests in the order they
// started, refuses evidence that changed after its seal, and names what
// makes two runs incomparable.
func TestReadRun(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "detection", "ref-detect-small")
	httpMS := []float64{1, 2, 3, 4, 5, 6}
	writeRun(t, dir, httpMS)
	r, err := ReadRun(dir)
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 2, 3, 5, 6}, r.HTTP, "measured, matched, by start")
	assert.Len(t, r.Task, 5)
	assert.Len(t, r.StartNS, 5)
	assert.Empty(t, stats.Differences(r.Fields(), r.Fields()))

	other := r
	row := *r.Row
	row.Provenance.BundleSHA256 = "b2"
	other.Row = &row
	d := stats.Differences(r.Fields(), other.Fields())
	require.Len(t, d, 1)
	assert.Equal(t, "bundle", d[0].Name)

	pub, err := ReadPublished(context.Background(), dir)
	require.NoError(t, err)
	assert.Equal(t, "ref-detect-small", pub.Profile)

	// Changed after the seal: refused.
	require.NoError(t, os.WriteFile(filepath.Join(dir, reports.JoinedFile), []byte("{}\n"), 0o644))
	_, err = ReadRun(dir)
	assert.ErrorContains(t, err, "does not hold its seal")
	_, err = ReadRun(filepath.Join(root, "detection", "nothing"))
	assert.Error(t, err)
}

func TestSpreads(t *testing.T) {
	root := t.TempDir()
	var runs []Run
	for i, scale := range []float64{1, 1.2, 0.9} {
		dir := filepath.Join(root, string(rune('a'+i)), "g", "p")
		v := []float64{1 * scale, 2 * scale, 3 * scale, 4 * scale, 5 * scale, 6 * scale}
		writeRun(t, dir, v)
		r, err := ReadRun(dir)
		require.NoError(t, err)
		ips := 100 * scale
		r.Row.ImagesPerSec = &ips
		runs = append(runs, r)
	}
	ss, err := Spreads(runs)
	require.NoError(t, err)
	require.Len(t, ss, len(Metrics))
	assert.Equal(t, "http_p50", ss[0].Metric)
	assert.InDelta(t, 4.0, ss[0].Summary.Median, 1e-12) // p50 4 ×{1, 1.2, 0.9}
	assert.InDelta(t, (4.8-3.6)/4, ss[0].Summary.Spread(), 1e-12)
	assert.InDelta(t, logSD([]float64{1, 1.2, 0.9}), ss[4].LogSD, 1e-12)
	runs[1].Row.ImagesPerSec = nil
	_, err = Spreads(runs)
	assert.ErrorContains(t, err, "images_per_sec")
}

func TestPointOfAndInterval(t *testing.T) {
	p50, p95 := 1.5, 4.0
	pf := PointOf(verdict.Percentiles{P50: &p50, P95: &p95})
	assert.Equal(t, []float64{4, 1.5}, pf(nil, 95, 50))
	assert.True(t, math.IsNaN(pf(nil, 90)[0]))
	v := make([]float64, 50)
	for i := range v {
		v[i] = float64(i + 1)
	}
	qs, err := stats.Quantiles(v, pf, stats.DefaultConfidence, 50, 95)
	require.NoError(t, err)
	assert.Equal(t, "1.50 [18.00, 33.00]", Interval(qs[0]))
	assert.Equal(t, "4.00 [44.00, unbounded: n ≥ 72]", Interval(qs[1]))
}
