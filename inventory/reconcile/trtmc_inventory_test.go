package reconcile

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/specstest"
)

// vlmSpec is the part of a TRTMC vlm manifest at e9132e79 that reconcile
// reads (tests/e2e/models/<family>/manifests/<name>.json): synthetic files
// carrying those facts, not TRTMC's content.
type vlmSpec struct {
	family, name, hf, revision, bundle, precision string
	tp                                            int
	ciTier                                        string
}

var vlmAtE9132e7 = []vlmSpec{
	{"deepseek_ocr", "deepseek-ocr", "deepseek-ai/DeepSeek-OCR-2", "", "deepseek-ocr.bundle", "fp16", 0, ""},
	{"deepseek_ocr", "deepseek-ocr-l0", "deepseek-ai/DeepSeek-OCR-2", "", "deepseek-ocr-l0.bundle", "fp16", 0, ""},
	{"deepseek_ocr", "deepseek-ocr-l0-tp2", "deepseek-ai/DeepSeek-OCR-2", "", "deepseek-ocr-l0-tp2.bundle", "", 2, ""},
	{"internvl", "internvl3-2b", "OpenGVLab/InternVL3-2B-hf", "", "internvl3-2b-vl.bundle", "fp16", 0, "l0_only"},
	{"internvl", "internvl3-2b-tp2", "OpenGVLab/InternVL3-2B-hf", "", "internvl3-2b-tp2-vl.bundle", "", 2, ""},
	{"internvl", "internvl3-8b", "OpenGVLab/InternVL3-8B-hf", "", "internvl3-8b-vl.bundle", "fp16", 0, ""},
	{"internvl", "internvl3-8b-tp4", "OpenGVLab/InternVL3-8B-hf", "", "internvl3-8b-tp4-vl.bundle", "", 4, ""},
	{"lance", "lance-3b-x2t-image", "bytedance-research/Lance", "7395315758865e6f56ab87ad06a88c7ac172f056", "lance-3b-x2t-image.bundle", "bf16", 0, ""},
	{"locateanything", "locateanything-3b", "nvidia/LocateAnything-3B", "", "locateanything-3b.bundle", "fp16", 0, ""},
	{"phi4_multimodal", "phi4-multimodal", "microsoft/Phi-4-multimodal-instruct", "", "phi4-multimodal.bundle", "fp16", 0, ""},
	{"qwen_vl", "qwen25vl-3b", "Qwen/Qwen2.5-VL-3B-Instruct", "", "qwen25vl-3b-vl.bundle", "fp32", 0, ""},
	{"qwen_vl", "qwen25vl-3b-tp2", "Qwen/Qwen2.5-VL-3B-Instruct", "", "qwen25vl-3b-vl-tp2.bundle", "", 2, ""},
	{"qwen_vl", "qwen3-vl-2b", "Qwen/Qwen3-VL-2B-Instruct", "", "qwen3-vl-2b.bundle", "bf16", 0, ""},
	{"qwen_vl", "qwen3-vl-2b-tp4", "Qwen/Qwen3-VL-2B-Instruct", "", "qwen3-vl-2b-tp4.bundle", "", 4, ""},
}

// writeVLMSpecs writes the manifests and each family's MODEL.toml.
func writeVLMSpecs(t *testing.T, dir string, specs []vlmSpec) {
	t.Helper()
	byFamily := map[string][]string{}
	for _, s := range specs {
		m := map[string]any{"name": s.name, "hf_id": s.hf, "bundle": s.bundle, "family": s.family,
			"runtime_strategy": s.family + "_vision_language", "task_strategy": "vision_language_generation",
			"testcases": []any{map[string]any{"name": s.name, "prompt": "Describe this image.", "test_image": "data/test_img.jpeg"}}}
		if s.revision != "" {
			m["hf_revision"] = s.revision
		}
		if s.precision != "" {
			m["precision"] = s.precision
		}
		if s.ciTier != "" {
			m["testcases"].([]any)[0].(map[string]any)["ci_tier"] = s.ciTier
		}
		if s.tp > 1 {
			m["build_args"] = map[string]any{"parallel": map[string]any{"mode": "tensor_parallel", "tp_size": s.tp}}
			m["distributed_runtime"] = map[string]any{"enabled": true, "launcher": "mpirun", "world_size": s.tp}
		}
		data, err := json.MarshalIndent(m, "", "  ")
		require.NoError(t, err)
		p := filepath.Join(dir, "tests", "e2e", "models", s.family, "manifests", s.name+".json")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, data, 0o644))
		byFamily[s.family] = append(byFamily[s.family], "manifests/"+s.name+".json")
	}
	for fam, list := range byFamily {
		sort.Strings(list)
		toml := "id = \"" + fam + "\"\nplugin = \"" + fam + "\"\ntest_manifests = [\n  \"" + strings.Join(list, "\",\n  \"") +
			"\",\n]\n\n[e2e_defaults.vision_language_generation]\nreference_backend = \"hf_transformers\"\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tests", "e2e", "models", fam, "MODEL.toml"), []byte(toml), 0o644))
	}
}

func shippedTRTMCInventory(t *testing.T) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.Load([]string{"../trtmc.yaml"}, nil)
	require.NoError(t, err)
	return inv
}

