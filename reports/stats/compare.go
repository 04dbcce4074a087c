package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// DefaultMinEffect is the smallest relative change of a median the baseline
// rule calls, set from the noise `make bench` measures (docs/performance.md,
// "6. The baseline rule's noise"; 2026-12-05, 18 distributions, 500 pairs).
// Within the runs (no run-to-run noise, RunSD 0) false calls stay near or
// under 5 % whatever the minimum effect (the interval sees to that: 3.6 %
// pooled at 10 %), and 10 % detects a 20 % higher median as often as 5 %
// (68.6 % pooled, 97–100 % on the H200's GPU-computed profile), 20 % only
// in 47 %. Against the H200's run-to-run noise (sd 0.075 of a run's log
// median) no minimum effect made single runs safe under the within-run
// interval (24 % false calls at 10 %); the run-to-run component (RunSD)
// does — 4.7 % for single runs, 1.7 % for three trials a side — and then
// the minimum effect hardly matters (the widened interval already spans
// more than ±10 %), so it stays at 10 %.
const DefaultMinEffect = 0.10

// Decision is what the baseline rule says about a change. Times are
// compared: lower is better.
type Decision string

// The decisions. A change is called (Improved, Regressed) only when the
// interval of the difference excludes zero and the relative change is at
// least the minimum effect; NoChange says the interval lies within ± the
// minimum effect (no change that large is plausible); Inconclusive says
// neither: the interval is too wide to tell.
const (
	Improved     Decision = "improved"
	Regressed    Decision = "regressed"
	NoChange     Decision = "no_change"
	Inconclusive Decision = "inconclusive"
)

// Called reports whether the decision calls a change.
func (d Decision) Called() bool { return d == Improved || d == Regressed }

// Rule is the baseline rule: how the interval of a change is made
// (Method; the bootstrap's confidence, resamples and seed, which the
// Hodges–Lehmann method uses for its confidence, and for trials) and the
// minimum effect (relative, 0.10 = 10 %).
type Rule struct {
	Bootstrap
	// Method is MethodHodgesLehmannLog (the default) or
	// MethodBootstrapMedians ("" is the latter: rules written before the
	// field).
	Method    string  `json:"method"`
	MinEffect float64 `json:"min_effect"`
	// RunSD is the run-to-run component of the noise: the standard
	// deviation, between runs of one configuration, of the logarithm of a
	// run's median — what a run as a whole is slower or faster than the
	// next (a server start, the machine's state), which the requests of
	// one run cannot show. 0: the within-run interval alone (runs known to
	// share a server and host state). Compare says how it widens the
	// interval; DefaultRunSD says where the default comes from.
	RunSD float64 `json:"run_sd"`
}

// DefaultRunSD is the run-to-run component the baseline rule assumes: the
// standard deviation of the log of a run's median between six
// back-to-back runs of the H200's GPU-computed reference profile
// (ref-vlm-gpu, each its own server start, same everything; `baseline-noise
// repeats`): HTTP p50 0.073, Task p50 0.071 (p95 0.094). 0.075 is the
// medians' figure rounded up: six runs estimate it only to within about
// 0.05–0.18 (95 %, five degrees of freedom), and it already holds the
// sampling error of a 50-request median (about 0.03 of it on that
// profile), so it is the measured total, not a guess below it. Other
// hardware measures its own (docs/reports.md, "How the baseline decides").
const DefaultRunSD = 0.075

// DefaultRule is the 95 % Hodges–Lehmann rule with DefaultMinEffect and
// DefaultRunSD (and the default bootstrap for trials).
func DefaultRule() Rule {
	return Rule{Bootstrap: DefaultBootstrap(), Method: MethodHodgesLehmannLog, MinEffect: DefaultMinEffect, RunSD: DefaultRunSD}
}

// Validate says what is wrong with the rule's settings (nil: nothing).
func (r Rule) Validate() error { return r.check() }

func (r Rule) check() error {
	if err := r.Bootstrap.check(); err != nil {
		return err
	}
	if r.Method != "" && r.Method != MethodHodgesLehmannLog && r.Method != MethodBootstrapMedians {
		return fmt.Errorf("baseline rule: method %q, want %s or %s", r.Method, MethodHodgesLehmannLog, MethodBootstrapMedians)
	}
	if !(r.MinEffect >= 0 && r.MinEffect < 10) {
		return fmt.Errorf("baseline rule: minimum effect %v, want 0 ≤ m < 10", r.MinEffect)
	}
	if !(r.RunSD >= 0 && r.RunSD < 1) {
		return fmt.Errorf("baseline rule: run-to-run sd %v, want 0 ≤ sd < 1", r.RunSD)
	}
	return nil
}

