package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

func TestInventorySetFlags(t *testing.T) {
	io, _, _ := testIO()
	f := newFactory(io, nil)
	root := newRootCmd(f)
	var got *inventorySetOptions
	inv := mustFind(t, root.Commands(), "inventory")
	inv.RemoveCommand(mustFind(t, inv.Commands(), "set"))
	inv.AddCommand(newInventorySetCmd(f, func(o *inventorySetOptions) error { got = o; return nil }))
	code := executeTree(context.Background(), f, root, []string{"inventory", "set", "qwen3-vl-2b", "revision=abc", "exclusion.reason=a b=c",
		"--pin", "bundle,tokenizer", "--write", "--inventory", "inv.yaml", "--families", "fams.yaml"})
	require.Equal(t, exitOK, code)
	require.NotNil(t, got)
	assert.Equal(t, "qwen3-vl-2b", got.Profile)
	assert.Equal(t, []inventory.Assignment{{Field: "revision", Value: "abc"}, {Field: "exclusion.reason", Value: "a b=c"}}, got.Assignments)
	assert.Equal(t, []string{"bundle", "tokenizer"}, got.Pins)
	assert.True(t, got.Write)
	assert.False(t, got.Force)
	assert.Equal(t, []string{"inv.yaml"}, got.Inventory)

	for _, c := range []struct {
		opts inventorySetOptions
		want string
	}{
		{inventorySetOptions{args: []string{"revision=x"}}, "name the profile to change"},
		{inventorySetOptions{args: []string{"p"}}, "nothing to set"},
		{inventorySetOptions{args: []string{"p", "revision"}}, "want FIELD=VALUE"},
		{inventorySetOptions{args: []string{"p"}, Pins: []string{"bundel"}}, `--pin "bundel": valid values are bundle, tokenizer, corpus`},
		{inventorySetOptions{args: []string{"p"}, Pins: []string{"corpus"}}, "--pin corpus: the corpus is pinned for a group"},
		{inventorySetOptions{Group: "vlm", Pins: []string{"bundle"}}, "--pin bundle: the corpus is pinned for a group"},
		{inventorySetOptions{args: []string{"a/b", "revision=x"}}, "PROFILE"},
	} {
		err := c.opts.Validate()
		assert.Equal(t, exitUsage, codeFor(err), "%+v", c.opts)
		assert.ErrorContains(t, err, c.want)
	}
	o := inventorySetOptions{Group: "vlm", Pins: []string{"corpus"}}
	assert.NoError(t, o.Validate())
}

// copyInventory is a copy of the test inventory in a directory of its own.
func copyInventory(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(repoFile("inventory", "testdata", "valid.yaml"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "inventory", "inv.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, data, 0o640))
	return path
}

// Issue 36 item 5: the diff on stdout, nothing written without --write;
// --write applies it, keeping the file's permissions; set again, nothing to
// change.
func TestInventorySetDiffThenWrite(t *testing.T) {
	path := copyInventory(t)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	args := []string{"inventory", "set", "qwen3-vl-2b-tp2", "exclusion.reason=tensor-parallel: one server process", "exclusion.owner=release-eng",
		"--inventory", path, "--families", repoFile("families", "families.yaml")}
	code, out, errOut := runCLI(t, nil, args...)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "--- "+path+"\n+++ "+path+" (updated)\n")
	assert.Contains(t, out, "\n+        exclusion: {reason: \"tensor-parallel: one server process\", owner: release-eng}\n")
	assert.Contains(t, errOut, "would change; nothing written: pass --write")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing written without --write")

	code, out2, errOut := runCLI(t, nil, append(args, "--write")...)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, out, out2, "the diff it applies is the one it showed")
	assert.Contains(t, errOut, "inventory set: wrote "+path)
	after, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, strings.Replace(string(before), "        status: planned\n      - id: deepseek-ocr-l0",
		"        status: planned\n        exclusion: {reason: \"tensor-parallel: one server process\", owner: release-eng}\n      - id: deepseek-ocr-l0", 1), string(after))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "the file's permissions kept")
	code, _, errOut = runCLI(t, nil, "inventory", "validate", path, "--families", repoFile("families", "families.yaml"))
	assert.Equal(t, exitOK, code, errOut)

	code, out, errOut = runCLI(t, nil, append(args, "--write")...)
	require.Equal(t, exitOK, code, errOut)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "nothing to change")
}

