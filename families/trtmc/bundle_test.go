package trtmc

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// fixtureRepo is a git repository shaped like TRTMC with one VLM family.
func fixtureRepo(t *testing.T, manifest string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed")
	}
	d := t.TempDir()
	fam := filepath.Join(d, "tests", "e2e", "models", "deepseek_ocr")
	require.NoError(t, os.MkdirAll(filepath.Join(fam, "manifests"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(fam, "MODEL.toml"), []byte("id = \"deepseek_ocr\"\ntest_manifests = [\"manifests/deepseek-ocr.json\"]\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(fam, "manifests", "deepseek-ocr.json"), []byte(manifest), 0o644))
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "specs"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = d
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
	}
	return d
}

const deepseekManifest = `{"name": "deepseek-ocr", "hf_id": "deepseek-ai/DeepSeek-OCR-2", "bundle": "deepseek-ocr.bundle",
 "family": "deepseek_ocr", "runtime_strategy": "deepseek_ocr_vision_language", "task_strategy": "vision_language_generation",
 "precision": "fp16", "fp32_layers": [6, 7, 8], "max_cache_length": 4096, "trust_remote_code": true,
 "testcases": [{"name": "deepseek-ocr", "prompt": "OCR this."}]}`

func TestBuildArgvIsTRTMCsBuildCommand(t *testing.T) {
	repo := fixtureRepo(t, deepseekManifest)
	cfg, err := specs.LoadConfig("")
	require.NoError(t, err)
	snap, err := specs.Source{Git: gitread.CLI{Repo: repo}, Config: cfg, Repo: repo}.Read(context.Background(), "HEAD")
	require.NoError(t, err)
	require.Len(t, snap.Manifests, 1)
	argv, err := BuildArgv("python3", snap.Manifests[0], "/b/deepseek-ocr.bundle", repo)
	require.NoError(t, err)
	assert.Equal(t, []string{"python3", "-m", "tensorrt_model_connect.__main__", "build", "deepseek-ai/DeepSeek-OCR-2",
		"-o", "/b/deepseek-ocr.bundle", "--max-cache-length", "4096", "--precision", "fp16", "--fp32-layers", "6,7,8",
		"--trust-remote-code"}, argv)

	m := *snap.Manifests[0]
	m.Raw = map[string]any{"build_env": map[string]any{"X": "y"}}
	_, err = BuildArgv("python3", &m, "/b/x.bundle", repo)
	assert.ErrorContains(t, err, "uses build_env, which trtmc-qual does not translate")

	// The newer layout builds through the family's declared CLI: refused,
	// naming the manifest and what to do, rather than composed wrongly.
	m = *snap.Manifests[0]
	m.Layout, m.Path = specs.LayoutFamilies, "families/deepseek_ocr/tests/manifests/deepseek-ocr.json"
	_, err = BuildArgv("python3", &m, "/b/x.bundle", repo)
	assert.ErrorContains(t, err, "manifest families/deepseek_ocr/tests/manifests/deepseek-ocr.json is in TRTMC's newer layout")
	assert.ErrorContains(t, err, "families/deepseek_ocr/cli.json")
	assert.ErrorContains(t, err, "--search")
}

func TestPrepareBundle(t *testing.T) {
	trtmctest.OnPath(t)
	ctx := context.Background()
	d := t.TempDir()
	o := BundleOptions{Profile: "deepseek-ocr", Bundle: filepath.Join(d, "inv", "bundles", "deepseek-ocr.bundle"),
		Runner: proc.OS{}, Stdout: io.Discard, Stderr: io.Discard}

	// Missing, nowhere to find it: a clear error naming the profile.
	_, err := PrepareBundle(ctx, o)
	assert.ErrorContains(t, err, "profile deepseek-ocr: bundle")
	assert.ErrorContains(t, err, "is missing")

	// An already-built bundle in a search directory is linked, not copied.
	built := filepath.Join(d, "built")
	require.NoError(t, os.MkdirAll(built, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(built, "deepseek-ocr.bundle"), []byte("engine"), 0o644))
	o.Search = []string{filepath.Join(d, "nothing-here"), built}
	rc, err := PrepareBundle(ctx, o)
	require.NoError(t, err)
	assert.Equal(t, "linked", rc.Source)
	assert.Equal(t, fileio.SHA256([]byte("engine")), rc.SHA256)
	fi, err := os.Lstat(o.Bundle)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink)
	var back Receipt
	data, err := os.ReadFile(o.Bundle + ".receipt.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, rc.SHA256, back.SHA256)

	// Present: recorded as it is.
	rc, err = PrepareBundle(ctx, o)
	require.NoError(t, err)
	assert.Equal(t, "existing", rc.Source)

	// Built from the manifest with TRTMC's command.
	repo := fixtureRepo(t, deepseekManifest)
	cfg, err := specs.LoadConfig("")
	require.NoError(t, err)
	b := BundleOptions{Profile: "deepseek-ocr", Bundle: filepath.Join(d, "new", "deepseek-ocr.bundle"), Build: true,
		Repo: repo, Ref: "HEAD", Python: "python3", Specs: cfg, Git: gitread.CLI{Repo: repo},
		Runner: proc.OS{}, Stdout: io.Discard, Stderr: io.Discard}
	rc, err = PrepareBundle(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, "built", rc.Source)
	assert.Equal(t, "tests/e2e/models/deepseek_ocr/manifests/deepseek-ocr.json", rc.Manifest)
	assert.Len(t, rc.Commit, 40)
	assert.Contains(t, rc.Argv, "--fp32-layers")

	// A build that fails, or a bundle name the manifest does not have.
	t.Setenv("FAKE_BUILD", "fail")
	b.Bundle = filepath.Join(d, "fail", "deepseek-ocr.bundle")
	_, err = PrepareBundle(ctx, b)
	assert.ErrorContains(t, err, "CUDA out of memory")
	b.Bundle = filepath.Join(d, "fail", "other-name.bundle")
	_, err = PrepareBundle(ctx, b)
	assert.ErrorContains(t, err, "is not the manifest's bundle deepseek-ocr.bundle")
}
