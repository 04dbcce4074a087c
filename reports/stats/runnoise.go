package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// medianVars[t] is the variance of the median of t independent standard
// normal values (the mean of the middle two for an even t; David and
// Nagaraja, Order Statistics, the normal order statistics' moments),
// t = 1 … 10 — the trials a workload allows. TestMedianVars checks them by
// simulation.
var medianVars = [...]float64{1: 1, 2: 0.5, 3: 0.4487, 4: 0.2982, 5: 0.2868, 6: 0.2147, 7: 0.2104, 8: 0.1682, 9: 0.1661, 10: 0.1383}

// medianVar is v(t), the variance of the median of t independent run
// factors of unit standard deviation: medianVars, beyond ten trials the
// large-sample π/(2t).
func medianVar(t int) float64 {
	if t >= 1 && t < len(medianVars) {
		return medianVars[t]
	}
	return math.Pi / (2 * float64(t))
}

// withRunNoise keeps the comparison's interval as the within-run one and
// widens it by the run-to-run component (Compare says how). The interval
// is widened on the log scale around the point log(1 + RelChange); an end
// at or beyond −100 % has no logarithm and is left where it is.
func (r Rule) withRunNoise(c *Comparison) {
	c.WithinLower, c.WithinUpper, c.WithinRelLower, c.WithinRelUpper = c.Lower, c.Upper, c.RelLower, c.RelUpper
	if r.RunSD == 0 || !(c.RelChange > -1) {
		return
	}
	for _, t := range []int{c.BaseTrials, c.CurrentTrials} {
		if t == 1 {
			c.RunNoiseSides++
		}
	}
	zs := distuv.UnitNormal.Quantile(1-(1-r.Confidence)/2) * r.RunSD
	add := float64(c.RunNoiseSides) * zs * zs
	floor := 0.0
	if c.RunNoiseSides < 2 { // a side with trials: the floor (docs/performance.md, part 6, measured it)
		floor = zs * math.Sqrt(medianVar(c.BaseTrials)+medianVar(c.CurrentTrials))
	}
	p := math.Log1p(c.RelChange)
	widen := func(w float64) (float64, bool) {
		nw := math.Max(math.Sqrt(w*w+add), floor)
		return nw, nw > w
	}
	if c.RelLower > -1 {
		if w, ok := widen(math.Max(p-math.Log1p(c.RelLower), 0)); ok {
			c.RelLower = math.Expm1(p - w)
			c.Lower = c.RelLower * c.BaseMedian
			c.RunNoiseFloor = c.RunNoiseFloor || w == floor
		}
	}
	if w, ok := widen(math.Max(math.Log1p(c.RelUpper)-p, 0)); ok {
		c.RelUpper = math.Expm1(p + w)
		c.Upper = c.RelUpper * c.BaseMedian
		c.RunNoiseFloor = c.RunNoiseFloor || w == floor
	}
}
