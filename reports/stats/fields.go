package stats

import (
	"fmt"
	"strconv"
)

// Field is one named property of a row that two rows must share to be
// compared (bundle, inventory entry, workload, Task-time source, hardware
// scope, AIPerf version, ...).
type Field struct {
	Name  string
	Value string
}

// Difference is a field whose values differ, or that only one side has.
type Difference struct {
	Name           string `json:"name"`
	Base           string `json:"base"`
	Current        string `json:"current"`
	MissingBase    bool   `json:"missing_base,omitempty"`
	MissingCurrent bool   `json:"missing_current,omitempty"`
}

func (d Difference) String() string {
	side := func(v string, missing bool) string {
		if missing {
			return "(none)"
		}
		return strconv.Quote(v)
	}
	return fmt.Sprintf("%s: %s in the baseline, %s now", d.Name, side(d.Base, d.MissingBase), side(d.Current, d.MissingCurrent))
}

// Differences names every field on which base and current disagree: in
// base's order, then the fields only current has, in its order. A name
// given twice on one side counts once, its first value. No difference
// means the two are comparable on these fields.
func Differences(base, current []Field) []Difference {
	cur := map[string]string{}
	for _, f := range current {
		if _, dup := cur[f.Name]; !dup {
			cur[f.Name] = f.Value
		}
	}
	var out []Difference
	seen := map[string]bool{}
	for _, f := range base {
		if seen[f.Name] {
			continue
		}
		seen[f.Name] = true
		v, ok := cur[f.Name]
		switch {
		case !ok:
			out = append(out, Difference{Name: f.Name, Base: f.Value, MissingCurrent: true})
		case v != f.Value:
			out = append(out, Difference{Name: f.Name, Base: f.Value, Current: v})
		}
	}
	for _, f := range current {
		if !seen[f.Name] {
			seen[f.Name] = true
			out = append(out, Difference{Name: f.Name, Current: f.Value, MissingBase: true})
		}
	}
	return out
}