// Comparison is a set of current times against a baseline's.
type Comparison struct {
	Rule Rule `json:"rule"`
	// Trials and requests on each side.
	BaseTrials    int `json:"base_trials"`
	CurrentTrials int `json:"current_trials"`
	BaseN         int `json:"base_n"`
	CurrentN      int `json:"current_n"`
	// The medians (across trials, of each trial's median).
	BaseMedian    float64 `json:"base_median"`
	CurrentMedian float64 `json:"current_median"`
	// Change is CurrentMedian − BaseMedian, [Lower, Upper] its interval:
	// the interval the decision uses, with the run-to-run component
	// (Rule.RunSD) where a side cannot show it (Compare).
	Change float64 `json:"change"`
	Lower  float64 `json:"lower"`
	Upper  float64 `json:"upper"`
	// RelChange is Change / BaseMedian, [RelLower, RelUpper] the interval
	// of the difference as a share of the baseline's median (its lower end
	// can pass −100 % on a wide sample: resampled baseline medians above
	// the observed one).
	RelChange float64 `json:"rel_change"`
	RelLower  float64 `json:"rel_lower"`
	RelUpper  float64 `json:"rel_upper"`
	// The interval from the requests (and trials) alone, before the
	// run-to-run component: absolute and relative, as Lower … RelUpper.
	// Equal to them when nothing was added.
	WithinLower    float64 `json:"within_lower"`
	WithinUpper    float64 `json:"within_upper"`
	WithinRelLower float64 `json:"within_rel_lower"`
	WithinRelUpper float64 `json:"within_rel_upper"`
	// RunNoiseSides is the number of sides with one trial, for which the
	// run-to-run component was added (0 when Rule.RunSD is 0);
	// RunNoiseFloor says the interval was widened to the floor of sides
	// with trials (Compare).
	RunNoiseSides int      `json:"run_noise_sides"`
	RunNoiseFloor bool     `json:"run_noise_floor,omitempty"`
	Decision      Decision `json:"decision"`
	// Method is the method the interval was made with: the rule's, but
	// the bootstrap of medians when a side has more than one trial
	// (Compare says why); Coverage is the exact method's achieved
	// coverage (0 for a bootstrap).
	Method   string  `json:"method"`
	Coverage float64 `json:"coverage,omitempty"`
}

// Compare compares the current times with the baseline's. Each side is a
// set of trials, each trial the per-request times of one run (one trial
// when the runs were not repeated). BaseMedian and CurrentMedian are the
// median across trials of each trial's median (the median itself for one
// trial). The change and its interval:
//
//   - MethodHodgesLehmannLog, one trial a side: the Hodges–Lehmann shift of
//     the log times, exp(shift) − 1 the relative change, its interval the
//     exact Mann–Whitney one (distribution-free; the normal approximation
//     of the ranks above exactMWLimit pairs);
//   - otherwise (MethodBootstrapMedians, or trials on either side): the
//     percentile bootstrap of the difference of the medians, both sides
//     resampled independently, trials in two stages (trials, then
//     requests within each) with the rule's seed. With trials the
//     requests of one trial are not independent of each other (a run as a
//     whole is faster or slower): a rank interval over the pooled requests
//     would ignore that, the two-stage bootstrap carries it.
//
// The run-to-run component (Rule.RunSD > 0; withRunNoise). One trial's
// requests cannot show how much the whole run is slower or faster than
// the next, so for each side with ONE trial the rule adds it: on the log
// scale each half of the interval, w from the point to its end, becomes
// √(w² + k·(z·RunSD)²), z the normal quantile of the confidence, k the
// sides with one trial (2 for one run against one, 1 for one run against
// trials: the trials' bootstrap already carries their own spread). A side
// with trials shows its spread, but three trials are few to see it: the
// half-width is then at least z·RunSD·√(v(m) + v(n)), v(t) the variance of
// the median of t independent run factors of unit sd (v(1) = 1; medianVar)
// — what the prior says trials like these would vary. RunSD 0 leaves the
// within-run interval exactly; the within-run interval is kept
// (WithinLower … WithinRelUpper) either way.
//
// The decision:
//
//   - Regressed: the interval lies above zero and RelChange ≥ MinEffect;
//   - Improved: the interval lies below zero and RelChange ≤ −MinEffect;
//   - NoChange: not called, and the relative interval lies strictly within
//     ± MinEffect;
//   - Inconclusive: not called, and the interval reaches a change of at
//     least MinEffect: the data cannot tell.
func (r Rule) Compare(base, current [][]float64) (Comparison, error) {
	if err := r.check(); err != nil {
		return Comparison{}, err
	}
	b, bn, err := sortedTrials("baseline", base)
	if err != nil {
		return Comparison{}, err
	}
	c, cn, err := sortedTrials("current", current)
	if err != nil {
		return Comparison{}, err
	}
	cmp := Comparison{Rule: r, BaseTrials: len(b), CurrentTrials: len(c), BaseN: bn, CurrentN: cn,
		BaseMedian: trialsPoint(b), CurrentMedian: trialsPoint(c)}
	if cmp.BaseMedian <= 0 {
		return Comparison{}, fmt.Errorf("baseline: %w", errZeroMedian)
	}
	if r.Method == MethodHodgesLehmannLog && len(b) == 1 && len(c) == 1 {
		if err := r.shiftInterval(&cmp, b[0], c[0]); err != nil {
			return Comparison{}, err
		}
	} else {
		r.bootstrapInterval(&cmp, b, c)
	}
	r.withRunNoise(&cmp)
	cmp.Decision = r.Decide(cmp)
	return cmp, nil
}

