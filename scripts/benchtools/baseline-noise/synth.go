package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/stats"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/noise"
)

// synthConfig is synth's flags.
type synthConfig struct {
	label      string
	fitTimes   []string
	fitRows    []string
	base       noise.Scenario
	shifts     []float64 // the power curve's, relative
	minEffects []float64 // the sweep's, relative
	runSD      float64   // run-to-run noise of the realistic scenarios
	ruleRunSD  float64   // the rule's RunSD in them
	trials     int
	fits       []noise.Fit
}

func parseSynth(args []string) (synthConfig, error) {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	c := synthConfig{base: noise.Scenario{Rule: stats.DefaultRule(), Requests: 50, Trials: 1}}
	fs.StringVar(&c.label, "label", "baseline-noise", "prefix of the lines for people")
	times := fs.String("fit-times", "", "comma-separated files of measured per-request times (repeats -save-times)")
	rows := fs.String("fit-rows", "", "comma-separated evidence directories of rows whose recorded p50/p95 are fitted (published evidence)")
	fs.IntVar(&c.base.Pairs, "pairs", 1000, "pairs of runs drawn per distribution and shift")
	fs.IntVar(&c.base.Requests, "requests", 50, "measured requests a run")
	fs.IntVar(&c.base.Rule.Resamples, "resamples", stats.DefaultResamples, "bootstrap resamples of each comparison")
	fs.StringVar(&c.base.Rule.Method, "method", stats.MethodHodgesLehmannLog, "the rule's method: "+stats.MethodHodgesLehmannLog+" or "+stats.MethodBootstrapMedians)
	fs.Float64Var(&c.base.Rule.Confidence, "confidence", stats.DefaultConfidence, "the rule's confidence")
	fs.Uint64Var(&c.base.Seed, "seed", 35, "seed of the draws")
	shifts := fs.String("shifts", "0,5,10,15,20,25,30,40,50", "the power curve's shifts of the median, percent")
	effects := fs.String("min-effects", "5,10,15,20", "minimum effects to sweep, percent")
	fs.Float64Var(&c.runSD, "run-sd", stats.DefaultRunSD, "run-to-run noise: sd of the log of a run's scale (the realistic scenarios)")
	fs.Float64Var(&c.ruleRunSD, "rule-run-sd", stats.DefaultRunSD, "the rule's run-to-run sd in the realistic scenarios (report --baseline --run-noise)")
	fs.IntVar(&c.trials, "trials", 3, "trials a side in the trials scenario")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if *times == "" && *rows == "" {
		return c, errors.New("synth: nothing to fit (-fit-times, -fit-rows)")
	}
	c.fitTimes, c.fitRows = splitList(*times), splitList(*rows)
	var err error
	if c.shifts, err = percents(*shifts); err != nil {
		return c, err
	}
	if c.minEffects, err = percents(*effects); err != nil {
		return c, err
	}
	if !(c.runSD >= 0 && c.ruleRunSD >= 0 && c.ruleRunSD < 1) {
		return c, fmt.Errorf("synth: -run-sd %v, -rule-run-sd %v: want sd ≥ 0 (the rule's below 1)", c.runSD, c.ruleRunSD)
	}
	if c.shifts[0] != 0 || !containsNear(c.shifts, 0.2) {
		return c, errors.New("synth: -shifts must start with 0 and hold 20")
	}
	return c, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func percents(s string) ([]float64, error) {
	var out []float64
	for _, f := range splitList(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("synth: %q is not a percentage", f)
		}
		out = append(out, v/100)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("synth: %q lists no percentages", s)
	}
	return out, nil
}

func containsNear(v []float64, x float64) bool {
	for _, y := range v {
		if math.Abs(x-y) < 1e-9 {
			return true
		}
	}
	return false
}

// fits fits a distribution to each series of the times files and to each
// qualified row's HTTP and Task p50/p95.
func fits(ctx context.Context, c synthConfig) ([]noise.Fit, error) {
	var out []noise.Fit
	for _, path := range c.fitTimes {
		series, err := noise.ReadTimes(ctx, path)
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			f, err := noise.FitTimes(s.Name+" (measured here)", s.MS)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
	}
	for _, dir := range c.fitRows {
		row, err := noise.ReadPublished(ctx, dir)
		if err != nil {
			return nil, err
		}
		if row.Verdict != verdict.VerdictQualified {
			continue
		}
		for _, s := range []struct {
			name string
			p    verdict.Percentiles
		}{{"HTTP", row.LatencyMS.HTTP}, {"Task", row.LatencyMS.Task}} {
			if s.p.P50 == nil || s.p.P95 == nil {
				continue
			}
			f, err := noise.FitP50P95(fmt.Sprintf("%s %s (%s)", row.Profile, s.name, dir), *s.p.P50, *s.p.P95)
			if err != nil {
				return nil, err
			}
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("synth: no distribution fitted (no qualified rows, no times)")
	}
	return out, nil
}

func synth(args []string) error {
	c, err := parseSynth(args)
	if err != nil {
		return err
	}
	if c.fits, err = fits(context.Background(), c); err != nil {
		return err
	}
	o := out{c.label}
	o.say("%d latency distributions, %d pairs of %d-request runs each per shift, method %s at %.3g %%, %d resamples a bootstrap, minimum effect %.0f %%",
		len(c.fits), c.base.Pairs, c.base.Requests, c.base.Rule.Method, 100*c.base.Rule.Confidence, c.base.Rule.Resamples, 100*c.base.Rule.MinEffect)
	return scenarios(o, c)
}
