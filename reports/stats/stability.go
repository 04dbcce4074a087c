package stats

import "fmt"

// DriftCheck names the stability check within one run.
const DriftCheck = "halves_median"

// MinDriftSample is the fewest requests the drift check looks at: ten a
// half. Below it, Drift says not checked rather than guess.
const MinDriftSample = 20

// Drift is the stability check of one run's measured requests, in the order
// they were sent: the first half's median against the last half's, by the
// baseline rule itself (the first half as the baseline). A called change
// marks the run Unstable: its timing drifted while it was measured (a
// warm-up not over, a neighbour's load, throttling). It is a note for the
// reader, never a verdict: these are integration measurements, not
// performance gates.
type Drift struct {
	Check string `json:"check"`
	N     int    `json:"n"`
	// Checked is false when N < MinDriftSample; nothing else is set then.
	Checked bool `json:"checked"`
	// The halves' comparison: the last half against the first (with an odd
	// N the middle request is in neither).
	Halves   *Comparison `json:"halves,omitempty"`
	Unstable bool        `json:"unstable"`
}

// Drift runs the drift check over times in the order they were measured.
// The halves are of one run: no run-to-run component between them, so the
// rule's RunSD is not applied (the within-run interval decides).
func (r Rule) Drift(inOrder []float64) (Drift, error) {
	r.RunSD = 0
	d := Drift{Check: DriftCheck, N: len(inOrder)}
	if len(inOrder) < MinDriftSample {
		return d, nil
	}
	h := len(inOrder) / 2
	c, err := r.Compare([][]float64{inOrder[:h]}, [][]float64{inOrder[len(inOrder)-h:]})
	if err != nil {
		return Drift{}, fmt.Errorf("drift: %w", err)
	}
	d.Checked, d.Halves, d.Unstable = true, &c, c.Decision.Called()
	return d, nil
}

// String says what the check found, in words for a note.
func (d Drift) String() string {
	if !d.Checked {
		return fmt.Sprintf("drift not checked: %d requests, the check needs %d", d.N, MinDriftSample)
	}
	c := d.Halves
	what := "stable: the last half's median is within the noise of the first's"
	if d.Unstable {
		what = "unstable: the last half's median differs from the first's"
	}
	// The change is the rule's estimate (for one run against one the
	// Hodges–Lehmann shift: the median of every pairwise ratio, not the
	// ratio of the two medians, which it can differ from on 25 requests).
	return fmt.Sprintf("%s (medians %.3g → %.3g; estimated shift %+.0f %%, %.0f %% interval %+.0f %% to %+.0f %%)",
		what, c.BaseMedian, c.CurrentMedian, 100*c.RelChange, 100*c.Rule.Confidence, 100*c.RelLower, 100*c.RelUpper)
}
