package reconcile

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
)

// realCommit is the public NVIDIA/TensorRT-Model-Connect main commit that
// docs/reconcile.md shows (2026-08-22, "perf(modernbert): execute actual
// sequence length (#985)").
const realCommit = "e9132e79fba1bd22e5b121a4f339268e64a6faaf"

// TestRealTRTMC checks the reader and the classifier against a local clone
// of the real repository. It needs no network: set TRTMC_REPO to a clone
// (or bare mirror) that has realCommit; without it the test is skipped.
func TestRealTRTMC(t *testing.T) {
	repo := os.Getenv("TRTMC_REPO")
	if repo == "" {
		t.Skip("set TRTMC_REPO to a clone of NVIDIA/TensorRT-Model-Connect to run this test")
	}
	cfg := specs.DefaultConfig()
	src := specs.Source{Git: gitread.CLI{Repo: repo}, Config: cfg, Repo: "NVIDIA/TensorRT-Model-Connect"}
	snap, err := src.Read(context.Background(), realCommit)
	require.NoError(t, err)
	assert.Empty(t, snap.Problems, "every manifest is listed and well-formed at this commit")
	assert.Len(t, snap.Manifests, 221)

	r := Reconcile(cfg, snap, nil, "vlm")
	kinds := map[string]string{}
	for _, row := range r.Rows {
		kinds[row.Profile] = row.Kind + " " + row.Rule
	}
	assert.Equal(t, map[string]string{
		"deepseek-ocr":        "normal normal.only-profile",
		"deepseek-ocr-l0":     "partial partial.name-l0",
		"deepseek-ocr-l0-tp2": "partial partial.name-l0",
		"internvl3-2b":        "normal normal.only-profile", // its testcase's ci_tier l0_only does not make it partial
		"internvl3-2b-tp2":    "variant variant.build_args.parallel",
		"internvl3-8b":        "normal normal.only-profile",
		"internvl3-8b-tp4":    "variant variant.build_args.parallel",
		"lance-3b-x2t-image":  "normal normal.only-profile",
		"locateanything-3b":   "normal normal.only-profile",
		"phi4-multimodal":     "normal normal.only-profile",
		"qwen25vl-3b":         "normal normal.only-profile",
		"qwen25vl-3b-tp2":     "variant variant.build_args.parallel",
		"qwen3-vl-2b":         "normal normal.only-profile",
		"qwen3-vl-2b-tp4":     "variant variant.build_args.parallel",
	}, kinds)
	assert.Equal(t, Summary{Normal: 8, Missing: 8, Variants: 4, Partials: 2, NeedAction: 8}, r.Summary)

	det := Reconcile(cfg, snap, nil, "detection")
	assert.Empty(t, det.Rows, "no manifest has task_strategy object_detection at this commit")

	// The shipped TRTMC inventory: every normal profile ok at the pin.
	shipped := Reconcile(cfg, snap, shippedTRTMCInventory(t), "vlm")
	assert.Equal(t, Summary{Normal: 8, OK: 8, Variants: 4, Partials: 2}, shipped.Summary, shipped.Line())
}
