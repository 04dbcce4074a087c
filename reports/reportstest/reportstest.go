// Package reportstest gives tests rows with the facts that make
// reports.Judge reach a chosen verdict: since Judge derives every verdict
// from a row's facts, a test cannot just set one.
package reportstest

import (
	"github.com/trtmc-qual/trtmc-qual/reports"
)

func f64(v float64) *float64 { return &v }

// Qualified fills r with the facts of a row that meets the qualification
// contract: the qualification workload, every request matched, latency over
// the matched measured requests, a passing gate, a pinned bundle that was
// served, AIPerf 0.13.0, every stage ok.
func Qualified(r *reports.Result) {
	r.Workload = reports.Workload{Warmup: reports.QualificationWarmup, Measured: reports.QualificationMeasured,
		Concurrency: reports.QualificationConcurrency}
	w := reports.Counts{Expected: r.Workload.Warmup, Sent: r.Workload.Warmup, Matched: r.Workload.Warmup}
	m := reports.Counts{Expected: r.Workload.Measured, Sent: r.Workload.Measured, Matched: r.Workload.Measured}
	r.RequestsByPhase = map[string]reports.Counts{reports.PhaseWarmup: w, reports.PhaseMeasured: m}
	r.Requests = w.Add(m)
	w.EchoProven, m.EchoProven = w.Matched, m.Matched
	r.RequestsByPhase = map[string]reports.Counts{reports.PhaseWarmup: w, reports.PhaseMeasured: m}
	r.Requests = w.Add(m)
	part := func(mean, p50, p95 float64) reports.SplitPart {
		return reports.SplitPart{Mean: f64(mean), P50: f64(p50), P95: f64(p95)}
	}
	r.LatencyMS = reports.Latency{Set: reports.LatencySetMeasuredMatched,
		HTTP: reports.Percentiles{P50: f64(3), P95: f64(5), Count: m.Matched},
		Task: reports.Percentiles{P50: f64(2), P95: f64(4), Count: m.Matched},
		HTTPSplit: &reports.HTTPSplit{Count: m.Matched, HTTPMean: f64(3.2), TaskMean: f64(2.1),
			Client: part(0.05, 0.05, 0.08), Sending: part(0.15, 0.14, 0.3), Waiting: part(2.95, 2.8, 4.6),
			Receiving: part(0.05, 0.04, 0.07), OutsideTask: part(0.85, 0.8, 1.1)}}
	r.Correctness = &reports.Correctness{Ran: true, Passed: true,
		Gates: []reports.Gate{{Name: "accuracy", Value: 1, Op: ">=", Threshold: 0.9, Passed: true}}}
	// The bundle its inventory entry pins (BaseResult's), else one of its own.
	sum := r.Provenance.BundlePinnedSHA256
	if sum == "" {
		sum = "0000000000000000000000000000000000000000000000000000000000000000"
	}
	r.Provenance.BundleSHA256, r.Provenance.BundlePinnedSHA256 = sum, sum
	r.Provenance.BundleChecks = []reports.BundleCheck{{After: reports.BundleAfterCorrectness, SHA256: sum}, {After: reports.BundleAfterRun, SHA256: sum}}
	r.Provenance.AIPerfVersion = reports.QualificationAIPerfVersion
	r.Provenance.AIPerfVersionRequired = reports.QualificationAIPerfVersion
	r.Stages = nil
	for _, s := range []string{"preflight", "server", "correctness", "aiperf", "stop-server", "native", "bundle-check", "join"} {
		r.Stages = append(r.Stages, reports.Stage{Name: s, Status: reports.StageOK})
	}
	r.Problems = nil
	reports.Judge(r)
}

// WithVerdict gives r facts that Judge turns into v: qualified, failed (a
// mismatch), error (a broken AIPerf stage), interrupted, not-run or excluded.
func WithVerdict(r *reports.Result, v string) {
	Qualified(r)
	switch v {
	case reports.VerdictFailed:
		m := r.RequestsByPhase[reports.PhaseMeasured]
		m.Matched, m.Mismatched = m.Matched-1, 1
		r.RequestsByPhase[reports.PhaseMeasured] = m
		r.Requests = r.RequestsByPhase[reports.PhaseWarmup].Add(m)
		r.LatencyMS.HTTP.Count, r.LatencyMS.Task.Count, r.LatencyMS.HTTPSplit.Count = m.Matched, m.Matched, m.Matched
	case reports.VerdictError:
		r.Problems = []reports.Problem{{Stage: "aiperf", Code: reports.CodeAIPerfFailed, Message: "aiperf failed (test row)"}}
	case reports.VerdictInterrupted:
		r.Problems = []reports.Problem{{Stage: "aiperf", Code: reports.CodeInterrupted, Message: "interrupted (test row)"}}
	case reports.VerdictNotRun:
		r.Problems = []reports.Problem{{Stage: "slurm", Code: reports.CodeSlurmNotStarted, Message: "never started (test row)"}}
	case reports.VerdictExcluded:
		r.Exclusion = "excluded (test row)"
	}
	reports.Judge(r)
}
