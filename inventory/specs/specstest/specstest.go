// Package specstest builds the fixture TRTMC repository that the tests of
// inventory/specs, inventory/reconcile, inventory/drift and qual/ci
// read: a throwaway git repository from inventory/specs/testdata/trtmc-base
// (a commit on main) and trtmc-head (a second commit on branch feature).
// Its work tree is left dirty on purpose: every read must come from a
// commit. For tests only.
package specstest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
)

// Repo is the fixture repository.
type Repo struct {
	Dir  string
	Base string // sha of main
	Head string // sha of feature
}

// headDeletes are removed in the head commit.
var headDeletes = []string{"tests/e2e/models/vislm/data/img.jpeg"}

// Testdata is inventory/specs/testdata, wherever the test runs.
func Testdata() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata")
}

// GitEnv makes commits reproducible (same shas on every machine) and keeps
// the user's git configuration out of the tests.
func GitEnv() []string {
	return append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Fixture", "GIT_AUTHOR_EMAIL=fixture@example.invalid",
		"GIT_COMMITTER_NAME=Fixture", "GIT_COMMITTER_EMAIL=fixture@example.invalid",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
		"LC_ALL=C")
}

// RunGit runs git in dir and returns its trimmed output.
func RunGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = GitEnv()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// shared is built once per test binary: the fixture repository is only
// ever read, so every test can use it. Main removes it.
var shared struct {
	once sync.Once
	repo Repo
	err  error
	dir  string
}

// Main runs the tests and removes the shared fixture repository:
//
//	func TestMain(m *testing.M) { os.Exit(specstest.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	return code
}

// Fixture returns the shared fixture repository, building it on first use;
// it skips the test when git is not installed.
func Fixture(t *testing.T) Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "specs-fixture-")
		if shared.err != nil {
			return
		}
		ft := &onceT{TB: t}
		shared.repo = Build(ft, shared.dir)
		if ft.failed {
			shared.err = fmt.Errorf("building the fixture repository failed")
		}
	})
	require.NoError(t, shared.err)
	return shared.repo
}

// onceT records a failure while building the shared fixture.
type onceT struct {
	testing.TB
	failed bool
}

func (o *onceT) Errorf(format string, args ...any) { o.failed = true; o.TB.Errorf(format, args...) }
func (o *onceT) FailNow()                          { o.failed = true; o.TB.FailNow() }

// Build builds the fixture repository in dir.
func Build(t testing.TB, dir string) Repo {
	t.Helper()
	RunGit(t, dir, "init", "-q", "-b", "main")
	golden.CopyTree(t, filepath.Join(Testdata(), "trtmc-base"), dir)
	RunGit(t, dir, "add", "-A")
	RunGit(t, dir, "commit", "-q", "-m", "base: fixture specs")
	base := RunGit(t, dir, "rev-parse", "HEAD")
	RunGit(t, dir, "checkout", "-q", "-b", "feature")
	golden.CopyTree(t, filepath.Join(Testdata(), "trtmc-head"), dir)
	for _, p := range headDeletes {
		require.NoError(t, os.Remove(filepath.Join(dir, p)))
	}
	RunGit(t, dir, "add", "-A")
	RunGit(t, dir, "commit", "-q", "-m", "head: change specs")
	head := RunGit(t, dir, "rev-parse", "HEAD")
	RunGit(t, dir, "checkout", "-q", "main")
	// Dirty the work tree: an uncommitted edit and an untracked manifest.
	m := filepath.Join(dir, "tests/e2e/models/vislm/manifests/alpha-vl-2b.json")
	data, err := os.ReadFile(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(m, []byte(strings.Replace(string(data), `"fp16"`, `"int4"`, 1)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tests/e2e/models/vislm/manifests/untracked.json"), []byte("{"), 0o644))
	return Repo{Dir: dir, Base: base, Head: head}
}

// Source reads the fixture with the default spec-groups configuration.
func (r Repo) Source() specs.Source {
	return specs.Source{Git: gitread.CLI{Repo: r.Dir}, Config: specs.DefaultConfig(), Repo: "fixture"}
}

// Snapshot reads the fixture at ref.
func (r Repo) Snapshot(t *testing.T, ref string) *specs.Snapshot {
	t.Helper()
	snap, err := r.Source().Read(context.Background(), ref)
	require.NoError(t, err)
	return snap
}

// MoveRepo is the fixture repository of a move between TRTMC's two spec
// layouts: Old is trtmc-base (the older layout: tests/e2e/models); New
// moves the vislm and detectors families to the newer layout
// (testdata/trtmc-families: families/<f>/tests/manifests, key `task`) and
// leaves the other families where they were, as a commit in the middle of
// a move does; Broken adds malformed and invalid manifests in the newer
// layout (testdata/trtmc-broken) on top of New.
type MoveRepo struct {
	Dir    string
	Old    string // sha of branch main
	New    string // sha of branch families
	Broken string // sha of branch broken
}

// movedFamilies leave tests/e2e/models in the New commit.
var movedFamilies = []string{"tests/e2e/models/vislm", "tests/e2e/models/detectors"}

// BuildMove builds the layout-move fixture repository in a temporary
// folder of the test.
func BuildMove(t *testing.T) MoveRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	RunGit(t, dir, "init", "-q", "-b", "main")
	golden.CopyTree(t, filepath.Join(Testdata(), "trtmc-base"), dir)
	RunGit(t, dir, "add", "-A")
	RunGit(t, dir, "commit", "-q", "-m", "old layout")
	r := MoveRepo{Dir: dir, Old: RunGit(t, dir, "rev-parse", "HEAD")}
	RunGit(t, dir, "checkout", "-q", "-b", "families")
	for _, p := range movedFamilies {
		require.NoError(t, os.RemoveAll(filepath.Join(dir, p)))
	}
	golden.CopyTree(t, filepath.Join(Testdata(), "trtmc-families"), dir)
	RunGit(t, dir, "add", "-A")
	RunGit(t, dir, "commit", "-q", "-m", "move vislm and detectors to the newer layout")
	r.New = RunGit(t, dir, "rev-parse", "HEAD")
	RunGit(t, dir, "checkout", "-q", "-b", "broken")
	golden.CopyTree(t, filepath.Join(Testdata(), "trtmc-broken"), dir)
	RunGit(t, dir, "add", "-A")
	RunGit(t, dir, "commit", "-q", "-m", "bad manifests in the newer layout")
	r.Broken = RunGit(t, dir, "rev-parse", "HEAD")
	RunGit(t, dir, "checkout", "-q", "main")
	return r
}

// Source reads the move fixture with the default spec-groups configuration.
func (r MoveRepo) Source() specs.Source {
	return specs.Source{Git: gitread.CLI{Repo: r.Dir}, Config: specs.DefaultConfig(), Repo: "move-fixture"}
}
