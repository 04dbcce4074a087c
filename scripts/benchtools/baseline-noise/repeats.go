package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/stats"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/noise"
)

func repeats(args []string) error {
	fs := flag.NewFlagSet("repeats", flag.ContinueOnError)
	label := fs.String("label", "baseline-noise", "prefix of the lines for people")
	save := fs.String("save-times", "", "write the first run's per-request HTTP and Task times to this file (for synth -fit-times)")
	source := fs.String("source", "", "with -save-times: where and when the runs were measured, kept in the file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() < 2 {
		return errors.New("repeats: want at least two evidence directories of one profile")
	}
	o := out{*label}
	var runs []noise.Run
	for _, dir := range fs.Args() {
		r, err := noise.ReadRun(dir)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	for i, r := range runs[1:] {
		if d := stats.Differences(runs[0].Fields(), r.Fields()); len(d) > 0 {
			return fmt.Errorf("run %d is not comparable with run 1: %s", i+2, joinDiffs(d))
		}
	}
	rule := stats.DefaultRule()
	for i, r := range runs {
		if err := describeRun(o, rule, i+1, r); err != nil {
			return err
		}
	}
	if err := spreads(o, runs); err != nil {
		return err
	}
	if err := pairs(o, rule, runs); err != nil {
		return err
	}
	if *save != "" {
		r := runs[0]
		p := r.Row.Profile
		return noise.WriteTimes(*save, *source, []noise.Series{
			{Name: p + " HTTP", MS: r.HTTP}, {Name: p + " Task (" + r.Row.LatencyMS.TaskSource + ")", MS: r.Task}})
	}
	return nil
}

func joinDiffs(ds []stats.Difference) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.String()
	}
	return strings.Join(s, "; ")
}

// describeRun prints a run's percentiles with their intervals (the points
// are the row's own figures), its images/s beside the estimate from its
// cycles, and the drift check.
func describeRun(o out, rule stats.Rule, k int, r noise.Run) error {
	var parts []string
	for _, s := range []struct {
		name string
		ms   []float64
		p    verdict.Percentiles
	}{{"HTTP", r.HTTP, r.Row.LatencyMS.HTTP}, {"Task", r.Task, r.Row.LatencyMS.Task}} {
		qs, err := stats.Quantiles(s.ms, noise.PointOf(s.p), stats.DefaultConfidence, 50, 95)
		if err != nil {
			return fmt.Errorf("%s: %w", r.Dir, err)
		}
		parts = append(parts, fmt.Sprintf("%s p50 %s p95 %s (n %d)", s.name, noise.Interval(qs[0]), noise.Interval(qs[1]), qs[0].N))
	}
	cycles, err := stats.Cycles(r.StartNS, r.HTTP)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Dir, err)
	}
	rate, err := rule.ImagesPerSecond(cycles, 1)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Dir, err)
	}
	recorded := "—"
	if r.Row.ImagesPerSec != nil {
		recorded = fmt.Sprintf("%.1f", *r.Row.ImagesPerSec)
	}
	upper := fmt.Sprintf("%.1f", rate.Upper)
	if rate.UpperUnbounded {
		upper = "unbounded"
	}
	parts = append(parts, fmt.Sprintf("images/s %s (AIPerf), %.1f [%.1f, %s] from the cycles", recorded, rate.Point, rate.Lower, upper))
	d, err := rule.Drift(r.HTTP)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Dir, err)
	}
	o.say("run %d: %s; HTTP drift %s", k, strings.Join(parts, "; "), d)
	return nil
}

// spreads prints each metric's run-to-run spread and its figure.
func spreads(o out, runs []noise.Run) error {
	ss, err := noise.Spreads(runs)
	if err != nil {
		return err
	}
	for _, s := range ss {
		cv := "—"
		if s.Summary.CV != nil {
			cv = fmt.Sprintf("%.1f %%", 100**s.Summary.CV)
		}
		o.say("%s over %d runs: median %.3g, range %.3g to %.3g (spread %.1f %% of the median), CV %s, sd of log %.3f",
			s.Metric, s.Summary.Trials, s.Summary.Median, s.Summary.Min, s.Summary.Max, 100*s.Summary.Spread(), cv, s.LogSD)
		o.figure("repeat_"+s.Metric+"_spread_pct", fmt.Sprintf("%.1f", 100*s.Summary.Spread()))
	}
	return nil
}

// pairs prints what the baseline rule says of every pair of the runs: all
// are the same profile on the same machine, so every call is a false one.
// The rule report --baseline applies (its run-to-run sd) first, then the
// within-run rule (run-to-run sd 0) on the same pairs.
func pairs(o out, rule stats.Rule, runs []noise.Run) error {
	within := rule
	within.RunSD = 0
	for _, r := range []stats.Rule{rule, within} {
		for _, s := range []struct {
			name   string
			series func(noise.Run) []float64
		}{{"HTTP", func(r noise.Run) []float64 { return r.HTTP }}, {"Task", func(r noise.Run) []float64 { return r.Task }}} {
			var t noise.Tally
			var called []string
			var largest stats.Comparison
			largestPair := ""
			for i := range runs {
				for j := i + 1; j < len(runs); j++ {
					c, err := r.Compare([][]float64{s.series(runs[i])}, [][]float64{s.series(runs[j])})
					if err != nil {
						return err
					}
					t.Add(c.Decision)
					if largestPair == "" || math.Abs(c.RelChange) > math.Abs(largest.RelChange) {
						largest, largestPair = c, fmt.Sprintf("%d→%d", i+1, j+1)
					}
					if c.Decision.Called() {
						called = append(called, fmt.Sprintf("%d→%d %s %+.0f %% [%+.0f, %+.0f]", i+1, j+1, c.Decision, 100*c.RelChange, 100*c.RelLower, 100*c.RelUpper))
					}
				}
			}
			which := ""
			if len(called) > 0 {
				which = " (" + strings.Join(called, ", ") + ")"
			}
			o.say("the baseline rule (run-to-run sd %.3f) on the %d pairs of these runs, %s median: %d called%s, %d no change, %d inconclusive; the largest change %s %s %+.0f %% [%+.0f, %+.0f]",
				r.RunSD, t.Pairs, s.name, t.Called(), which, t.NoChange, t.Inconclusive,
				largestPair, largest.Decision, 100*largest.RelChange, 100*largest.RelLower, 100*largest.RelUpper)
		}
	}
	return nil
}
