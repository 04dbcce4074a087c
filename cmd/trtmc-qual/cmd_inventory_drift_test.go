package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/drift"
)

func TestInventoryDriftCLI(t *testing.T) {
	fx := newSpecsFixture(t)
	tests := []struct {
		name   string
		args   []string
		code   exitCode
		stdout []string
		stderr []string
	}{
		{
			name: "vlm differs", code: exitFailed,
			args: []string{"inventory", "drift", "--repo", fx.Repo, "--base", "main", "--head", "feature", "--group", "vlm"},
			stdout: []string{
				"vislm\tmanifest\tmodified\ttests/e2e/models/vislm/manifests/alpha-vl-2b.json\talpha-vl-2b\t+2 -2 lines; precision: \"fp16\" → \"bf16\"; testcases[0].max_new_tokens: 8 → 16\n",
				"vislm\tthreshold\tmodified\ttests/e2e/models/vislm/thresholds/alpha-vl-2b.json\talpha-vl-2b\t+1 -1 lines; threshold_overrides.semantic_similarity: 0.8 → 0.7\n",
				"vislm\tmodel_toml\tmodified\ttests/e2e/models/vislm/MODEL.toml\t-\t+1 -0 lines; test_manifests +manifests/gamma-vl-4b.json\n",
				"vislm\treference\tadded\ttests/e2e/models/vislm/data/img2.png\t-\tbinary\n",
				"vislm\treference\tdeleted\ttests/e2e/models/vislm/data/img.jpeg\t-\t+0 -1 lines\n",
			},
			stderr: []string{"vlm: 7 files differ between main @ " + fx.Base[:7] + " and feature @ " + fx.Head[:7] + " (3 manifest, 1 model_toml, 2 reference, 1 threshold)\n"},
		},
		{
			name: "no drift", code: exitOK,
			args:   []string{"inventory", "drift", "--repo", fx.Repo, "--base", "main", "--head", fx.Base},
			stderr: []string{"detection,vlm: no spec drift between main @ " + fx.Base[:7]},
		},
		{
			// HEAD of the fixture is main: the default head.
			name: "default head", code: exitOK,
			args:   []string{"inventory", "drift", "--repo", fx.Repo, "--group", "detection", "--format", "md"},
			stdout: []string{"### Spec drift detection: `" + fx.Base[:7] + "` (main) → `" + fx.Base[:7] + "` (HEAD)"},
		},
		{
			name: "markdown", code: exitFailed,
			args:   []string{"inventory", "drift", "--repo", fx.Repo, "--head", "feature", "-g", "vlm", "-o", "md"},
			stdout: []string{"| vislm | threshold | modified | `tests/e2e/models/vislm/thresholds/alpha-vl-2b.json` | `alpha-vl-2b` |"},
		},
		{name: "unknown group", code: exitUsage,
			args: []string{"inventory", "drift", "--repo", fx.Repo, "--group", "audio"}, stderr: []string{`unknown group "audio"`}},
		{name: "unknown base", code: exitUsage,
			args: []string{"inventory", "drift", "--repo", fx.Repo, "--base", "nope"}, stderr: []string{`unknown ref "nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// drift needs no inventory or family configuration.
			code, out, errOut := runCLI(t, nil, tt.args...)
			assert.Equal(t, tt.code, code, "stderr: %s", errOut)
			for _, s := range tt.stdout {
				assert.Contains(t, out, s)
			}
			for _, s := range tt.stderr {
				assert.Contains(t, errOut, s)
			}
		})
	}
}

func TestInventoryDriftJSON(t *testing.T) {
	fx := newSpecsFixture(t)
	code, out, _ := runCLI(t, nil, "inventory", "drift", "--repo", fx.Repo, "--head", "feature", "--group", "vlm", "--format", "json")
	assert.Equal(t, exitFailed, code)
	var r drift.Report
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.Equal(t, drift.Schema, r.Schema)
	assert.Equal(t, fx.Base, r.BaseCommit)
	assert.Equal(t, fx.Head, r.HeadCommit)
	assert.Len(t, r.Changes, 7)
}

// TestInventoryDriftOptions: the flags reach the options (runF), the
// checks hold on the options alone, and the logic runs without cobra.
func TestInventoryDriftOptions(t *testing.T) {
	var got *inventoryDriftOptions
	code := withInventoryVerb(t, func(f *factory) *cobra.Command {
		return newInventoryDriftCmd(f, func(o *inventoryDriftOptions) error { got = o; return nil })
	}, "drift", "--repo", "r", "--base", "b", "--head", "h", "-g", "vlm,detection", "--spec-groups", "g.yaml", "-o", "md")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "r", got.Repo)
	assert.Equal(t, "b", got.Base)
	assert.Equal(t, "h", got.Head)
	assert.Equal(t, []string{"vlm", "detection"}, got.Groups)
	assert.Equal(t, "g.yaml", got.SpecGroups)
	assert.Equal(t, "md", got.Format)

	for want, o := range map[string]*inventoryDriftOptions{
		"--repo is required":        {},
		`invalid format "csv"`:      {Repo: "r", Format: "csv"},
		`"a/b" is not a valid name`: {Repo: "r", Groups: []string{"a/b"}},
	} {
		err := o.Validate()
		assert.Equal(t, exitUsage, codeFor(err), want)
		assert.ErrorContains(t, err, want)
	}

	fx := newSpecsFixture(t)
	io, out, errOut := testIO()
	err := runInventoryDrift(context.Background(), &inventoryDriftOptions{IO: io, Repo: fx.Repo, Base: "main", Head: "feature",
		Groups: []string{"vlm"}, Format: "json", NewGit: gitCLI})
	assert.Equal(t, exitFailed, codeFor(err), errOut.String())
	var r drift.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	assert.Len(t, r.Changes, 7)
}
