// Package verdicttest gives tests rows with the facts that make
// verdict.Judge reach a chosen verdict: since Judge derives every verdict
// from a row's facts, a test cannot just set one.
package verdicttest

import (
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

func f64(v float64) *float64 { return &v }

// Qualified fills r with the facts of a row that meets the qualification
// contract: the qualification workload, every request matched, latency over
// the matched measured requests, a passing gate, a pinned bundle that was
// served, AIPerf 0.13.0, every stage ok.
func Qualified(r *verdict.Result) {
	r.Workload = verdict.Workload{Warmup: verdict.QualificationWarmup, Measured: verdict.QualificationMeasured,
		Concurrency: verdict.QualificationConcurrency}
	w := verdict.Counts{Expected: r.Workload.Warmup, Sent: r.Workload.Warmup, Matched: r.Workload.Warmup}
	m := verdict.Counts{Expected: r.Workload.Measured, Sent: r.Workload.Measured, Matched: r.Workload.Measured}
	r.RequestsByPhase = map[string]verdict.Counts{verdict.PhaseWarmup: w, verdict.PhaseMeasured: m}
	r.Requests = w.Add(m)
	w.EchoProven, m.EchoProven = w.Matched, m.Matched
	r.RequestsByPhase = map[string]verdict.Counts{verdict.PhaseWarmup: w, verdict.PhaseMeasured: m}
	r.Requests = w.Add(m)
	part := func(mean, p50, p95 float64) verdict.SplitPart {
		return verdict.SplitPart{Mean: f64(mean), P50: f64(p50), P95: f64(p95)}
	}
	r.LatencyMS = verdict.Latency{Set: verdict.LatencySetMeasuredMatched,
		HTTP: verdict.Percentiles{P50: f64(3), P95: f64(5), Count: m.Matched},
		Task: verdict.Percentiles{P50: f64(2), P95: f64(4), Count: m.Matched},
		HTTPSplit: &verdict.HTTPSplit{Count: m.Matched, HTTPMean: f64(3.2), TaskMean: f64(2.1),
			Client: part(0.05, 0.05, 0.08), Sending: part(0.15, 0.14, 0.3), Waiting: part(2.95, 2.8, 4.6),
			Receiving: part(0.05, 0.04, 0.07), OutsideTask: part(0.85, 0.8, 1.1)}}
	r.Correctness = &verdict.Correctness{Ran: true, Passed: true,
		Gates: []verdict.Gate{{Name: "accuracy", Value: 1, Op: ">=", Threshold: 0.9, Passed: true}}}
	// The bundle its inventory entry pins (BaseResult's), else one of its own.
	sum := r.Provenance.BundlePinnedSHA256
	if sum == "" {
		sum = "0000000000000000000000000000000000000000000000000000000000000000"
	}
	r.Provenance.BundleSHA256, r.Provenance.BundlePinnedSHA256 = sum, sum
	r.Provenance.BundleChecks = []verdict.BundleCheck{{After: verdict.BundleAfterCorrectness, SHA256: sum}, {After: verdict.BundleAfterRun, SHA256: sum}}
	r.Provenance.AIPerfVersion = verdict.QualificationAIPerfVersion
	r.Provenance.AIPerfVersionRequired = verdict.QualificationAIPerfVersion
	r.Stages = nil
	for _, s := range []string{"preflight", "server", "correctness", "aiperf", "stop-server", "native", "bundle-check", "join"} {
		r.Stages = append(r.Stages, verdict.Stage{Name: s, Status: verdict.StageOK})
	}
	r.Problems = nil
	verdict.Judge(r)
}

// WithVerdict gives r facts that Judge turns into v: qualified, failed (a
// mismatch), error (a broken AIPerf stage), interrupted, not-run or excluded.
func WithVerdict(r *verdict.Result, v string) {
	Qualified(r)
	switch v {
	case verdict.VerdictFailed:
		m := r.RequestsByPhase[verdict.PhaseMeasured]
		m.Matched, m.Mismatched = m.Matched-1, 1
		r.RequestsByPhase[verdict.PhaseMeasured] = m
		r.Requests = r.RequestsByPhase[verdict.PhaseWarmup].Add(m)
		r.LatencyMS.HTTP.Count, r.LatencyMS.Task.Count, r.LatencyMS.HTTPSplit.Count = m.Matched, m.Matched, m.Matched
	case verdict.VerdictError:
		r.Problems = []verdict.Problem{{Stage: "aiperf", Code: verdict.CodeAIPerfFailed, Message: "aiperf failed (test row)"}}
	case verdict.VerdictInterrupted:
		r.Problems = []verdict.Problem{{Stage: "aiperf", Code: verdict.CodeInterrupted, Message: "interrupted (test row)"}}
	case verdict.VerdictNotRun:
		r.Problems = []verdict.Problem{{Stage: "slurm", Code: verdict.CodeSlurmNotStarted, Message: "never started (test row)"}}
	case verdict.VerdictExcluded:
		r.Exclusion = "excluded (test row)"
	}
	verdict.Judge(r)
}
