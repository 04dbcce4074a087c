package specs_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/specstest"
)

func TestSourceReadsTheCommitNotTheWorkTree(t *testing.T) {
	repo := specstest.Fixture(t)
	snap := repo.Snapshot(t, "main")

	assert.Equal(t, repo.Base, snap.Commit, "the ref is resolved and recorded")
	assert.Equal(t, "main", snap.Ref)
	byName := map[string]*specs.Manifest{}
	for _, m := range snap.Manifests {
		byName[m.Name] = m
	}
	// The work tree says int4 and has an untracked manifest; the commit does not.
	require.Contains(t, byName, "alpha-vl-2b")
	assert.Equal(t, "fp16", byName["alpha-vl-2b"].Precision)
	assert.NotContains(t, byName, "untracked")

	alpha := byName["alpha-vl-2b"]
	assert.Equal(t, "example/Alpha-VL-2B", alpha.Checkpoint)
	assert.Equal(t, "hf_id", alpha.CheckpointField)
	assert.Equal(t, "1111111111111111111111111111111111111111", alpha.Revision)
	assert.Equal(t, "alpha-vl-2b.bundle", alpha.Bundle)
	assert.Equal(t, "vislm", alpha.Family)
	assert.Equal(t, "vision_language_generation", alpha.TaskStrategy)
	assert.Equal(t, "vlm", alpha.Group)
	assert.True(t, alpha.Listed)
	assert.Equal(t, []specs.Testcase{{Name: "alpha-vl-2b", CITier: "nightly_only"}}, alpha.Testcases)

	tp2 := byName["alpha-vl-2b-tp2"]
	assert.Equal(t, &specs.Parallel{Mode: "tensor_parallel", TP: 2, Field: "build_args.parallel"}, tp2.Parallel)
	assert.True(t, tp2.Distributed)
	assert.Empty(t, tp2.Precision)
	assert.Equal(t, "fp32", tp2.EffectivePrecision(specs.DefaultConfig()), "TRTMC's catalog default")

	assert.Equal(t, "int8", byName["beta-vl-7b-int8"].Quantization)
	assert.Equal(t, "model_id", byName["det-repro"].CheckpointField)
	assert.False(t, byName["det-repro"].Parallel.Multi(), "mode single is one device")
	assert.Equal(t, "detection", byName["det-small"].Group)
	assert.Equal(t, "", byName["txt-one"].Group, "text is in no configured group")

	// A family folder without MODEL.toml: manifests are globbed, as TRTMC's catalog does.
	assert.True(t, byName["legacy-vl"].Listed)

	type prob struct{ kind, path string }
	var got []prob
	for _, p := range snap.Problems {
		got = append(got, prob{p.Kind, p.Path})
		assert.Equal(t, []string{"vlm"}, p.Groups, "%s is attributed to vlm", p.Path)
	}
	assert.Equal(t, []prob{
		{specs.ProblemMalformedJSON, "tests/e2e/models/ocrish/manifests/ocr-broken.json"},
		{specs.ProblemMissingFile, "tests/e2e/models/ocrish/manifests/ocr-gone.json"},
		{specs.ProblemUnlisted, "tests/e2e/models/vislm/manifests/alpha-vl-2b-extra.json"},
	}, got, "unlisted, missing and malformed manifests are reported, not skipped")
	assert.False(t, byName["alpha-vl-2b-extra"].Listed)

	fams := map[string]*specs.Family{}
	for _, f := range snap.Families {
		fams[f.Dir] = f
	}
	assert.Equal(t, []string{"vlm"}, fams["ocrish"].Groups)
	assert.Equal(t, []string{"object_detection"}, fams["detectors"].TaskStrategies)
	assert.Equal(t, "tests/e2e/models/vislm/MODEL.toml", fams["vislm"].ModelTOML)
	assert.Empty(t, fams["legacyvl"].ModelTOML)
	assert.Equal(t, []string{"legacyvl", "ocrish", "vislm"}, snap.FamiliesOf("vlm"))
}

func TestSourceUnattributedProblemShowsInEveryGroup(t *testing.T) {
	repo := specstest.Fixture(t)
	snap := repo.Snapshot(t, "feature")
	assert.Equal(t, repo.Head, snap.Commit)
	var orphan *specs.Problem
	for _, p := range snap.Problems {
		if p.Dir == "orphan" {
			orphan = p
		}
	}
	require.NotNil(t, orphan)
	assert.Equal(t, specs.ProblemMalformedJSON, orphan.Kind)
	assert.True(t, orphan.Unattributed)
	for _, g := range []string{"vlm", "detection"} {
		assert.Contains(t, snap.ProblemsFor(g), orphan, "group %s", g)
	}
}

func TestSourceErrors(t *testing.T) {
	repo := specstest.Fixture(t)
	ctx := context.Background()
	tests := []struct {
		name string
		git  gitread.CLI
		ref  string
		want error
	}{
		{"unknown ref", gitread.CLI{Repo: repo.Dir}, "no-such-branch", gitread.ErrUnknownRef},
		{"option-like ref", gitread.CLI{Repo: repo.Dir}, "--all", gitread.ErrUnknownRef},
		{"not a repository", gitread.CLI{Repo: t.TempDir()}, "main", gitread.ErrNotRepository},
		{"missing directory", gitread.CLI{Repo: filepath.Join(t.TempDir(), "nope")}, "main", gitread.ErrNotRepository},
		{"no git", gitread.CLI{Repo: repo.Dir, Bin: filepath.Join(t.TempDir(), "git")}, "main", gitread.ErrGitUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := specs.Source{Git: tt.git, Config: specs.DefaultConfig()}.Read(ctx, tt.ref)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tt.want), "got %v", err)
		})
	}
	t.Run("not a TRTMC checkout", func(t *testing.T) {
		cfg := specs.DefaultConfig()
		cfg.ModelsRoot = "no/such/root"
		_, err := specs.Source{Git: gitread.CLI{Repo: repo.Dir}, Config: cfg}.Read(ctx, "main")
		assert.ErrorIs(t, err, specs.ErrNotTRTMC)
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := specs.Source{Git: gitread.CLI{Repo: repo.Dir}, Config: specs.DefaultConfig()}.Read(cctx, "main")
		assert.ErrorIs(t, err, context.Canceled)
	})
}

func TestGitReadFilesAndDiff(t *testing.T) {
	repo := specstest.Fixture(t)
	g := gitread.CLI{Repo: repo.Dir}
	ctx := context.Background()
	files, err := g.ReadFiles(ctx, repo.Base, []string{
		"tests/e2e/models/vislm/MODEL.toml", "tests/e2e/models/nope.json", "tests/e2e/models/vislm"})
	require.NoError(t, err)
	assert.Contains(t, string(files["tests/e2e/models/vislm/MODEL.toml"]), `id = "vislm"`)
	assert.NotContains(t, files, "tests/e2e/models/nope.json", "absent files are absent, not errors")
	assert.NotContains(t, files, "tests/e2e/models/vislm", "a directory is not a file")

	changes, err := g.Diff(ctx, repo.Base, repo.Head, []string{"tests/e2e/models/vislm/"})
	require.NoError(t, err)
	assert.Contains(t, changes, gitread.FileChange{Path: "tests/e2e/models/vislm/data/img2.png", Status: "A", Added: -1, Deleted: -1})
	assert.Contains(t, changes, gitread.FileChange{Path: "tests/e2e/models/vislm/manifests/alpha-vl-2b.json", Status: "M", Added: 2, Deleted: 2})
	assert.Len(t, changes, 6)
}
