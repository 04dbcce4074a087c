package drift

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs/specstest"
)

// A repository that moves families from the older layout to the newer one
// between two refs: drift reads each ref in its own layout and reports the
// moved family's files, old ones deleted and new ones added, by category.
func TestDriftAcrossTheLayoutMove(t *testing.T) {
	repo := specstest.BuildMove(t)
	r, err := Drift(context.Background(), repo.Source(), "main", "families", []string{"detection"})
	require.NoError(t, err)
	assert.Equal(t, repo.Old, r.BaseCommit)
	assert.Equal(t, repo.New, r.HeadCommit)
	assert.Equal(t, []string{"detectors"}, r.Families)
	type change struct{ path, layout, category, status, profile string }
	var got []change
	for _, c := range r.Changes {
		got = append(got, change{c.Path, c.Layout, c.Category, c.Status, c.Profile})
	}
	assert.Equal(t, []change{
		{"families/detectors/tests/manifests/det-large-tp4.json", "families", "manifest", "added", "det-large-tp4"},
		{"families/detectors/tests/manifests/det-large.json", "families", "manifest", "added", "det-large"},
		{"families/detectors/tests/manifests/det-small.json", "families", "manifest", "added", "det-small"},
		{"tests/e2e/models/detectors/MODEL.toml", "e2e-models", "model_toml", "deleted", ""},
		{"tests/e2e/models/detectors/manifests/det-huge-tp2.json", "e2e-models", "manifest", "deleted", "det-huge-tp2"},
		{"tests/e2e/models/detectors/manifests/det-large-fp16.json", "e2e-models", "manifest", "deleted", "det-large-fp16"},
		{"tests/e2e/models/detectors/manifests/det-large-regression-resize.json", "e2e-models", "manifest", "deleted", "det-large-regression-resize"},
		{"tests/e2e/models/detectors/manifests/det-large-tp4.json", "e2e-models", "manifest", "deleted", "det-large-tp4"},
		{"tests/e2e/models/detectors/manifests/det-large.json", "e2e-models", "manifest", "deleted", "det-large"},
		{"tests/e2e/models/detectors/manifests/det-repro.json", "e2e-models", "manifest", "deleted", "det-repro"},
		{"tests/e2e/models/detectors/manifests/det-small-tiny-random.json", "e2e-models", "manifest", "deleted", "det-small-tiny-random"},
		{"tests/e2e/models/detectors/manifests/det-small.json", "e2e-models", "manifest", "deleted", "det-small"},
		{"tests/e2e/models/detectors/thresholds/det-small.json", "e2e-models", "threshold", "deleted", "det-small"},
	}, got)

	// The vlm family's files under tests/ keep their categories in the
	// newer layout; files outside tests/ are categorised from the family
	// folder.
	r, err = Drift(context.Background(), repo.Source(), "main", "families", []string{"vlm"})
	require.NoError(t, err)
	cats := map[string]string{}
	for _, c := range r.Changes {
		cats[c.Path] = c.Category
	}
	assert.Equal(t, "threshold", cats["families/vislm/tests/thresholds/alpha-vl-2b.json"])
	assert.Equal(t, "manifest", cats["families/vislm/tests/manifests/gamma-vl-4b.json"])
	assert.Equal(t, "test", cats["families/vislm/tests/test_e2e.py"])
	assert.Equal(t, "other", cats["families/vislm/model.py"])
	assert.Equal(t, "reference", cats["tests/e2e/models/vislm/data/img.jpeg"])
	assert.NotContains(t, cats, "tests/e2e/models/ocrish/MODEL.toml", "unmoved families did not change")

	// And back: the newer layout is the base.
	r, err = Drift(context.Background(), repo.Source(), "families", "main", []string{"detection"})
	require.NoError(t, err)
	assert.Len(t, r.Changes, len(got))
	for _, c := range r.Changes {
		want := map[string]string{"families": "deleted", "e2e-models": "added"}[c.Layout]
		assert.Equal(t, want, c.Status, c.Path)
	}
}