// Bad input: exit 2, FILE:LINE: FIELD: PROBLEM, the file untouched.
func TestInventorySetRefusesBadInput(t *testing.T) {
	path := copyInventory(t)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	fams := repoFile("families", "families.yaml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"qwen3-vl-2b", "revison=x"}, path + `:15: profile qwen3-vl-2b: revison: unknown field; did you mean "revision"?`},
		{[]string{"qwen3-vl-2b", "bundle.sha256=abc"}, path + `:23: profile qwen3-vl-2b: bundle.sha256: must be 64 lowercase hex characters, got "abc"`},
		{[]string{"--group", "vlm", "workload.measured=5O"}, path + `:8: groups.vlm.workload.measured: 5O: not an integer`},
		{[]string{"qwen3-vl-2b", "family=nosuch"}, path + `:18: profile qwen3-vl-2b: family: unknown family "nosuch" (not in the family configuration)`},
		{[]string{"qwen3-vl-2", "revision=x"}, `no profile "qwen3-vl-2" in the inventory (` + path + `); did you mean "qwen3-vl-2b"?`},
		{[]string{"qwen3-vl-2b", "--pin", "bundle"}, path + `:23: profile qwen3-vl-2b: bundle.sha256: cannot pin the bundle: `},
	} {
		code, out, errOut := runCLI(t, nil, append(append([]string{"inventory", "set"}, c.args...), "--write", "--inventory", path, "--families", fams)...)
		assert.Equal(t, exitUsage, code, "%v: %s", c.args, errOut)
		assert.Contains(t, errOut, c.want, "%v", c.args)
		assert.Empty(t, out, "%v: no diff of a refused edit", c.args)
	}
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing written")
}

// --write refuses the inventory shipped with the harness unless --force;
// the diff alone is allowed, with a note.
func TestInventorySetRefusesTheShippedInventory(t *testing.T) {
	shipped := repoFile("inventory", "reference.yaml")
	before, err := os.ReadFile(shipped)
	require.NoError(t, err)
	args := []string{"inventory", "set", "ref-vlm-small", "revision=v2", "--inventory", shipped, "--families", repoFile("families", "families.yaml")}
	code, _, errOut := runCLI(t, nil, append(args, "--write")...)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "is the inventory shipped with trtmc-qual")
	assert.Contains(t, errOut, "edit a copy (docs/trtmc.md, step 4), or pass --force")
	code, out, errOut := runCLI(t, nil, args...)
	assert.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "+        revision: v2\n")
	assert.Contains(t, errOut, "--write refuses it without --force")
	after, err := os.ReadFile(shipped)
	require.NoError(t, err)
	assert.Equal(t, before, after)

	assert.NotEmpty(t, inventory.ShippedCheckout(shipped))
	assert.Empty(t, inventory.ShippedCheckout(copyInventory(t)), "a copy in a directory named inventory elsewhere is not the shipped one")
}

// --pin computes the pins by the rules the run checks them by, from the
// entry's own paths; the corpus of the group. The result validates.
func TestInventorySetPins(t *testing.T) {
	path := copyInventory(t)
	dir := filepath.Dir(path)
	for rel, body := range map[string]string{"bundles/qwen3-vl-2b.bundle": "the bundle", "corpora/vlm/corpus.json": `{"entries": []}`,
		"tok/tokenizer.json": `{"model": {}}`} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644))
	}
	fams := repoFile("families", "families.yaml")
	code, _, errOut := runCLI(t, nil, "inventory", "set", "qwen3-vl-2b", "--pin", "bundle", "--pin", "tokenizer", "tokenizer.path=tok",
		"--inventory", path, "--families", fams, "--write")
	require.Equal(t, exitOK, code, errOut)
	code, _, errOut = runCLI(t, nil, "inventory", "set", "--group", "vlm", "--pin", "corpus", "--inventory", path, "--families", fams, "--write")
	require.Equal(t, exitOK, code, errOut)

	inv, err := inventory.Load([]string{path}, nil)
	require.NoError(t, err)
	p, _ := inv.Find("qwen3-vl-2b")
	ctx := context.Background()
	for _, c := range []struct{ file, got string }{
		{filepath.Join(dir, "bundles/qwen3-vl-2b.bundle"), p.Bundle.SHA256},
		{filepath.Join(dir, "tok/tokenizer.json"), p.Tokenizer.SHA256},
		{filepath.Join(dir, "corpora/vlm/corpus.json"), inv.Groups["vlm"].Workload.Dataset.SHA256},
	} {
		want, err := fileio.FileSHA256(ctx, c.file)
		require.NoError(t, err)
		assert.Equal(t, want, c.got, c.file)
	}
	assert.Equal(t, "tok", p.Tokenizer.Path)
}
