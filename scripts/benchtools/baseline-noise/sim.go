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

// singleRuns runs a scenario of single runs over every distribution and
// shift: the pairs drawn by s (its run-to-run noise), compared by s.Rule.
// stream tells the scenarios' draws apart; coverage also checks the
// images/s interval (it does not depend on the run-to-run noise).
func singleRuns(o out, c synthConfig, s noise.Scenario, stream uint64, coverage bool) ([]curve, error) {
	var curves []curve
	for i, f := range c.fits {
		cv := curve{fit: f}
		for j, shift := range c.shifts {
			cs, err := s.Compare(f, shift, stream+uint64(100*i+j))
			if err != nil {
				return nil, err
			}
			cv.tallies = append(cv.tallies, noise.TallyUnder(s.Rule, cs))
			switch {
			case shift == 0:
				cv.same = cs
			case math.Abs(shift-0.2) < 1e-9:
				cv.at20 = cs
			}
		}
		cov := ""
		if coverage {
			var err error
			if cv.coverage, err = s.RateCoverage(f, uint64(100*i+99)); err != nil {
				return nil, err
			}
			cov = fmt.Sprintf("; images/s interval held the true rate in %.1f %%", 100*cv.coverage)
		}
		t0, t20 := cv.tallies[0], noise.TallyUnder(s.Rule, cv.at20)
		o.say("  %s", f)
		o.say("    same distribution: %.1f %% called (interval alone excludes zero in %.1f %%), %.1f %% no change, %.1f %% inconclusive; "+
			"median 20 %% higher: %.1f %% regressed%s",
			t0.Pct(t0.Called()), t0.Pct(excludesZero(cv.same)), t0.Pct(t0.NoChange), t0.Pct(t0.Inconclusive), t20.Pct(t20.Regressed), cov)
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

// report prints the figures of single runs under s.Rule: false
// positives, detection at 20 %, the power curve and the minimum-effect
// sweep, pooled over the distributions, each figure named prefix + name.
func report(o out, c synthConfig, rule stats.Rule, curves []curve, prefix string) {
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
		o.say("  power: median %2.0f %% higher: regressed in %5.1f %% of pairs (pooled), %5.1f %% at the worst distribution", 100*shift, mean, lo)
	}
	for _, m := range c.minEffects {
		r := rule
		r.MinEffect = m
		o.say("  minimum effect %2.0f %%: %s", 100*m, ratesUnder(r, curves))
	}
	r := ratesUnder(rule, curves)
	o.say("  the rule (minimum effect %.0f %%, run-to-run sd %.3f), single runs of %d requests: %s", 100*rule.MinEffect, rule.RunSD, c.base.Requests, r)
	o.figure(prefix+"false_positive_pct", fmt.Sprintf("%.1f", r.fp))
	o.figure(prefix+"detection_pct_at_20", fmt.Sprintf("%.1f", r.det))
	o.figure(prefix+"power_curve", strings.Join(curve, " "))
}

// scenarios runs part 6's scenarios. Within the run: single runs without
// run-to-run noise, compared by the rule with RunSD 0 (runs that share a
// server and host state; the figures baseline_within_*). Then the
// realistic one, each run as a whole slower or faster (sd c.runSD of its
// log), compared by the rule report --baseline applies (RunSD c.ruleRunSD):
// single runs over the power curve (baseline_false_positive_pct,
// baseline_detection_pct_at_20, baseline_power_curve), what the
// within-run rule would have said of the same pairs, and c.trials trials
// a side (baseline_trials_*).
func scenarios(o out, c synthConfig) error {
	within := c.base
	within.Rule.RunSD = 0
	o.say("single runs, no run-to-run noise, the within-run rule (run-to-run sd 0):")
	curves, err := singleRuns(o, c, within, 0, true)
	if err != nil {
		return err
	}
	report(o, c, within.Rule, curves, "baseline_within_")
	noisy := c.base
	noisy.RunSD, noisy.Rule.RunSD = c.runSD, c.ruleRunSD
	o.say("single runs with run-to-run noise (sd of log %.3f a run), the rule with run-to-run sd %.3f:", c.runSD, c.ruleRunSD)
	if curves, err = singleRuns(o, c, noisy, 1_000_000, false); err != nil {
		return err
	}
	report(o, c, noisy.Rule, curves, "baseline_")
	old := noisy
	old.Rule.RunSD = 0
	if curves, err = pairsAt(c, old, 2_000_000); err != nil {
		return err
	}
	o.say("  the within-run rule (run-to-run sd 0) on such pairs: %s", ratesUnder(old.Rule, curves))
	trials := noisy
	trials.Trials = c.trials
	if curves, err = pairsAt(c, trials, 3_000_000); err != nil {
		return err
	}
	r := ratesUnder(trials.Rule, curves)
	o.say("with run-to-run noise (sd of log %.3f a run), %d trials a side, the rule with run-to-run sd %.3f: %s", c.runSD, c.trials, c.ruleRunSD, r)
	for _, m := range c.minEffects {
		rule := trials.Rule
		rule.MinEffect = m
		o.say("  minimum effect %2.0f %%: %s", 100*m, ratesUnder(rule, curves))
	}
	o.figure("baseline_trials_false_positive_pct", fmt.Sprintf("%.1f", r.fp))
	o.figure("baseline_trials_detection_pct_at_20", fmt.Sprintf("%.1f", r.det))
	return nil
}

// pairsAt draws and compares s's same-distribution pairs and those with a
// 20 % higher median, for every distribution.
func pairsAt(c synthConfig, s noise.Scenario, stream uint64) ([]curve, error) {
	var curves []curve
	for i, f := range c.fits {
		same, err := s.Compare(f, 0, stream+uint64(100*i))
		if err != nil {
			return nil, err
		}
		at20, err := s.Compare(f, 0.2, stream+uint64(100*i+1))
		if err != nil {
			return nil, err
		}
		curves = append(curves, curve{fit: f, same: same, at20: at20})
	}
	return curves, nil
}
