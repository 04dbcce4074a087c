package aiperf

import (
	"math"
	"math/bits"
	"slices"
)

// SummaryQuantiles are the percentiles AIPerf reports for record metrics.
var SummaryQuantiles = []int{1, 5, 10, 25, 50, 75, 90, 95, 99}

// Percentiles computes percentiles the way AIPerf 0.13.0 does
// (aiperf/metrics/metric_dicts.py metric_result_from_array): sort, then for
// each q, idx = q/100*(n-1), lo = floor(idx), hi = min(lo+1, n-1),
// p = v[lo] + (idx-lo)*(v[hi]-v[lo]) in float64 (numpy's "linear" method,
// written out). values is not modified. It returns nil for no values.
//
// Only the ranks the percentiles read are put in place (selectRanks), not
// the whole array sorted: at a million requests a re-judge's percentiles
// are the one part of it that runs on a single CPU.
func Percentiles(values []float64, qs ...int) []float64 {
	if len(values) == 0 {
		return nil
	}
	v := slices.Clone(values)
	n := len(v)
	type pos struct{ lo, hi int }
	at := make([]pos, len(qs))
	ranks := make([]int, 0, 2*len(qs))
	for i, q := range qs {
		idx := float64(q) / 100.0 * float64(n-1)
		lo := int(idx)
		at[i] = pos{lo, min(lo+1, n-1)}
		ranks = append(ranks, at[i].lo, at[i].hi)
	}
	slices.Sort(ranks)
	ranks = slices.Compact(ranks)
	if slices.ContainsFunc(v, math.IsNaN) || ranks[0] < 0 || ranks[len(ranks)-1] >= n {
		slices.Sort(v) // NaN sorts first; a q outside 0..100 panics as before
	} else {
		selectRanks(v, 0, ranks, 2*bits.Len(uint(n)))
	}
	out := make([]float64, len(qs))
	for i, q := range qs {
		idx := float64(q) / 100.0 * float64(n-1)
		lo, hi := at[i].lo, at[i].hi
		frac := idx - float64(lo)
		// The explicit float64 conversion keeps the compiler from fusing the
		// multiply-add, so the rounding is numpy's.
		out[i] = v[lo] + float64(frac*(v[hi]-v[lo]))
	}
	return out
}

// selectRanks reorders v (the part of a larger array that starts at index
// off) so that v[r-off] holds the value a sort would put there, for each
// rank r in ranks (ascending, unique, inside v): quickselect with a
// three-way partition, so that equal values (latencies repeat) end a
// branch at once. After depth levels it sorts what is left, which bounds
// the worst case by a sort's.
func selectRanks(v []float64, off int, ranks []int, depth int) {
	for len(ranks) > 0 {
		if len(v) <= 16 || depth == 0 {
			slices.Sort(v)
			return
		}
		depth--
		a, b, c := v[0], v[len(v)/2], v[len(v)-1]
		p := max(min(a, b), min(max(a, b), c)) // the median of the three
		// v[:lt] < p, v[lt:gt] == p, v[gt:] > p
		lt, i, gt := 0, 0, len(v)
		for i < gt {
			switch x := v[i]; {
			case x < p:
				v[lt], v[i] = x, v[lt]
				lt++
				i++
			case x > p:
				gt--
				v[gt], v[i] = x, v[gt]
			default:
				i++
			}
		}
		l, _ := slices.BinarySearch(ranks, off+lt)
		r, _ := slices.BinarySearch(ranks, off+gt)
		selectRanks(v[:lt], off, ranks[:l], depth)
		v, off, ranks = v[gt:], off+gt, ranks[r:]
	}
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
