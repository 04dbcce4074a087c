package aiperf

import (
	"math"
	"slices"
)

// SummaryQuantiles are the percentiles AIPerf reports for record metrics.
var SummaryQuantiles = []int{1, 5, 10, 25, 50, 75, 90, 95, 99}

// Percentiles computes percentiles the way AIPerf 0.13.0 does
// (aiperf/metrics/metric_dicts.py metric_result_from_array): sort, then for
// each q, idx = q/100*(n-1), lo = floor(idx), hi = min(lo+1, n-1),
// p = v[lo] + (idx-lo)*(v[hi]-v[lo]) in float64 (numpy's "linear" method,
// written out). values is not modified. It returns nil for no values.
func Percentiles(values []float64, qs ...int) []float64 {
	if len(values) == 0 {
		return nil
	}
	v := slices.Clone(values)
	slices.Sort(v)
	n := len(v)
	out := make([]float64, len(qs))
	for i, q := range qs {
		idx := float64(q) / 100.0 * float64(n-1)
		lo := int(idx)
		hi := min(lo+1, n-1)
		frac := idx - float64(lo)
		// The explicit float64 conversion keeps the compiler from fusing the
		// multiply-add, so the rounding is numpy's.
		out[i] = v[lo] + float64(frac*(v[hi]-v[lo]))
	}
	return out
}

// nsPerMs is AIPerf's ns→ms factor: it converts with
// value * (1000 / 1_000_000_000), which is this float64.
const nsPerMs = 1000.0 / 1_000_000_000.0

// LatencyPercentilesMs reproduces the summary's percentiles of a
// millisecond metric (request_latency) from the per-record values in
// profile_export.jsonl, bit for bit. AIPerf aggregates the integer
// nanosecond values and converts each statistic to ms afterwards, while each
// record's value was converted on its own, so percentiles of the ms values
// can differ in the last bit. Recovering the integer nanoseconds first
// (the ms values are exact conversions of integers below 2^53) and
// converting afterwards gives the summary's numbers exactly.
func LatencyPercentilesMs(valuesMs []float64, qs ...int) []float64 {
	if len(valuesMs) == 0 {
		return nil
	}
	ns := make([]float64, len(valuesMs))
	for i, ms := range valuesMs {
		ns[i] = math.Round(ms / nsPerMs)
	}
	out := Percentiles(ns, qs...)
	for i := range out {
		out[i] *= nsPerMs
	}
	return out
}
