package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"
)

func TestImagesPerSecond(t *testing.T) {
	cycles := latencies(3, 50, 0)
	sum := 0.0
	for _, c := range cycles {
		sum += c
	}
	b := DefaultBootstrap()
	r, err := b.ImagesPerSecond(cycles, 1)
	require.NoError(t, err)
	assert.InDelta(t, 50/(sum/1000), r.Point, 1e-9)
	assert.Less(t, r.Lower, r.Point)
	assert.Greater(t, r.Upper, r.Point)
	assert.False(t, r.UpperUnbounded)
	assert.Equal(t, RateMethod, r.Method)
	assert.Equal(t, 50, r.N)
	again, err := b.ImagesPerSecond(cycles, 1)
	require.NoError(t, err)
	assert.Equal(t, r, again, "reproducible")
	two, err := b.ImagesPerSecond(cycles, 2)
	require.NoError(t, err)
	assert.InDelta(t, 2*r.Point, two.Point, 1e-9)
	assert.InDelta(t, 2*r.Lower, two.Lower, 1e-9)
	assert.InDelta(t, 2*r.Upper, two.Upper, 1e-9)
	assert.Equal(t, 100.0, two.Images)

	same, err := b.ImagesPerSecond([]float64{4, 4, 4}, 1)
	require.NoError(t, err)
	assert.Equal(t, 250.0, same.Point)
	assert.Equal(t, same.Point, same.Lower)
	assert.Equal(t, same.Point, same.Upper)
}

// TestImagesPerSecondCoverage: on 1,500 runs of 50 requests with skewed
// cycle times (fixed seed) the interval holds the true rate close to 95 %
// of the time.
func TestImagesPerSecondCoverage(t *testing.T) {
	d := distuv.LogNormal{Mu: math.Log(1.2), Sigma: 0.5, Src: rand.NewPCG(3, 7)}
	truth := 1000 / (1 + d.Mean())
	b := DefaultBootstrap()
	b.Resamples = 1000
	hit := 0
	const reps = 1500
	for i := range reps {
		v := make([]float64, 50)
		for j := range v {
			v[j] = 1 + d.Rand()
		}
		b.Seed = uint64(i)
		r, err := b.ImagesPerSecond(v, 1)
		require.NoError(t, err)
		if r.Lower <= truth && truth <= r.Upper {
			hit++
		}
	}
	assert.InDelta(t, 0.95, float64(hit)/reps, 0.02)
}

func TestImagesPerSecondRefusesBadInput(t *testing.T) {
	b := DefaultBootstrap()
	for name, c := range map[string]struct {
		cycles []float64
		ipr    float64
	}{
		"no requests":     {nil, 1},
		"one request":     {[]float64{3}, 1},
		"no images":       {[]float64{1, 2}, 0},
		"infinite images": {[]float64{1, 2}, math.Inf(1)},
		"NaN cycle":       {[]float64{1, math.NaN()}, 1},
		"negative cycle":  {[]float64{1, -2}, 1},
		"no time at all":  {[]float64{0, 0}, 1},
	} {
		_, err := b.ImagesPerSecond(c.cycles, c.ipr)
		assert.Error(t, err, name)
	}
	_, err := Bootstrap{Confidence: 0.95, Resamples: 5}.ImagesPerSecond([]float64{1, 2}, 1)
	assert.Error(t, err)
}

func TestCycles(t *testing.T) {
	ms := int64(1e6)
	// out of order on purpose: cycles follow the start times
	c, err := Cycles([]int64{10 * ms, 0, 4 * ms}, []float64{2.5, 3, 5})
	require.NoError(t, err)
	assert.Equal(t, []float64{4, 6, 2.5}, c)
	// the sum is the span from the first start to the last end
	assert.Equal(t, 12.5, c[0]+c[1]+c[2])
	// a request starting 0.5 ms before the previous one ended: clock skew
	_, err = Cycles([]int64{0, 4*ms + ms/2}, []float64{5, 1})
	require.NoError(t, err)
	// 3 ms before: two requests in flight, not concurrency 1
	_, err = Cycles([]int64{0, 2 * ms}, []float64{5, 1})
	assert.ErrorContains(t, err, "not concurrency 1")
	_, err = Cycles([]int64{0}, []float64{1, 2})
	assert.Error(t, err)
	_, err = Cycles(nil, nil)
	assert.Error(t, err)
	_, err = Cycles([]int64{0}, []float64{math.NaN()})
	assert.Error(t, err)
}

// TestImagesPerSecondAboveTheCap: above MaxBootstrapCycles the interval is
// the t interval of the mean cycle — its formula, no resampling — and it
// lies within a few percent of the bootstrap-t's on the same cycles at
// the cap (the two agree where the mean is near normal).
func TestImagesPerSecondAboveTheCap(t *testing.T) {
	cycles := latencies(9, MaxBootstrapCycles+1, 0)
	b := DefaultBootstrap()
	r, err := b.ImagesPerSecond(cycles, 1)
	require.NoError(t, err)
	assert.Equal(t, RateMethodT, r.Method)
	assert.Zero(t, r.Resamples)
	n := float64(len(cycles))
	mean, sd := 0.0, 0.0
	for _, c := range cycles {
		mean += c / n
	}
	for _, c := range cycles {
		sd += (c - mean) * (c - mean) / (n - 1)
	}
	se := math.Sqrt(sd) / math.Sqrt(n)
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.975)
	assert.InDelta(t, 1000/(mean+tq*se), r.Lower, 1e-9)
	assert.InDelta(t, 1000/(mean-tq*se), r.Upper, 1e-9)
	boot, err := b.ImagesPerSecond(cycles[:MaxBootstrapCycles], 1)
	require.NoError(t, err)
	assert.Equal(t, RateMethod, boot.Method)
	assert.InDelta(t, boot.Upper-boot.Lower, r.Upper-r.Lower, 0.05*(r.Upper-r.Lower))
}
