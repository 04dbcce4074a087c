package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/stats"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/noise"
)

// curve is one distribution's results over the shifts of single runs.
type curve struct {
	fit     noise.Fit
	tallies []noise.Tally // per shift, under the default rule
	// The comparisons of same-distribution pairs and of the 20 % shift,
	// kept to decide again under other minimum effects.
	same, at20 []stats.Comparison
	coverage   float64 // of the images/s interval
}

// excludesZero counts the comparisons whose interval excludes zero: the
// interval's own false positives, before the minimum effect.
func excludesZero(cs []stats.Comparison) int {
	n := 0
	for _, c := range cs {
		if c.Lower > 0 || c.Upper < 0 {
			n++
		}
	}
	return n
}

// singleRuns runs the scenario of single runs, without run-to-run noise,
// over every distribution and shift.
func singleRuns(o out, c synthConfig, fs []noise.Fit) ([]curve, error) {
	var curves []curve
	for i, f := range fs {
		cv := curve{fit: f}
		for j, shift := range c.shifts {
			cs, err := c.base.Compare(f, shift, uint64(100*i+j))
			if err != nil {
				return nil, err
			}
			cv.tallies = append(cv.tallies, noise.TallyUnder(c.base.Rule, cs))
			switch {
			case shift == 0:
				cv.same = cs
			case math.Abs(shift-0.2) < 1e-9:
				cv.at20 = cs
			}
		}
		var err error
		if cv.coverage, err = c.base.RateCoverage(f, uint64(100*i+99)); err != nil {
			return nil, err
		}
		t0, t20 := cv.tallies[0], noise.TallyUnder(c.base.Rule, cv.at20)
		o.say("%s", f)
		o.say("  same distribution: %.1f %% called (interval alone excludes zero in %.1f %%), %.1f %% no change, %.1f %% inconclusive; "+
			"median 20 %% higher: %.1f %% regressed; images/s interval held the true rate in %.1f %%",
			t0.Pct(t0.Called()), t0.Pct(excludesZero(cv.same)), t0.Pct(t0.NoChange), t0.Pct(t0.Inconclusive), t20.Pct(t20.Regressed), 100*cv.coverage)
		curves = append(curves, cv)
	}
	return curves, nil
}

// rates is what a rule does over a set of distributions: its false calls
// on same-distribution pairs and its detection of a 20 % higher median,
// pooled over the distributions (each the same number of pairs) and at
// the worst one.
type rates struct{ fp, fpWorst, det, detWorst float64 }

func (r rates) String() string {
	return fmt.Sprintf("false calls %.1f %% (worst distribution %.1f %%), detection of 20 %% %.1f %% (worst %.1f %%)", r.fp, r.fpWorst, r.det, r.detWorst)
}

func ratesUnder(rule stats.Rule, curves []curve) rates {
	r := rates{detWorst: 100}
	for _, cv := range curves {
		t0, t20 := noise.TallyUnder(rule, cv.same), noise.TallyUnder(rule, cv.at20)
		fp, det := t0.Pct(t0.Called()), t20.Pct(t20.Regressed)
		r.fp += fp / float64(len(curves))
		r.det += det / float64(len(curves))
		r.fpWorst, r.detWorst = max(r.fpWorst, fp), min(r.detWorst, det)
	}
	return r
}

// report prints the figures of single runs: false positives, detection at
// 20 %, the power curve and the minimum-effect sweep. The figures are
// pooled over the distributions.
func report(o out, c synthConfig, curves []curve) {
	var curve []string
	for j, shift := range c.shifts {
		lo, sum := 100.0, 0.0
		for _, cv := range curves {
			t := cv.tallies[j]
			lo = min(lo, t.Pct(t.Regressed))
			sum += t.Pct(t.Regressed)
		}
		mean := sum / float64(len(curves))
		curve = append(curve, fmt.Sprintf("%.0f%%=%.1f", 100*shift, mean))
		o.say("power: median %2.0f %% higher: regressed in %5.1f %% of pairs (pooled), %5.1f %% at the worst distribution", 100*shift, mean, lo)
	}
	for _, m := range c.minEffects {
		r := c.base.Rule
		r.MinEffect = m
		o.say("minimum effect %2.0f %%: %s", 100*m, ratesUnder(r, curves))
	}
	r := ratesUnder(c.base.Rule, curves)
	o.say("the rule (minimum effect %.0f %%), single runs of %d requests: %s", 100*c.base.Rule.MinEffect, c.base.Requests, r)
	o.figure("baseline_false_positive_pct", fmt.Sprintf("%.1f", r.fp))
	o.figure("baseline_detection_pct_at_20", fmt.Sprintf("%.1f", r.det))
	o.figure("baseline_power_curve", strings.Join(curve, " "))
}

// trialsScenario adds run-to-run noise (each run as a whole slower or
// faster, as repeated runs on one machine are) and compares single runs
// with sets of trials.
func trialsScenario(o out, c synthConfig, fs []noise.Fit) error {
	for _, trials := range []int{1, c.trials} {
		s := c.base
		s.Trials, s.RunSD = trials, c.runSD
		var curves []curve
		for i, f := range fs {
			same, err := s.Compare(f, 0, uint64(100000*trials+100*i))
			if err != nil {
				return err
			}
			at20, err := s.Compare(f, 0.2, uint64(100000*trials+100*i+1))
			if err != nil {
				return err
			}
			curves = append(curves, curve{fit: f, same: same, at20: at20})
		}
		r := ratesUnder(s.Rule, curves)
		o.say("with run-to-run noise (sd of log %.3f a run), %d trial(s) a side: %s", c.runSD, trials, r)
		for _, m := range c.minEffects {
			rule := s.Rule
			rule.MinEffect = m
			o.say("  minimum effect %2.0f %%: %s", 100*m, ratesUnder(rule, curves))
		}
		if trials > 1 {
			o.figure("baseline_trials_false_positive_pct", fmt.Sprintf("%.1f", r.fp))
			o.figure("baseline_trials_detection_pct_at_20", fmt.Sprintf("%.1f", r.det))
		}
	}
	return nil
}
