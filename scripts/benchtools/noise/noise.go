// Package noise is make bench's model of timing noise, for the baseline
// rule of reports/stats: latency distributions fitted to measured request
// times (shifted lognormals), many synthetic pairs of runs drawn from them
// to measure how often the rule calls a change that is not there and how
// often it finds one that is, and the reading of real repeated runs of one
// profile (runs.go). A tool, not product: it imports the product, never
// the other way round.
package noise

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/trtmc-qual/trtmc-qual/reports/stats"
)

// Fit is a latency distribution: Shift + LogNormal(Mu, Sigma), in ms.
type Fit struct {
	Name  string
	Shift float64
	Mu    float64
	Sigma float64
}

// Median of the distribution.
func (f Fit) Median() float64 { return f.Shift + math.Exp(f.Mu) }

// Mean of the distribution.
func (f Fit) Mean() float64 { return f.Shift + math.Exp(f.Mu+f.Sigma*f.Sigma/2) }

// Quantile p of the distribution.
func (f Fit) Quantile(p float64) float64 {
	return f.Shift + distuv.LogNormal{Mu: f.Mu, Sigma: f.Sigma}.Quantile(p)
}

func (f Fit) String() string {
	return fmt.Sprintf("%s: %.3g ms + lognormal (p50 %.3g ms, p95 %.3g ms, σ %.2f)", f.Name, f.Shift, f.Median(), f.Quantile(0.95), f.Sigma)
}

// z95 is the standard normal's 95th percentile.
var z95 = distuv.UnitNormal.Quantile(0.95)

// FitTimes fits a shifted lognormal to measured times (at least 10) by
// their 5th, 50th and 95th percentiles (gonum's stat.Quantile, linear
// interpolation): the shift that makes the three symmetric on a log scale,
// (q5·q95 − q50²) / (q5 + q95 − 2·q50), when it lies in [0, q5); else none.
// The fit then has the sample's p50 and p95 exactly, and its p5 too when
// shifted.
func FitTimes(name string, ms []float64) (Fit, error) {
	if len(ms) < 10 {
		return Fit{}, fmt.Errorf("fit %s: %d times, want at least 10", name, len(ms))
	}
	s := slices.Sorted(slices.Values(ms))
	q5 := stat.Quantile(0.05, stat.LinInterp, s, nil)
	q50 := stat.Quantile(0.50, stat.LinInterp, s, nil)
	q95 := stat.Quantile(0.95, stat.LinInterp, s, nil)
	if !(0 < q5 && q5 < q50 && q50 < q95) {
		return Fit{}, fmt.Errorf("fit %s: p5 %v, p50 %v, p95 %v: not a spread of positive times", name, q5, q50, q95)
	}
	shift := 0.0
	if den := q5 + q95 - 2*q50; den > 0 {
		if sh := (q5*q95 - q50*q50) / den; sh > 0 && sh < q5 {
			shift = sh
		}
	}
	return Fit{Name: name, Shift: shift, Mu: math.Log(q50 - shift), Sigma: math.Log((q95-shift)/(q50-shift)) / z95}, nil
}

// FitP50P95 fits a lognormal (no shift) to a row's recorded p50 and p95:
// all that published evidence without per-request times holds.
func FitP50P95(name string, p50, p95 float64) (Fit, error) {
	if !(0 < p50 && p50 < p95) || math.IsInf(p95, 0) {
		return Fit{}, fmt.Errorf("fit %s: p50 %v, p95 %v: want 0 < p50 < p95", name, p50, p95)
	}
	return Fit{Name: name, Mu: math.Log(p50), Sigma: math.Log(p95/p50) / z95}, nil
}

// Scenario is how synthetic pairs of runs are drawn and compared.
type Scenario struct {
	Rule     stats.Rule
	Requests int // measured requests a trial
	Trials   int // trials a side
	// RunSD is the standard deviation of the logarithm of each trial's
	// scale factor: a run as a whole slower or faster (the machine, not the
	// requests). 0: every trial from the same distribution.
	RunSD float64
	Pairs int
	Seed  uint64
	// Workers draw and compare pairs in parallel (0: GOMAXPROCS); the
	// result does not depend on it.
	Workers int
}

