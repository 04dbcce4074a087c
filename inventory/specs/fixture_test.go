package specs

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

// fixtureRepo is a throwaway git repository in the TRTMC layout built from
// testdata/trtmc-base (commit on main) and testdata/trtmc-head (a second
// commit on branch feature). Its work tree is left dirty on purpose: every
// read must come from a commit.
type fixtureRepo struct {
	Dir  string
	Base string // sha of main
	Head string // sha of feature
}

// headDeletes are removed in the head commit.
var headDeletes = []string{"tests/e2e/models/vislm/data/img.jpeg"}

// gitEnv makes commits reproducible (same shas on every machine) and keeps
// the user's git configuration out of the tests.
func gitEnv() []string {
	return append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Fixture", "GIT_AUTHOR_EMAIL=fixture@example.invalid",
		"GIT_COMMITTER_NAME=Fixture", "GIT_COMMITTER_EMAIL=fixture@example.invalid",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
		"LC_ALL=C")
}

func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = gitEnv()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

func copyTree(t testing.TB, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	require.NoError(t, err)
}

// shared is built once per test binary (TestMain): the fixture repository
// is only ever read, so every test can use it.
var shared struct {
	once sync.Once
	repo fixtureRepo
	err  error
	dir  string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// newFixtureRepo returns the shared fixture repository, building it on
// first use.
func newFixtureRepo(t *testing.T) fixtureRepo {
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
		shared.repo = buildFixtureRepo(ft, shared.dir)
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

func buildFixtureRepo(t testing.TB, dir string) fixtureRepo {
	t.Helper()
	runGit(t, dir, "init", "-q", "-b", "main")
	copyTree(t, "testdata/trtmc-base", dir)
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-q", "-m", "base: fixture specs")
	base := runGit(t, dir, "rev-parse", "HEAD")
	runGit(t, dir, "checkout", "-q", "-b", "feature")
	copyTree(t, "testdata/trtmc-head", dir)
	for _, p := range headDeletes {
		require.NoError(t, os.Remove(filepath.Join(dir, p)))
	}
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-q", "-m", "head: change specs")
	head := runGit(t, dir, "rev-parse", "HEAD")
	runGit(t, dir, "checkout", "-q", "main")
	// Dirty the work tree: an uncommitted edit and an untracked manifest.
	m := filepath.Join(dir, "tests/e2e/models/vislm/manifests/alpha-vl-2b.json")
	data, err := os.ReadFile(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(m, []byte(strings.Replace(string(data), `"fp16"`, `"int4"`, 1)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tests/e2e/models/vislm/manifests/untracked.json"), []byte("{"), 0o644))
	return fixtureRepo{Dir: dir, Base: base, Head: head}
}

func (r fixtureRepo) source(t *testing.T) Source {
	t.Helper()
	return Source{Git: gitread.CLI{Repo: r.Dir}, Config: DefaultConfig(), Repo: "fixture"}
}

func (r fixtureRepo) snapshot(t *testing.T, ref string) *Snapshot {
	t.Helper()
	snap, err := r.source(t).Read(context.Background(), ref)
	require.NoError(t, err)
	return snap
}

// golden compares got with testdata/golden/<name>, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "missing golden file; run go test -run %s -update", t.Name())
	assert.Equal(t, string(want), string(got), "golden %s differs; rerun with -update and review the diff", p)
}
