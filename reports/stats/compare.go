package stats

import (
	"fmt"
)

// DefaultMinEffect is the smallest relative change of a median the baseline
// rule calls, set from the noise `make bench` measures (docs/performance.md,
// "6. The baseline rule's noise"). On the latency distributions fitted to
// the reference runs and the H200 evidence, false calls on
// same-distribution pairs stay under 5 % whatever the minimum effect (the
// interval sees to that); what the minimum effect trades is detection
// against run-to-run noise. At 10 % a 20 % higher median is still called
// in at least 90 % of pairs wherever 50 requests can show it (the H200's
// GPU-computed profile; 15 % drops that to about 80 %); against the
// H200's run-to-run noise no minimum effect up to 25 % keeps single runs
// under 5 % false calls (10 %: 21 %, 25 %: 9 %), while three trials a side
// keep them at 3 % on average — so trials, not a larger minimum effect, are
// the defence (docs/reports.md).
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

// Rule is the baseline rule: the bootstrap of the difference of medians
// and the minimum effect (relative, 0.10 = 10 %).
type Rule struct {
	Bootstrap
	MinEffect float64 `json:"min_effect"`
}

// DefaultRule is the 95 % bootstrap with DefaultMinEffect.
func DefaultRule() Rule { return Rule{Bootstrap: DefaultBootstrap(), MinEffect: DefaultMinEffect} }

func (r Rule) check() error {
	if err := r.Bootstrap.check(); err != nil {
		return err
	}
	if !(r.MinEffect >= 0 && r.MinEffect < 10) {
		return fmt.Errorf("baseline rule: minimum effect %v, want 0 ≤ m < 10", r.MinEffect)
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
	// Change is CurrentMedian − BaseMedian, [Lower, Upper] its interval.
	Change float64 `json:"change"`
	Lower  float64 `json:"lower"`
	Upper  float64 `json:"upper"`
	// RelChange is Change / BaseMedian, [RelLower, RelUpper] the interval
	// of the difference as a share of the baseline's median (its lower end
	// can pass −100 % on a wide sample: resampled baseline medians above
	// the observed one).
	RelChange float64  `json:"rel_change"`
	RelLower  float64  `json:"rel_lower"`
	RelUpper  float64  `json:"rel_upper"`
	Decision  Decision `json:"decision"`
}

// Compare compares the current times with the baseline's. Each side is a
// set of trials, each trial the per-request times of one run (one trial
// when the runs were not repeated). The statistic is the median across
// trials of each trial's median (the median itself for one trial); its
// interval is the percentile bootstrap of the difference, both sides
// resampled independently, trials in two stages (trials, then requests
// within each), with the rule's seed. The decision:
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
	cmp.Decision = r.Decide(cmp)
	return cmp, nil
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
