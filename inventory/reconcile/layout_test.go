package reconcile

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/specstest"
)

func rowsByProfile(r *Report) map[string]Row {
	out := map[string]Row{}
	for _, row := range r.Rows {
		out[row.Profile] = row
	}
	return out
}

// A commit in TRTMC's newer layout reconciles: the detection group, which
// exists only there, is all ok; the vlm group mixes moved and unmoved
// families and reconciles as it did before the move.
func TestReconcileNewerLayout(t *testing.T) {
	repo := specstest.BuildMove(t)
	cfg := specs.DefaultConfig()
	src := repo.Source()
	ctx := context.Background()
	moved, err := src.Read(ctx, "families")
	require.NoError(t, err)
	old, err := src.Read(ctx, "main")
	require.NoError(t, err)

	det := Reconcile(cfg, moved, loadFixtureInventory(t, "../specs/testdata/inventory-families.yaml"), "detection")
	assert.Equal(t, "detection @ "+specs.ShortSHA(repo.New)+": 2 normal (2 ok), 1 variant, 0 partials; 0 need action", det.Line())
	rows := rowsByProfile(det)
	assert.Equal(t, "variant.build.tensor_parallel_size", rows["det-large-tp4"].Rule)
	assert.Equal(t, "families/detectors/tests/manifests/det-small.json", rows["det-small"].Manifest)
	assert.Equal(t, "object_detection", rows["det-small"].Task)
	assert.Equal(t, []string{"detectors"}, det.Families)

	inv := loadFixtureInventory(t, fixtureInventory)
	before, after := rowsByProfile(Reconcile(cfg, old, inv, "vlm")), rowsByProfile(Reconcile(cfg, moved, inv, "vlm"))
	for _, name := range []string{"alpha-vl-2b", "alpha-vl-2b-tp2", "alpha-vl-2b-l0", "beta-vl-7b-int8", "ocr-one", "ocr-one-l0", "legacy-vl"} {
		assert.Equal(t, before[name].State, after[name].State, "%s: state before and after the move", name)
		assert.Equal(t, before[name].Kind, after[name].Kind, "%s: kind before and after the move", name)
	}
	assert.Equal(t, StateOK, after["alpha-vl-2b"].State)
	assert.Equal(t, StateVariant, after["alpha-vl-2b-tp2"].State)
	assert.Equal(t, "variant.tensor_parallel_size", after["alpha-vl-2b-tp2"].Rule)
	assert.Equal(t, StatePartial, after["alpha-vl-2b-l0"].State)
	assert.Equal(t, StateMissing, after["gamma-vl-4b"].State, "a checkpoint new at the moved commit")
	assert.Equal(t, "gamma-vl-4b", after["gamma-vl-4b"].Checkpoint)
	// beta-vl-7b-bf16 is gone at the moved commit, so beta-vl-7b is the only
	// full profile; it still disagrees with the inventory on precision.
	assert.Equal(t, StateDrift, after["beta-vl-7b"].State)
	assert.Equal(t, StateStale, after["txt-one"].State)
	assert.Contains(t, after["txt-one"].Detail, "task_strategy text_generation_causal", "the older layout's key, where the manifest is")
}

// Bad newer-layout manifests are invalid rows naming line and field.
func TestReconcileNewerLayoutProblems(t *testing.T) {
	repo := specstest.BuildMove(t)
	snap, err := repo.Source().Read(context.Background(), "broken")
	require.NoError(t, err)
	r := Reconcile(specs.DefaultConfig(), snap, nil, "detection")
	rows := rowsByProfile(r)
	assert.Equal(t, StateInvalid, rows["bad-syntax"].State)
	assert.Equal(t, "families/badfam/tests/manifests/bad-syntax.json", rows["bad-syntax"].Manifest)
	assert.Contains(t, rows["bad-syntax"].Detail, "line 4: malformed JSON")
	found := false
	for _, p := range r.Problems {
		if p.Path == "families/badfam/tests/manifests/bad-fields.json" && p.Message == "line 10: tensor_parallel_size: must be a positive integer, got 0" {
			found = true
		}
	}
	assert.True(t, found, "the field problem is in the report with its file, line and field")
	assert.Positive(t, r.Summary.NeedAction)
}
