package reconcile

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/specstest"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
)

// fixtureInventory is the inventory written for the fixture repository.
const fixtureInventory = "../specs/testdata/inventory.yaml"

func loadFixtureInventory(t *testing.T, path string) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.Load([]string{path}, nil)
	require.NoError(t, err)
	return inv
}

type wantRow struct {
	kind, rule, of, state, detail string
}

func TestReconcileRows(t *testing.T) {
	repo := specstest.Fixture(t)
	inv := loadFixtureInventory(t, fixtureInventory)
	cfg := specs.DefaultConfig()
	tests := []struct {
		group    string
		ref      string
		rows     map[string]wantRow
		order    []string
		summary  Summary
		line     string
		gaps     []specs.Gap
		families []string
	}{
		{
			group: "vlm", ref: "main",
			order: []string{"legacy-vl", "ocr-one", "ocr-one-l0", "alpha-vl-2b", "alpha-vl-2b-extra", "alpha-vl-2b-l0",
				"alpha-vl-2b-tp2", "beta-vl-7b", "beta-vl-7b-bf16", "beta-vl-7b-int8", "ocr-broken", "ocr-gone", "txt-one", "old-vl"},
			rows: map[string]wantRow{
				"alpha-vl-2b":     {"normal", specs.RuleOnlyProfile, "", StateOK, ""},
				"alpha-vl-2b-tp2": {"variant", specs.RuleParallel, "alpha-vl-2b", StateVariant, "in the inventory as a variant profile"},
				"alpha-vl-2b-l0":  {"partial", "partial.name-l0", "alpha-vl-2b", StatePartial, ""},
				// Unlisted: reported with its classification, never counted.
				"alpha-vl-2b-extra": {"variant", specs.RuleSameCheckpoint, "alpha-vl-2b", StateUnlisted, "not listed in tests/e2e/models/vislm/MODEL.toml"},
				// ci_tier l0_only does not make a profile partial.
				"beta-vl-7b":      {"normal", specs.RuleChosen, "", StateDrift, "precision: inventory fp32, spec fp16; bundle: inventory beta-7b.bundle, spec beta-vl-7b.bundle"},
				"beta-vl-7b-bf16": {"variant", specs.RuleSameCheckpoint, "beta-vl-7b", StateVariant, ""},
				"beta-vl-7b-int8": {"variant", "variant.quantization", "beta-vl-7b", StateVariant, ""},
				"ocr-one":         {"normal", specs.RuleOnlyProfile, "", StateExcluded, "excluded: public CI OOM; verified locally"},
				"ocr-one-l0":      {"partial", "partial.name-l0", "ocr-one", StatePartial, "in the inventory as a partial profile"},
				"ocr-broken":      {"-", "spec.malformed-json", "", StateInvalid, "malformed JSON: unexpected EOF"},
				"ocr-gone":        {"-", "spec.missing-file", "", StateInvalid, "listed in tests/e2e/models/ocrish/MODEL.toml but absent at "},
				"legacy-vl":       {"normal", specs.RuleOnlyProfile, "", StateMissing, "not in the inventory"},
				"txt-one":         {"normal", "inventory", "", StateStale, "its manifest has task_strategy text_generation_causal, which is in no group"},
				"old-vl":          {"normal", "inventory", "", StateStale, "no manifest named old-vl at "},
			},
			summary: Summary{Normal: 4, OK: 1, Missing: 1, Drift: 1, Excluded: 1, Variants: 3, Partials: 2, Stale: 2,
				Unlisted: 1, Invalid: 2, NeedAction: 7},
			line:     "vlm @ 1949a1a: 4 normal (1 ok, 1 missing, 1 drift, 1 excluded), 3 variants, 2 partials, 2 stale, 1 unlisted, 2 invalid; 7 need action",
			gaps:     []specs.Gap{},
			families: []string{"legacyvl", "ocrish", "vislm"},
		},
		{
			group: "detection", ref: "main",
			order: []string{"det-huge-tp2", "det-large", "det-large-fp16", "det-large-regression-resize", "det-large-tp4",
				"det-repro", "det-small", "det-small-tiny-random"},
			rows: map[string]wantRow{
				"det-small":             {"normal", specs.RuleOnlyProfile, "", StateOK, ""},
				"det-small-tiny-random": {"partial", "partial.name-tiny-random", "det-small", StatePartial, ""},
				// No precision: TRTMC's default fp32; the fp16 sibling is the variant.
				"det-large":                   {"normal", specs.RuleChosen, "", StateMissing, "not in the inventory"},
				"det-large-fp16":              {"variant", specs.RuleSameCheckpoint, "det-large", StateVariant, ""},
				"det-large-tp4":               {"variant", specs.RuleParallel, "det-large", StateVariant, ""},
				"det-large-regression-resize": {"partial", "partial.name-regression", "det-large", StatePartial, ""},
				"det-repro":                   {"partial", specs.RuleTestcaseCategories, "", StatePartial, ""},
				"det-huge-tp2":                {"variant", specs.RuleParallel, "", StateVariant, ""},
			},
			summary:  Summary{Normal: 2, OK: 1, Missing: 1, Variants: 3, Partials: 3, NeedAction: 1},
			line:     "detection @ 1949a1a: 2 normal (1 ok, 1 missing), 3 variants, 3 partials; 1 need action; 2 checkpoints without a normal profile",
			gaps:     []specs.Gap{{Checkpoint: "det-local-weights", Profiles: []string{"det-repro"}}, {Checkpoint: "example/det-huge", Profiles: []string{"det-huge-tp2"}}},
			families: []string{"detectors"},
		},
		{
			// At head: alpha's precision changed, gamma is new, and an
			// unattributable malformed manifest shows in every group.
			group: "detection", ref: "feature",
			order: []string{"det-huge-tp2", "det-large", "det-large-fp16", "det-large-regression-resize", "det-large-tp4",
				"det-repro", "det-small", "det-small-tiny-random", "orphan-one"},
			rows: map[string]wantRow{
				"orphan-one": {"-", "spec.malformed-json", "", StateInvalid, "malformed JSON"},
			},
			summary:  Summary{Normal: 2, OK: 1, Missing: 1, Variants: 3, Partials: 3, Invalid: 1, NeedAction: 2},
			line:     "detection @ 57fa17d: 2 normal (1 ok, 1 missing), 3 variants, 3 partials, 1 invalid; 2 need action; 2 checkpoints without a normal profile",
			gaps:     []specs.Gap{{Checkpoint: "det-local-weights", Profiles: []string{"det-repro"}}, {Checkpoint: "example/det-huge", Profiles: []string{"det-huge-tp2"}}},
			families: []string{"detectors"},
		},
		{
			group: "vlm", ref: "feature",
			order: []string{"legacy-vl", "ocr-one", "ocr-one-l0", "alpha-vl-2b", "alpha-vl-2b-extra", "alpha-vl-2b-l0",
				"alpha-vl-2b-tp2", "beta-vl-7b", "beta-vl-7b-bf16", "beta-vl-7b-int8", "gamma-vl-4b", "ocr-broken", "ocr-gone",
				"orphan-one", "txt-one", "old-vl"},
			rows: map[string]wantRow{
				"alpha-vl-2b": {"normal", specs.RuleOnlyProfile, "", StateDrift, "precision: inventory fp16, spec bf16"},
				"gamma-vl-4b": {"normal", specs.RuleOnlyProfile, "", StateMissing, "not in the inventory"},
			},
			summary: Summary{Normal: 5, Missing: 2, Drift: 2, Excluded: 1, Variants: 3, Partials: 2, Stale: 2,
				Unlisted: 1, Invalid: 3, NeedAction: 10},
			line:     "vlm @ 57fa17d: 5 normal (0 ok, 2 missing, 2 drift, 1 excluded), 3 variants, 2 partials, 2 stale, 1 unlisted, 3 invalid; 10 need action",
			gaps:     []specs.Gap{},
			families: []string{"legacyvl", "ocrish", "vislm"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.group+"@"+tt.ref, func(t *testing.T) {
			snap := repo.Snapshot(t, tt.ref)
			r := Reconcile(cfg, snap, inv, tt.group)
			var order []string
			got := map[string]Row{}
			for _, row := range r.Rows {
				order = append(order, row.Profile)
				got[row.Profile] = row
			}
			assert.Equal(t, tt.order, order)
			for name, want := range tt.rows {
				row, ok := got[name]
				if !assert.True(t, ok, "row %s", name) {
					continue
				}
				assert.Equal(t, want.kind, row.Kind, "%s kind", name)
				assert.Equal(t, want.rule, row.Rule, "%s rule", name)
				assert.Equal(t, want.of, row.Of, "%s of", name)
				assert.Equal(t, want.state, row.State, "%s state", name)
				if want.detail == "" {
					assert.Empty(t, row.Detail, "%s detail", name)
				} else {
					assert.Contains(t, row.Detail, want.detail, "%s detail", name)
				}
				needs := map[string]bool{StateMissing: true, StateStale: true, StateDrift: true, StateUnlisted: true, StateInvalid: true}
				assert.Equal(t, needs[row.State], row.NeedsAction, "%s needs action", name)
				assert.NotEmpty(t, row.Reason, "%s: every row says why", name)
			}
			assert.Equal(t, tt.summary, r.Summary)
			assert.Equal(t, tt.line, r.Line())
			assert.Equal(t, tt.gaps, r.Gaps)
			assert.Equal(t, tt.families, r.Families)
			assert.Equal(t, snap.Commit, r.Commit)
		})
	}
}

func TestReconcileDriftNamesEveryField(t *testing.T) {
	repo := specstest.Fixture(t)
	snap := repo.Snapshot(t, "main")
	inv := loadFixtureInventory(t, fixtureInventory)
	p, ok := inv.Find("alpha-vl-2b")
	require.True(t, ok)
	p.Checkpoint, p.Revision, p.Precision, p.Kind, p.Bundle.Path = "example/Other", "r2", "int4", "partial", "b/other.bundle"
	tp2, _ := inv.Find("alpha-vl-2b-tp2")
	tp2.VariantOf = "beta-vl-7b"
	r := Reconcile(specs.DefaultConfig(), snap, inv, "vlm")
	rows := map[string]Row{}
	for _, row := range r.Rows {
		rows[row.Profile] = row
	}
	assert.Equal(t, []FieldDiff{
		{"checkpoint", "example/Other", "example/Alpha-VL-2B"},
		{"revision", "r2", "1111111111111111111111111111111111111111"},
		{"precision", "int4", "fp16"},
		{"bundle", "other.bundle", "alpha-vl-2b.bundle"},
		{"kind", "partial", "normal"},
	}, rows["alpha-vl-2b"].Diffs)
	assert.Equal(t, []FieldDiff{{"variant_of", "beta-vl-7b", "alpha-vl-2b"}}, rows["alpha-vl-2b-tp2"].Diffs)
	assert.Equal(t, StateDrift, rows["alpha-vl-2b-tp2"].State, "a drifted variant needs action too")
	assert.Equal(t, 3, r.Summary.Drift, "alpha, its variant and beta")
}

func TestReconcileWithoutInventoryGroup(t *testing.T) {
	repo := specstest.Fixture(t)
	snap := repo.Snapshot(t, "main")
	r := Reconcile(specs.DefaultConfig(), snap, nil, "detection")
	assert.False(t, r.InventoryHasGroup)
	assert.Equal(t, 2, r.Summary.Missing)
	for _, row := range r.Rows {
		if row.State == StateMissing {
			assert.Contains(t, row.Detail, "it has no group detection")
		}
	}
}

func TestReconcileEmptyGroup(t *testing.T) {
	repo := specstest.Fixture(t)
	snap := repo.Snapshot(t, "main")
	cfg := specs.DefaultConfig()
	cfg.Groups["audio"] = &specs.GroupConfig{TaskStrategies: []string{"speech_to_text"}}
	r := Reconcile(cfg, snap, nil, "audio")
	assert.Empty(t, r.Rows)
	assert.Equal(t, "audio @ 1949a1a: no manifest has task strategy speech_to_text, and the inventory has no profile of the group; 0 need action", r.Line())
}

func TestReconcileOutputsGolden(t *testing.T) {
	repo := specstest.Fixture(t)
	snap := repo.Snapshot(t, "main")
	inv := loadFixtureInventory(t, fixtureInventory)
	r := Reconcile(specs.DefaultConfig(), snap, inv, "vlm")
	r.Repo = "fixture"

	var md bytes.Buffer
	require.NoError(t, r.Markdown(&md))
	golden.AssertFile(t, filepath.Join("testdata", "golden", "reconcile-vlm.md"), md.Bytes())

	js, err := json.MarshalIndent(r, "", "  ")
	require.NoError(t, err)
	golden.AssertFile(t, filepath.Join("testdata", "golden", "reconcile-vlm.json"), append(js, '\n'))

	var tsv strings.Builder
	tsv.WriteString(strings.Join(r.TableHeader(), "\t") + "\n")
	for _, row := range r.TableRows() {
		tsv.WriteString(strings.Join(row, "\t") + "\n")
	}
	golden.AssertFile(t, filepath.Join("testdata", "golden", "reconcile-vlm.tsv"), []byte(tsv.String()))
}

func TestClassifyPinnedNormal(t *testing.T) {
	repo := specstest.Fixture(t)
	snap := repo.Snapshot(t, "main")
	cfg := specs.DefaultConfig()
	cfg.Classify.NormalProfiles = map[string]string{"example/Beta-VL-7B": "beta-vl-7b-bf16"}
	got := map[string]specs.Classification{}
	for _, c := range specs.Classify(cfg, snap, "vlm") {
		got[c.Name] = c.Class
	}
	assert.Equal(t, specs.RulePinned, got["beta-vl-7b-bf16"].Rule)
	assert.Equal(t, "normal", got["beta-vl-7b-bf16"].Kind)
	assert.Equal(t, specs.Classification{Kind: "variant", Rule: specs.RuleSameCheckpoint, Of: "beta-vl-7b-bf16",
		Reason: "same checkpoint as beta-vl-7b-bf16; differs in precision fp16 vs bf16"}, got["beta-vl-7b"])
	assert.Equal(t, "beta-vl-7b-bf16", got["beta-vl-7b-int8"].Of)
}

func TestPartialNameTokenThatIsTheCheckpointsOwnName(t *testing.T) {
	cfg := specs.DefaultConfig()
	snap := &specs.Snapshot{Manifests: []*specs.Manifest{
		{Name: "patchy-regression-model", Checkpoint: "lab/patchy-regression-model", Group: "vlm", Listed: true,
			Testcases: []specs.Testcase{{Name: "x"}}, Raw: map[string]any{}},
		{Name: "patchy-regression-model-tp4", Checkpoint: "lab/patchy-regression-model", Group: "vlm", Listed: true,
			Parallel: &specs.Parallel{Mode: "tensor_parallel", TP: 4}, BuildArgs: []string{"parallel"},
			Testcases: []specs.Testcase{{Name: "x"}}, Raw: map[string]any{}},
		{Name: "moe-tiny-random", Checkpoint: "lab/tiny-random-moe", Group: "vlm", Listed: true,
			Testcases: []specs.Testcase{{Name: "x"}}, Raw: map[string]any{}},
	}}
	got := map[string]specs.Classification{}
	for _, c := range specs.Classify(cfg, snap, "vlm") {
		got[c.Name] = c.Class
	}
	assert.Equal(t, "normal", got["patchy-regression-model"].Kind, "a regression *model* is not a regression profile")
	assert.Equal(t, "variant", got["patchy-regression-model-tp4"].Kind)
	assert.Equal(t, "partial.checkpoint-random", got["moe-tiny-random"].Rule, "a random-weight checkpoint is partial")
}
