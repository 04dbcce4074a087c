package qual

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// gitRepo makes a repository with one commit of a.txt and returns its
// directory and commit.
func gitRepo(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return string(out)
	}
	run("init", "-q")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("build/\n"), 0o644))
	run("add", "a.txt", ".gitignore")
	run("commit", "-q", "-m", "first")
	head := run("rev-parse", "HEAD")
	return dir, head[:40]
}

// TestACleanCheckoutIsItsCommit: a checkout at its commit (ignored build
// outputs beside it) records the commit and nothing else.
func TestACleanCheckoutIsItsCommit(t *testing.T) {
	dir, head := gitRepo(t)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "build"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "build", "trtmc-server"), []byte("binary"), 0o755))
	c := readCheckout(context.Background(), proc.OS{}, publish.RootTRTMC, dir)
	assert.Equal(t, verdict.Checkout{Name: publish.RootTRTMC, Path: dir, Commit: head}, c)
	assert.Empty(t, reports.CheckoutNotes([]verdict.Checkout{c}))
}

// TestADirtyCheckoutIsVisible: uncommitted changes and untracked files
// make the checkout dirty, with the digests that pin them: the diff's
// sha256 is that of `git diff --binary HEAD`, the untracked files' covers
// their names and contents; the reports say so.
func TestADirtyCheckoutIsVisible(t *testing.T) {
	dir, head := gitRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("two\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new.py"), []byte("print(1)\n"), 0o644))
	// A filter the checkout configures must not run (gitread's overrides).
	canary := filepath.Join(t.TempDir(), "ran")
	cfg := exec.Command("git", "-C", dir, "config", "filter.evil.clean", "touch "+canary)
	require.NoError(t, cfg.Run())
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("*.txt filter=evil\n"), 0o644))

	c := readCheckout(context.Background(), proc.OS{}, publish.RootTRTMC, dir)
	require.Empty(t, c.Error)
	assert.Equal(t, head, c.Commit)
	assert.True(t, c.Dirty)
	assert.Equal(t, 1, c.ChangedFiles)
	diff, err := exec.Command("git", "-C", dir, "-c", "filter.evil.clean=", "diff", "--binary", "HEAD", "--").Output()
	require.NoError(t, err)
	assert.Equal(t, fileio.SHA256(diff), c.DiffSHA256)
	assert.Equal(t, 2, c.UntrackedFiles, "new.py and .gitattributes")
	h := sha256.New()
	for _, n := range []string{".gitattributes", "new.py"} {
		sum, err := fileio.FileSHA256(context.Background(), filepath.Join(dir, n))
		require.NoError(t, err)
		fmt.Fprintf(h, "%s\x00%s\n", n, sum)
	}
	assert.Equal(t, fmt.Sprintf("%x", h.Sum(nil)), c.UntrackedSHA256)
	assert.NoFileExists(t, canary, "the checkout's filter never ran")

	notes := reports.CheckoutNotes([]verdict.Checkout{c})
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "is dirty")
	assert.Contains(t, notes[0], c.DiffSHA256)
	assert.Contains(t, notes[0], c.UntrackedSHA256)

	// Another edit is another digest.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "new.py"), []byte("print(2)\n"), 0o644))
	c2 := readCheckout(context.Background(), proc.OS{}, publish.RootTRTMC, dir)
	assert.NotEqual(t, c.UntrackedSHA256, c2.UntrackedSHA256)
	assert.Equal(t, c.DiffSHA256, c2.DiffSHA256)
}

func TestACheckoutThatIsNotOne(t *testing.T) {
	c := readCheckout(context.Background(), proc.OS{}, publish.RootHarness, t.TempDir())
	assert.Empty(t, c.Commit)
	assert.Contains(t, c.Error, "not a readable git checkout")
	assert.Contains(t, reports.CheckoutNotes([]verdict.Checkout{c})[0], c.Error)
}

// TestRowsRecordTheCheckouts: the run's roots HARNESS and TRTMC_REPO are
// read once and every row carries them; a dirty one is a note of the
// report, with its rows.
func TestRowsRecordTheCheckouts(t *testing.T) {
	dirty, _ := gitRepo(t)
	require.NoError(t, os.WriteFile(filepath.Join(dirty, "a.txt"), []byte("edited\n"), 0o644))
	clean, cleanHead := gitRepo(t)
	cs := readCheckouts(context.Background(), proc.OS{}, []verdict.Root{
		{Name: publish.RootOut, Path: t.TempDir()}, {Name: publish.RootTRTMC, Path: dirty}, {Name: publish.RootHarness, Path: clean}})
	require.Len(t, cs, 2)
	assert.Equal(t, publish.RootHarness, cs[0].Name)
	assert.Equal(t, cleanHead, cs[0].Commit)
	assert.False(t, cs[0].Dirty)
	assert.Equal(t, publish.RootTRTMC, cs[1].Name)
	assert.True(t, cs[1].Dirty)

	var r recorder
	e, p := stageEnv(t, []stageDef{r.stage("preflight", nil)})
	e.checkouts = cs
	res := e.checkpoint(context.Background(), p, Slot{Name: "cpu0"}, placement{})
	assert.Equal(t, cs, res.Provenance.Checkouts)
	rep, err := reports.Load([]string{e.opts.Out}, "g")
	require.NoError(t, err)
	require.NotEmpty(t, rep.Notes)
	assert.Contains(t, rep.Notes[len(rep.Notes)-1], "checkout $TRTMC_REPO is dirty")
	assert.Contains(t, rep.Notes[len(rep.Notes)-1], "(p)")
}
