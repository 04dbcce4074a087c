package aiperf

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// sortedPercentiles is the definition Percentiles implements: sort
// everything, then interpolate (AIPerf's metric_result_from_array).
func sortedPercentiles(values []float64, qs ...int) []float64 {
	v := slices.Clone(values)
	slices.Sort(v)
	out := make([]float64, len(qs))
	for i, q := range qs {
		idx := float64(q) / 100.0 * float64(len(v)-1)
		lo := int(idx)
		hi := min(lo+1, len(v)-1)
		out[i] = v[lo] + float64((idx-float64(lo))*(v[hi]-v[lo]))
	}
	return out
}

// TestPercentilesSelectEqualsSort checks the selection against a full sort,
// bit for bit, on arrays with many and with no repeated values, sorted,
// reversed and constant ones, and any set of percentiles.
func TestPercentilesSelectEqualsSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func(n int) []float64{
		"random": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = rng.Float64() * 100
			}
			return v
		},
		"repeats": func(n int) []float64 { // task_ms at three decimals
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(rng.IntN(7)) / 1000
			}
			return v
		},
		"sorted": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(i)
			}
			return v
		},
		"reversed": func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(n - i)
			}
			return v
		},
		"constant": func(n int) []float64 { return slices.Repeat([]float64{4.25}, n) },
	}
	for name, gen := range shapes {
		for _, n := range []int{1, 2, 3, 16, 17, 55, 100, 1000, 20011} {
			for range 5 {
				v := gen(n)
				keep := slices.Clone(v)
				qs := []int{50, 95}
				if rng.IntN(2) == 0 {
					qs = SummaryQuantiles
				}
				if rng.IntN(3) == 0 {
					qs = []int{rng.IntN(101), rng.IntN(101), 0, 100}
				}
				got, want := Percentiles(v, qs...), sortedPercentiles(v, qs...)
				for i := range want {
					require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "%s n=%d q=%d: %v, want %v", name, n, qs[i], got[i], want[i])
				}
				require.Equal(t, keep, v, "the input is not modified")
			}
		}
	}
	// NaN goes the way of the sort.
	v := []float64{3, math.NaN(), 1, 2}
	require.Equal(t, sortedPercentiles(v, 0, 50)[1], Percentiles(v, 0, 50)[1])
}

// BenchmarkPercentiles times the two percentiles of a re-judge at a
// million requests.
func BenchmarkPercentiles(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	v := make([]float64, 1_000_000)
	for i := range v {
		v[i] = 5 + rng.ExpFloat64()
	}
	b.Run("select", func(b *testing.B) {
		for b.Loop() {
			Percentiles(v, 50, 95)
		}
	})
	b.Run("sort", func(b *testing.B) {
		for b.Loop() {
			sortedPercentiles(v, 50, 95)
		}
	})
}
