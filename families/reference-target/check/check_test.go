package check_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/reference-target/bundle"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/check"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/corpus"
	"github.com/trtmc-qual/trtmc-qual/families/reference-target/task"
)

func TestIoU(t *testing.T) {
	t.Parallel()
	a := check.Box{0, 0, 1, 1}
	assert.Equal(t, 1.0, check.IoU(a, a))
	assert.Equal(t, 0.0, check.IoU(a, check.Box{1, 1, 2, 2}))
	assert.InDelta(t, 1.0/3, check.IoU(check.Box{0, 0, 2, 1}, check.Box{1, 0, 3, 1}), 1e-12)
}

func TestMeanAP(t *testing.T) {
	t.Parallel()
	truth := []check.GroundTruth{
		{Image: 0, Label: "a", Box: check.Box{0, 0, 0.5, 0.5}},
		{Image: 1, Label: "a", Box: check.Box{0.5, 0.5, 1, 1}},
		{Image: 1, Label: "b", Box: check.Box{0, 0, 0.2, 0.2}},
	}
	perfect := []check.Prediction{
		{Image: 0, Label: "a", Box: check.Box{0, 0, 0.5, 0.5}, Score: 0.9},
		{Image: 1, Label: "a", Box: check.Box{0.5, 0.5, 1, 1}, Score: 0.8},
		{Image: 1, Label: "b", Box: check.Box{0, 0, 0.2, 0.2}, Score: 0.7},
	}
	assert.InDelta(t, 1.0, check.MeanAPRange(truth, perfect, check.IoUThresholds()), 1e-12)
	assert.Equal(t, 0.0, check.MeanAP(truth, nil, 0.5))

	// Wrong label for "b": label b has AP 0, label a AP 1.
	wrongLabel := append(perfect[:2:2], check.Prediction{Image: 1, Label: "c", Box: check.Box{0, 0, 0.2, 0.2}, Score: 0.7})
	assert.InDelta(t, 0.5, check.MeanAP(truth, wrongLabel, 0.5), 1e-12)

	// A box shifted to IoU 0.62 counts at .50, .55 and .60 only.
	shifted := append(perfect[:2:2], check.Prediction{Image: 1, Label: "b", Box: check.Box{0, 0, 0.2, 0.124}, Score: 0.7})
	assert.InDelta(t, 1.0, check.MeanAP(truth, shifted, 0.6), 1e-12)
	assert.InDelta(t, 0.5, check.MeanAP(truth, shifted, 0.65), 1e-12)
	assert.InDelta(t, (3*1.0+7*0.5)/10, check.MeanAPRange(truth, shifted, check.IoUThresholds()), 1e-12)

	// A confident false positive ranked first: precision 0, 1/2, 2/3 at
	// recall 0, 1/2, 1; interpolated, 2/3 at every recall level.
	fp := append([]check.Prediction{{Image: 0, Label: "a", Box: check.Box{0.6, 0.6, 0.9, 0.9}, Score: 0.99}}, perfect...)
	apA := 2.0 / 3
	assert.InDelta(t, (apA+1)/2, check.MeanAP(truth, fp, 0.5), 1e-12)
}

func newBundle(t *testing.T, family string, breakIt func(*bundle.Params)) *bundle.Bundle {
	t.Helper()
	b, err := bundle.New(family, bundle.PrecisionFP32, 1)
	require.NoError(t, err)
	if breakIt != nil {
		breakIt(&b.Params)
	}
	data, err := b.Encode()
	require.NoError(t, err)
	b, err = bundle.Parse(data)
	require.NoError(t, err)
	return b
}

func TestCheckPassesOnGoodBundles(t *testing.T) {
	t.Parallel()
	for _, family := range bundle.Families() {
		c, err := corpus.Generate(family, 40, t.TempDir())
		require.NoError(t, err)
		b := newBundle(t, family, nil)
		res, err := check.Run(task.New(b, task.Options{}), c)
		require.NoError(t, err)
		assert.True(t, res.Passed, "%s: %+v", family, res)
		assert.Equal(t, check.Schema, res.Schema)
		assert.Equal(t, b.SHA256, res.BundleSHA256)
		assert.Equal(t, 40, res.Count)
		assert.Empty(t, res.Failures)
		for _, g := range res.Gates {
			assert.True(t, g.Passed)
			assert.Equal(t, ">=", g.Op)
		}
		if family == bundle.FamilyDetect {
			assert.GreaterOrEqual(t, res.Metrics["map_50_95"], 0.9)
			assert.Equal(t, 1.0, res.Metrics["map_50"])
		} else {
			assert.Equal(t, 1.0, res.Metrics["accuracy"])
		}
	}
}

func TestCheckFailsWhenTheDetectorIsBroken(t *testing.T) {
	t.Parallel()
	c, err := corpus.Generate(bundle.FamilyDetect, 40, t.TempDir())
	require.NoError(t, err)
	// A labelling bug: red and blue swap names.
	b := newBundle(t, bundle.FamilyDetect, func(p *bundle.Params) {
		p.Palette[0].Name, p.Palette[2].Name = p.Palette[2].Name, p.Palette[0].Name
	})
	res, err := check.Run(task.New(b, task.Options{}), c)
	require.NoError(t, err)
	assert.False(t, res.Passed)
	assert.Less(t, res.Metrics["map_50"], check.MinMAP50)
	assert.False(t, res.Gates[1].Passed)

	out, err := res.Encode()
	require.NoError(t, err)
	var decoded map[string]any
	require.NoError(t, json.Unmarshal(out, &decoded))
	assert.Equal(t, false, decoded["passed"])
	assert.Contains(t, string(out), `"op": ">="`)
}

func TestCheckFailsWhenTheVLMIsBroken(t *testing.T) {
	t.Parallel()
	c, err := corpus.Generate(bundle.FamilyVLM, 28, t.TempDir())
	require.NoError(t, err)
	// A perception bug: every shape is filtered out as noise.
	b := newBundle(t, bundle.FamilyVLM, func(p *bundle.Params) { p.MinArea = 1 << 30 })
	res, err := check.Run(task.New(b, task.Options{}), c)
	require.NoError(t, err)
	assert.False(t, res.Passed)
	assert.Less(t, res.Metrics["accuracy"], check.MinAccuracy)
	require.NotEmpty(t, res.Failures)
	assert.NotEmpty(t, res.Failures[0].Expected)
}

func TestCheckRefusesAnotherFamilysCorpus(t *testing.T) {
	t.Parallel()
	c, err := corpus.Generate(bundle.FamilyVLM, 1, t.TempDir())
	require.NoError(t, err)
	_, err = check.Run(task.New(newBundle(t, bundle.FamilyDetect, nil), task.Options{}), c)
	assert.ErrorContains(t, err, "is for family ref-vlm")
}
