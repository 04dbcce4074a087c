package aiperf

import "sort"

// Methods only the tests use: the product reads Run.Problems (the stage
// keeps the fatal ones, stages.go) and Summary.Metric.

// Complete reports whether the run has no problems.
func (r *Run) Complete() bool { return len(r.Problems) == 0 }

// Err returns nil for a complete run, else an *IncompleteError.
func (r *Run) Err() error {
	if r.Complete() {
		return nil
	}
	return &IncompleteError{Dir: r.ArtifactDir, Problems: r.Problems}
}

// HasProblem reports whether a problem with the code was found.
func (r *Run) HasProblem(code string) bool {
	for _, p := range r.Problems {
		if p.Code == code {
			return true
		}
	}
	return false
}

// Phase returns the requests of one phase, in start order.
func (r *Run) Phase(phase string) []Request {
	var out []Request
	for _, q := range r.Requests {
		if q.Phase == phase {
			out = append(out, q)
		}
	}
	return out
}

// WarmupMetric looks up a warmup-phase metric block by tag.
func (s *Summary) WarmupMetric(tag string) (MetricStats, bool) {
	m, ok := s.WarmupMetrics[tag]
	return m, ok
}

// MetricTags lists the profiling metric tags, sorted.
func (s *Summary) MetricTags() []string {
	tags := make([]string, 0, len(s.Metrics))
	for t := range s.Metrics {
		tags = append(tags, t)
	}
	sort.Strings(tags)
	return tags
}
