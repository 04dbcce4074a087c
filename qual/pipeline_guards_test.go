package qual

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc/proctest"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// lockTestOptions runs a group of one profile into out with a runner that
// answers `aiperf --version` and refuses anything else: the tests below
// must stop before any checkpoint starts.
func lockTestOptions(t *testing.T, out string) Options {
	runner := &proctest.FakeRunner{}
	runner.Expect(`^aiperf --version$`).Stdout("0.13.0\n").Always()
	t.Cleanup(func() { assert.NoError(t, runner.Verify(), "no child but the version check") })
	inv := &inventory.Inventory{Groups: map[string]*inventory.Group{"g": {Name: "g",
		Profiles: []*inventory.Profile{{ID: "p", Family: "f"}}}}}
	return Options{Inventory: inv, Families: &families.Config{Families: map[string]*families.Family{}},
		Group: "g", Out: out, AIPerf: AIPerfOptions{Bin: "aiperf", Version: "0.13.0"}, Runner: runner, Now: time.Now}
}

// Issue 13, finding 2: a second run into the same evidence root and group
// used to set aside the first one's live directories. Now it stops before
// writing anything, with a *LockedError (exit 3) naming the holder.
func TestRunRefusesAGroupInUse(t *testing.T) {
	out := t.TempDir()
	gdir := filepath.Join(out, "g")
	require.NoError(t, os.MkdirAll(filepath.Join(gdir, "p"), 0o755))
	live := filepath.Join(gdir, "p", "server.log")
	require.NoError(t, os.WriteFile(live, []byte("the other run's live log\n"), 0o644))
	held, err := evidence.LockDir(gdir, evidence.ThisProcess(time.Now()))
	require.NoError(t, err)
	defer held.Unlock()

	_, err = Run(context.Background(), lockTestOptions(t, out))
	var le *evidence.LockedError
	require.ErrorAs(t, err, &le)
	assert.Contains(t, err.Error(), "is in use by another trtmc-qual run: pid ")
	data, err := os.ReadFile(live)
	require.NoError(t, err)
	assert.Equal(t, "the other run's live log\n", string(data), "the live directory was not set aside")
	assert.NoFileExists(t, filepath.Join(gdir, "inventory.json"), "nothing was written")
	entries, err := os.ReadDir(gdir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "only p/ and .lock")
}

// Issue 13, finding 4: --out naming an existing file was an "internal
// error" (exit 4); it is a usage error (exit 2) naming the path, found
// before anything runs. So is a group directory that is a file.
func TestRunOutMustBeADirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "results.txt")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	_, err := Run(context.Background(), lockTestOptions(t, file))
	var ue *UsageError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "--out: "+file+" is not a directory (it is a regular file)", err.Error())

	out := filepath.Join(dir, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "g"), []byte("x"), 0o644))
	_, err = Run(context.Background(), lockTestOptions(t, out))
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "g is not a directory (it is a regular file)")
}

// Names from the command line are checked again where the pipeline uses
// them to build paths.
func TestRunChecksGroupAndOnlyNames(t *testing.T) {
	o := lockTestOptions(t, t.TempDir())
	o.Group = "../g"
	_, err := Run(context.Background(), o)
	var ue *UsageError
	require.ErrorAs(t, err, &ue)
	assert.ErrorIs(t, err, text.ErrBadName)
	o = lockTestOptions(t, t.TempDir())
	o.Only = []string{"$(id)"}
	_, err = Run(context.Background(), o)
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), `"$(id)" is not a valid name`)
}

// Stage lines quote children's output (a stderr tail in a reason): what a
// child prints never acts on the terminal.
func TestStageLinesEscapeChildOutput(t *testing.T) {
	var b strings.Builder
	logf(&b, "%s: ERROR (%s)", "p", "server died: \x1b[2J\x1b]0;owned\x07 \u202eevil")
	assert.Equal(t, `trtmc-qual: p: ERROR (server died: \u{1b}[2J\u{1b}]0;owned\u{7} \u{202e}evil)`+"\n", b.String())
}