// The shipped inventory/trtmc.yaml against a repository shaped like TRTMC's
// vlm group at e9132e79: every normal profile ok, the TP variants variants,
// the L0 profiles excluded partials; then the specs move and reconcile
// says so.
func TestShippedTRTMCInventoryReconciles(t *testing.T) {
	dir := t.TempDir()
	specstest.RunGit(t, dir, "init", "-q", "-b", "main")
	writeVLMSpecs(t, dir, vlmAtE9132e7)
	specstest.RunGit(t, dir, "add", ".")
	specstest.RunGit(t, dir, "commit", "-q", "-m", "vlm specs as at e9132e7")
	cfg := specs.DefaultConfig()
	src := specs.Source{Git: gitread.CLI{Repo: dir}, Config: cfg, Repo: "TensorRT-Model-Connect"}
	snap, err := src.Read(context.Background(), "main")
	require.NoError(t, err)
	require.Empty(t, snap.Problems)

	r := Reconcile(cfg, snap, shippedTRTMCInventory(t), "vlm")
	assert.Equal(t, Summary{Normal: 8, OK: 8, Variants: 4, Partials: 2}, r.Summary, r.Line())
	for _, row := range r.Rows {
		switch row.Kind {
		case "normal":
			assert.Equal(t, StateOK, row.State, row.Profile)
		case "variant":
			assert.Equal(t, StateVariant, row.State, row.Profile)
		case "partial":
			assert.Equal(t, StateExcluded, row.State, row.Profile)
		}
	}

	// Main moves: a precision changes, a ninth checkpoint appears.
	moved := append([]vlmSpec(nil), vlmAtE9132e7...)
	for i := range moved {
		if moved[i].name == "qwen3-vl-2b" {
			moved[i].precision = "fp16"
		}
	}
	moved = append(moved, vlmSpec{"qwen_vl", "qwen3-vl-8b", "Qwen/Qwen3-VL-8B-Instruct", "", "qwen3-vl-8b.bundle", "bf16", 0, ""})
	writeVLMSpecs(t, dir, moved)
	specstest.RunGit(t, dir, "add", ".")
	specstest.RunGit(t, dir, "commit", "-q", "-m", "main moves")
	snap, err = src.Read(context.Background(), "main")
	require.NoError(t, err)
	r = Reconcile(cfg, snap, shippedTRTMCInventory(t), "vlm")
	states := map[string]string{}
	for _, row := range r.Rows {
		states[row.Profile] = row.State + " " + row.Detail
	}
	assert.Contains(t, states["qwen3-vl-2b"], "drift")
	assert.Contains(t, states["qwen3-vl-2b"], "precision")
	assert.Contains(t, states["qwen3-vl-8b"], "missing")
	assert.Equal(t, 2, r.Summary.NeedAction)
}

// detrManifest is families/detr/tests/manifests/detr-resnet-50.json in
// TRTMC's newer layout, in its two stored versions (idx@018ef2c9: fp32,
// input_size 800; idx@481eb058, the later: fp16 at 796x1333, testcase
// score_threshold 0.5): the facts reconcile reads, not TRTMC's file.
func detrManifest(later bool) string {
	build := `"precision": "fp32", "input_size": 800`
	tc := `{"name": "detr-resnet-50", "premerge": true, "test_image": "data/test_img.jpeg"}`
	if later {
		build = `"precision": "fp16", "image_height": 796, "image_width": 1333`
		tc = `{"name": "detr-resnet-50", "premerge": true, "test_image": "data/test_img.jpeg", "score_threshold": 0.5}`
	}
	return `{"name": "detr-resnet-50", "hf_id": "facebook/detr-resnet-50", "hf_revision": "1d5f47bd3bdd2c4bbfa585418ffe6da5028b4c0b",
  "bundle": "detr-resnet-50.bundle", "family": "detr", "task": "object_detection", ` + build + `,
  "testcases": [` + tc + `], "tensor_parallel_size": 1, "max_sequence_length": 1}
`
}

// The shipped detection inventory pins the later DETR manifest: reconciled
// against it, detr-resnet-50 is ok; against the earlier one, its precision
// drifts. Either way the row names the manifest version it read (the
// file's git object id), so a reader sees which one it was.
func TestShippedDETRPinsTheLaterManifest(t *testing.T) {
	inv, err := inventory.Load([]string{"../trtmc-detection.yaml"}, nil)
	require.NoError(t, err)
	dir := t.TempDir()
	specstest.RunGit(t, dir, "init", "-q", "-b", "main")
	p := filepath.Join(dir, "families", "detr", "tests", "manifests", "detr-resnet-50.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	cfg := specs.DefaultConfig()
	src := specs.Source{Git: gitread.CLI{Repo: dir}, Config: cfg, Repo: "TensorRT-Model-Connect"}
	rowAt := func(later bool) Row {
		require.NoError(t, os.WriteFile(p, []byte(detrManifest(later)), 0o644))
		specstest.RunGit(t, dir, "add", ".")
		specstest.RunGit(t, dir, "commit", "-q", "-m", "detr manifest")
		snap, err := src.Read(context.Background(), "main")
		require.NoError(t, err)
		for _, row := range Reconcile(cfg, snap, inv, "detection").Rows {
			if row.Profile == "detr-resnet-50" {
				return row
			}
		}
		t.Fatal("no detr-resnet-50 row")
		return Row{}
	}
	earlier := rowAt(false)
	assert.Equal(t, StateDrift, earlier.State)
	assert.Contains(t, earlier.Detail, "precision: inventory fp16, spec fp32")
	later := rowAt(true)
	assert.Equal(t, StateOK, later.State, later.Detail)
	for _, r := range []struct {
		row     Row
		version string
	}{{earlier, detrManifest(false)}, {later, detrManifest(true)}} {
		assert.Equal(t, "families/detr/tests/manifests/detr-resnet-50.json", r.row.Manifest)
		assert.Equal(t, specs.BlobID([]byte(r.version)), r.row.ManifestBlob)
	}
	assert.NotEqual(t, earlier.ManifestBlob, later.ManifestBlob)
	assert.Equal(t, specstest.RunGit(t, dir, "rev-parse", "main:families/detr/tests/manifests/detr-resnet-50.json"), later.ManifestBlob,
		"the blob id is git's own")
}
