package verdict

import (
	"fmt"
	"math"
	"strconv"
)

// FormatMetric formats a correctness metric or threshold: three decimals, or
// two significant digits when three decimals would round a non-zero value
// to zero.
func FormatMetric(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	s := strconv.FormatFloat(v, 'f', 3, 64)
	if v != 0 && (s == "0.000" || s == "-0.000") {
		return strconv.FormatFloat(v, 'g', 2, 64)
	}
	return s
}

// OpSymbol is the mathematical sign of a gate's op (≥, ≤, =; another op
// as it is).
func OpSymbol(op string) string {
	switch op {
	case ">=":
		return "≥"
	case "<=":
		return "≤"
	case "==":
		return "="
	}
	return op
}

// String is the gate as people read it: "map_50_95 0.912 ≥ 0.500".
func (g Gate) String() string {
	return fmt.Sprintf("%s %s %s %s", g.Name, FormatMetric(g.Value), OpSymbol(g.Op), FormatMetric(g.Threshold))
}