func (s Scenario) check() error {
	if s.Requests < 2 || s.Trials < 1 || s.Pairs < 1 || s.RunSD < 0 {
		return fmt.Errorf("scenario: %d requests, %d trials, %d pairs, run sd %v", s.Requests, s.Trials, s.Pairs, s.RunSD)
	}
	return nil
}

// Tally counts the rule's decisions over a scenario's pairs.
type Tally struct {
	Pairs, Regressed, Improved, NoChange, Inconclusive int
}

// Called is the number of pairs the rule called a change.
func (t Tally) Called() int { return t.Regressed + t.Improved }

// Pct is k as a percentage of the pairs.
func (t Tally) Pct(k int) float64 { return 100 * float64(k) / float64(t.Pairs) }

// Add counts one decision.
func (t *Tally) Add(d stats.Decision) {
	t.Pairs++
	switch d {
	case stats.Regressed:
		t.Regressed++
	case stats.Improved:
		t.Improved++
	case stats.NoChange:
		t.NoChange++
	default:
		t.Inconclusive++
	}
}

// pairSource is the random source of pair i of a stream: every pair has its
// own, so a tally does not depend on how pairs are spread over workers.
func (s Scenario) pairSource(stream uint64, i int) *rand.PCG {
	return rand.NewPCG(s.Seed^(stream*0x9e3779b97f4a7c15), uint64(i))
}

// side draws the trials of one side of a pair: each trial's requests from
// f, plus add (ms), times the trial's run factor.
func (s Scenario) side(f Fit, add float64, src rand.Source) [][]float64 {
	lat := distuv.LogNormal{Mu: f.Mu, Sigma: f.Sigma, Src: src}
	run := distuv.Normal{Mu: 0, Sigma: s.RunSD, Src: src}
	out := make([][]float64, s.Trials)
	for t := range out {
		scale := 1.0
		if s.RunSD > 0 {
			scale = math.Exp(run.Rand())
		}
		v := make([]float64, s.Requests)
		for i := range v {
			v[i] = scale * (f.Shift + lat.Rand() + add)
		}
		out[t] = v
	}
	return out
}

// Compare draws the scenario's pairs from f — the current side's times
// shifted up by shift × the median (0.2: the median 20 % higher) — and
// compares each with the scenario's rule. stream tells draws of one
// scenario apart.
func (s Scenario) Compare(f Fit, shift float64, stream uint64) ([]stats.Comparison, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	add := shift * f.Median()
	out := make([]stats.Comparison, s.Pairs)
	err := s.parallel(func(i int) error {
		src := s.pairSource(stream, i)
		base := s.side(f, 0, src)
		cur := s.side(f, add, src)
		c, err := s.Rule.Compare(base, cur)
		out[i] = c
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TallyUnder counts the decisions rule makes on comparisons (its minimum
// effect; the intervals are the comparisons' own).
func TallyUnder(rule stats.Rule, cs []stats.Comparison) Tally {
	var t Tally
	for _, c := range cs {
		t.Add(rule.Decide(c))
	}
	return t
}

// RateCoverage draws the scenario's pairs' worth of single runs of
// Requests cycle times from f and returns the share whose images/s
// interval (one image a request, the rule's bootstrap) holds the true
// rate, 1000 / the mean cycle in ms.
func (s Scenario) RateCoverage(f Fit, stream uint64) (float64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	truth := 1000 / f.Mean()
	hit := make([]bool, s.Pairs)
	one := s
	one.Trials, one.RunSD = 1, 0
	err := s.parallel(func(i int) error {
		b := s.Rule.Bootstrap
		b.Seed += uint64(i)
		r, err := b.ImagesPerSecond(one.side(f, 0, s.pairSource(stream, i))[0], 1)
		hit[i] = r.Lower <= truth && (r.UpperUnbounded || truth <= r.Upper)
		return err
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, h := range hit {
		if h {
			n++
		}
	}
	return float64(n) / float64(len(hit)), nil
}

// parallel runs job(i) for every pair on the scenario's workers.
func (s Scenario) parallel(job func(i int) error) error {
	w := s.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	errs := make([]error, w)
	var wg sync.WaitGroup
	for k := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < s.Pairs; i += w {
				if err := job(i); err != nil {
					errs[k] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