// MaxShiftSample is the most requests a side the Hodges–Lehmann interval
// looks at: above it, a seeded random sample of that many (without
// replacement; the rule's seed) stands for the side. The interval is then
// wider than all the requests could make it, never narrower — and at
// 5,000 a side a relative change is already known to within a few percent,
// well inside the minimum effect — while its cost no longer grows with the
// requests (a drift check of a million-request row's halves would
// otherwise select among 2.5·10¹¹ differences).
const MaxShiftSample = 5000

// shiftInterval sets the change of one run against one run by the
// Hodges–Lehmann shift of the log times (sorted inputs).
func (r Rule) shiftInterval(cmp *Comparison, base, cur []float64) error {
	base, cur = r.sampled(base, 1), r.sampled(cur, 2)
	lb, err := logSorted(base)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	lc, err := logSorted(cur)
	if err != nil {
		return fmt.Errorf("current: %w", err)
	}
	s, err := HodgesLehmann(lb, lc, r.Confidence)
	if err != nil {
		return err
	}
	cmp.Method, cmp.Coverage = MethodHodgesLehmannLog, s.Coverage
	cmp.RelChange, cmp.RelLower, cmp.RelUpper = math.Expm1(s.Point), math.Expm1(s.Lower), math.Expm1(s.Upper)
	cmp.Change, cmp.Lower, cmp.Upper = cmp.RelChange*cmp.BaseMedian, cmp.RelLower*cmp.BaseMedian, cmp.RelUpper*cmp.BaseMedian
	return nil
}

// sampled is sorted itself, or a seeded random sample of MaxShiftSample of
// it, sorted (stream tells the two sides' draws apart).
func (r Rule) sampled(sorted []float64, stream uint64) []float64 {
	if len(sorted) <= MaxShiftSample {
		return sorted
	}
	rng := rand.New(rand.NewPCG(r.Seed, stream))
	pick := rng.Perm(len(sorted))[:MaxShiftSample]
	out := make([]float64, len(pick))
	for i, k := range pick {
		out[i] = sorted[k]
	}
	slices.Sort(out)
	return out
}

// bootstrapInterval sets the change by the percentile bootstrap of the
// difference of the medians (sorted trials).
func (r Rule) bootstrapInterval(cmp *Comparison, b, c [][]float64) {
	cmp.Method = MethodBootstrapMedians
	cmp.Change = cmp.CurrentMedian - cmp.BaseMedian
	cmp.RelChange = cmp.Change / cmp.BaseMedian
	rs := newResampler(r.Bootstrap)
	diffs := make([]float64, r.Resamples)
	for i := range diffs {
		mb := rs.trialsMedian(b)
		diffs[i] = rs.trialsMedian(c) - mb
	}
	cmp.Lower, cmp.Upper = r.percentileInterval(diffs)
	cmp.RelLower, cmp.RelUpper = cmp.Lower/cmp.BaseMedian, cmp.Upper/cmp.BaseMedian
}

// Decide applies the rule's minimum effect to a comparison's figures (its
// interval does not depend on the minimum effect, so a comparison can be
// decided again under another one without resampling).
func (r Rule) Decide(c Comparison) Decision {
	switch {
	case c.Lower > 0 && c.RelChange >= r.MinEffect:
		return Regressed
	case c.Upper < 0 && c.RelChange <= -r.MinEffect:
		return Improved
	case c.RelLower > -r.MinEffect && c.RelUpper < r.MinEffect:
		return NoChange
	default:
		return Inconclusive
	}
}
