package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// CheckOutside resolves the output's links (of the part that exists) and
// the trees' before comparing: a link into a tree, a path that climbs
// back into it with "..", and the tree itself are inside; a sibling whose
// name starts like the tree's is not.
func TestCheckOutside(t *testing.T) {
	base := t.TempDir()
	tree := filepath.Join(base, "out")
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "vlm", "p"), 0o755))
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(filepath.Join(tree, "vlm"), link))
	treeLink := filepath.Join(base, "tree-link")
	require.NoError(t, os.Symlink(tree, treeLink))
	for path, inside := range map[string]bool{
		filepath.Join(tree, "vlm", "p", "result.json"): true,
		filepath.Join(tree, "new", "deeper", "x.md"):   true,
		tree:                              true,
		filepath.Join(link, "p", "x.md"):  true,
		filepath.Join(link, "..", "x.md"): true, // the link's parent is the tree
		filepath.Join(base, "other", "..", "out"): true,
		filepath.Join(base, "out2", "x.md"):       false,
		filepath.Join(base, "x.md"):               false,
	} {
		err := CheckOutside(path, tree)
		var ie *InsideError
		assert.Equal(t, inside, errors.As(err, &ie), "%s: %v", path, err)
		assert.Equal(t, inside, errors.As(CheckOutside(path, treeLink), &ie), "%s against a link to the tree", path)
	}
	err := CheckOutside(filepath.Join(link, "p", "x.md"), "", tree)
	assert.EqualError(t, err, filepath.Join(link, "p", "x.md")+" lies inside the evidence tree "+tree+" (it resolves to "+
		filepath.Join(tree, "vlm", "p", "x.md")+"); nothing may be written there: write it elsewhere")
}

// PrivateDir is mode 0700 and named after the process; RemoveStale
// removes what a process that no longer runs left, and leaves a live
// process's, a foreign name's and this process's own.
func TestPrivateDirAndRemoveStale(t *testing.T) {
	base := t.TempDir()
	mine, err := PrivateDir(base, "tq-x-")
	require.NoError(t, err)
	info, err := os.Stat(mine)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	assert.Contains(t, filepath.Base(mine), "tq-x-"+strconv.Itoa(os.Getpid())+"-")

	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	dead := filepath.Join(base, "tq-x-"+strconv.Itoa(p.Pid)+"-1")
	require.NoError(t, os.MkdirAll(filepath.Join(dead, "a"), 0o700))
	deadFile := filepath.Join(base, "tq-x-"+strconv.Itoa(p.Pid)+"-2")
	require.NoError(t, os.WriteFile(deadFile, []byte("x"), 0o600))
	live := filepath.Join(base, "tq-x-"+strconv.Itoa(os.Getppid())+"-1")
	require.NoError(t, os.Mkdir(live, 0o700))
	odd := filepath.Join(base, "tq-x-notapid-1")
	require.NoError(t, os.Mkdir(odd, 0o700))

	removed := RemoveStale(base, "tq-x-")
	assert.ElementsMatch(t, []string{dead, deadFile}, removed)
	for _, kept := range []string{mine, live, odd} {
		assert.DirExists(t, kept)
	}
}
