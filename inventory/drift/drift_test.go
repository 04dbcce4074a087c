package drift

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/specstest"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
)

func TestDrift(t *testing.T) {
	repo := specstest.Fixture(t)
	ctx := context.Background()
	type change struct{ path, category, status, profile, summary string }
	tests := []struct {
		name       string
		base, head string
		groups     []string
		want       []change
		families   []string
		line       string
	}{
		{
			name: "vlm differs", base: "main", head: "feature", groups: []string{"vlm"},
			want: []change{
				{"tests/e2e/models/orphan/manifests/orphan-one.json", "manifest", "added", "orphan-one", "+1 -0 lines; malformed at head: unexpected EOF"},
				{"tests/e2e/models/vislm/MODEL.toml", "model_toml", "modified", "", "+1 -0 lines; test_manifests +manifests/gamma-vl-4b.json"},
				{"tests/e2e/models/vislm/data/img.jpeg", "reference", "deleted", "", "+0 -1 lines"},
				{"tests/e2e/models/vislm/data/img2.png", "reference", "added", "", "binary"},
				{"tests/e2e/models/vislm/manifests/alpha-vl-2b.json", "manifest", "modified", "alpha-vl-2b",
					`+2 -2 lines; precision: "fp16" → "bf16"; testcases[0].max_new_tokens: 8 → 16`},
				{"tests/e2e/models/vislm/manifests/gamma-vl-4b.json", "manifest", "added", "gamma-vl-4b", "+10 -0 lines; name gamma-vl-4b"},
				{"tests/e2e/models/vislm/thresholds/alpha-vl-2b.json", "threshold", "modified", "alpha-vl-2b",
					"+1 -1 lines; threshold_overrides.semantic_similarity: 0.8 → 0.7"},
			},
			families: []string{"legacyvl", "ocrish", "orphan", "vislm"},
			line:     "vlm: 7 files differ between main @ 1949a1a and feature @ 57fa17d (3 manifest, 1 model_toml, 2 reference, 1 threshold)",
		},
		{
			// The text family changed too, but it is in no group.
			name: "detection unchanged", base: "main", head: "feature", groups: []string{"detection"},
			want: []change{
				{"tests/e2e/models/orphan/manifests/orphan-one.json", "manifest", "added", "orphan-one", "+1 -0 lines; malformed at head: unexpected EOF"},
			},
			families: []string{"detectors", "orphan"},
			line:     "detection: 1 file differs between main @ 1949a1a and feature @ 57fa17d (1 manifest)",
		},
		{
			name: "same ref", base: "main", head: "main", groups: []string{"vlm"},
			families: []string{"legacyvl", "ocrish", "vislm"},
			line:     "vlm: no spec drift between main @ 1949a1a and main @ 1949a1a in 3 families",
		},
		{
			name: "reverse direction", base: "feature", head: repo.Base[:12], groups: []string{"vlm"},
			want: []change{
				{"tests/e2e/models/orphan/manifests/orphan-one.json", "manifest", "deleted", "orphan-one", "+0 -1 lines; malformed at base: unexpected EOF"},
				{"tests/e2e/models/vislm/MODEL.toml", "model_toml", "modified", "", "+0 -1 lines; test_manifests -manifests/gamma-vl-4b.json"},
				{"tests/e2e/models/vislm/data/img.jpeg", "reference", "added", "", "+1 -0 lines"},
				{"tests/e2e/models/vislm/data/img2.png", "reference", "deleted", "", "binary"},
				{"tests/e2e/models/vislm/manifests/alpha-vl-2b.json", "manifest", "modified", "alpha-vl-2b",
					`+2 -2 lines; precision: "bf16" → "fp16"; testcases[0].max_new_tokens: 16 → 8`},
				{"tests/e2e/models/vislm/manifests/gamma-vl-4b.json", "manifest", "deleted", "gamma-vl-4b", "+0 -10 lines; name gamma-vl-4b"},
				{"tests/e2e/models/vislm/thresholds/alpha-vl-2b.json", "threshold", "modified", "alpha-vl-2b",
					"+1 -1 lines; threshold_overrides.semantic_similarity: 0.7 → 0.8"},
			},
			families: []string{"legacyvl", "ocrish", "orphan", "vislm"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Drift(ctx, repo.Source(), tt.base, tt.head, tt.groups)
			require.NoError(t, err)
			var got []change
			for _, c := range r.Changes {
				got = append(got, change{c.Path, c.Category, c.Status, c.Profile, c.Summary})
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.families, r.Families)
			if tt.line != "" {
				assert.Equal(t, tt.line, r.Line())
			}
		})
	}
}

func TestDriftAllGroupsAndUnknownGroup(t *testing.T) {
	repo := specstest.Fixture(t)
	ctx := context.Background()
	r, err := Drift(ctx, repo.Source(), "main", "feature", nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"detection", "vlm"}, r.Groups)
	assert.Equal(t, map[string]int{"manifest": 3, "model_toml": 1, "reference": 2, "threshold": 1}, r.ByCategory)
	for _, c := range r.Changes {
		assert.NotEqual(t, "texty", c.Family, "a family of no group is not checked")
		if c.Family == "orphan" {
			assert.Equal(t, "?", c.Groups)
		}
	}

	_, err = Drift(ctx, repo.Source(), "main", "feature", []string{"audio"})
	assert.ErrorIs(t, err, specs.ErrUnknownGroup)
	_, err = Drift(ctx, repo.Source(), "main", "nope", []string{"vlm"})
	assert.ErrorIs(t, err, gitread.ErrUnknownRef)
}

func TestDriftOutputsGolden(t *testing.T) {
	repo := specstest.Fixture(t)
	r, err := Drift(context.Background(), repo.Source(), "main", "feature", []string{"vlm"})
	require.NoError(t, err)
	var md bytes.Buffer
	require.NoError(t, r.Markdown(&md))
	golden.AssertFile(t, filepath.Join("testdata", "golden", "drift-vlm.md"), md.Bytes())
	js, err := json.MarshalIndent(r, "", "  ")
	require.NoError(t, err)
	golden.AssertFile(t, filepath.Join("testdata", "golden", "drift-vlm.json"), append(js, '\n'))
}
