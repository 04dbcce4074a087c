package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory"
)

// withInventoryVerb runs `trtmc-qual inventory ARGS` with one inventory
// verb (built by mk with a capturing runF) in place of the real one.
func withInventoryVerb(t *testing.T, mk func(*factory) *cobra.Command, args ...string) exitCode {
	t.Helper()
	io, _, errOut := testIO()
	f := newFactory(io, nil)
	f.Getenv = func(string) string { return "" }
	root := newRootCmd(f)
	inv := mustFind(t, root.Commands(), "inventory")
	verb := mk(f)
	inv.RemoveCommand(mustFind(t, inv.Commands(), verb.Name()))
	inv.AddCommand(verb)
	code := executeTree(context.Background(), f, root, append([]string{"inventory"}, args...))
	if code != exitOK {
		t.Logf("stderr: %s", errOut)
	}
	return code
}

// TestInventoryFlagsReachOptions: validate, list and show parse their
// flags, arguments and the configured files into their options.
func TestInventoryFlagsReachOptions(t *testing.T) {
	var v *inventoryValidateOptions
	code := withInventoryVerb(t, func(f *factory) *cobra.Command {
		return newInventoryValidateCmd(f, func(o *inventoryValidateOptions) error { v = o; return nil })
	}, "validate", "a.yaml", "b.yaml", "--families", "fam.yaml", "-o", "json")
	require.Equal(t, exitOK, code)
	assert.Equal(t, []string{"a.yaml", "b.yaml"}, v.Files, "the arguments")
	assert.Equal(t, "fam.yaml", v.Families)
	assert.Equal(t, "json", v.Format)
	code = withInventoryVerb(t, func(f *factory) *cobra.Command {
		return newInventoryValidateCmd(f, func(o *inventoryValidateOptions) error { v = o; return nil })
	}, "validate", "--inventory", "c.yaml,d.yaml")
	require.Equal(t, exitOK, code)
	assert.Equal(t, []string{"c.yaml", "d.yaml"}, v.Files, "no arguments: the configured inventory")
	assert.Equal(t, "text", v.Format)

	var l *inventoryListOptions
	code = withInventoryVerb(t, func(f *factory) *cobra.Command {
		return newInventoryListCmd(f, func(o *inventoryListOptions) error { l = o; return nil })
	}, "list", "-g", "vlm", "--inventory", "i.yaml", "--families", "f.yaml", "-o", "csv")
	require.Equal(t, exitOK, code)
	assert.Equal(t, inventoryListOptions{IO: l.IO, Group: "vlm", Format: "csv", Inventory: []string{"i.yaml"}, Families: "f.yaml"}, *l)

	var s *inventoryShowOptions
	code = withInventoryVerb(t, func(f *factory) *cobra.Command {
		return newInventoryShowCmd(f, func(o *inventoryShowOptions) error { s = o; return nil })
	}, "show", "qwen3-vl-2b", "--inventory", "i.yaml")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "qwen3-vl-2b", s.ID)
	assert.Equal(t, []string{"i.yaml"}, s.Inventory)

	// A mistake stops at Validate: the verb is not reached.
	s = nil
	code = withInventoryVerb(t, func(f *factory) *cobra.Command {
		return newInventoryShowCmd(f, func(o *inventoryShowOptions) error { s = o; return nil })
	}, "show", "$(id)")
	assert.Equal(t, exitUsage, code)
	assert.Nil(t, s)
}

// TestInventoryValidateChecks: the options' checks alone (no cobra).
func TestInventoryValidateChecks(t *testing.T) {
	assert.NoError(t, (&inventoryValidateOptions{Format: "text"}).Validate())
	assert.ErrorContains(t, (&inventoryValidateOptions{Format: "table"}).Validate(), `invalid format "table"`)
	assert.NoError(t, (&inventoryListOptions{}).Validate(), "the automatic format, every group")
	assert.ErrorContains(t, (&inventoryListOptions{Group: "a b"}).Validate(), "--group")
	assert.ErrorContains(t, (&inventoryListOptions{Format: "md"}).Validate(), `invalid format "md"`)
	assert.ErrorContains(t, (&inventoryShowOptions{ID: ""}).Validate(), "ID")
	err := (&inventoryShowOptions{ID: "ok", Format: "yaml"}).Validate()
	assert.Equal(t, exitUsage, codeFor(err))
}

// TestInventoryRunDirect: the logic called with options, no cobra.
func TestInventoryRunDirect(t *testing.T) {
	fams := repoFile("families", "families.yaml")
	valid := repoFile("inventory", "testdata", "valid.yaml")
	io, out, _ := testIO()
	require.NoError(t, runInventoryList(context.Background(), &inventoryListOptions{IO: io, Group: "vlm", Format: "json",
		Inventory: []string{valid}, Families: fams}))
	var profiles []*inventory.Profile
	require.NoError(t, json.Unmarshal(out.Bytes(), &profiles))
	require.Len(t, profiles, 3)
	assert.Equal(t, "qwen3-vl-2b", profiles[0].ID)

	io, _, _ = testIO()
	err := runInventoryShow(context.Background(), &inventoryShowOptions{IO: io, ID: "nope", Inventory: []string{valid}, Families: fams})
	assert.Equal(t, exitUsage, codeFor(err))
	assert.ErrorContains(t, err, `no profile "nope"`)

	io, _, errOut := testIO()
	require.NoError(t, runInventoryValidate(context.Background(), &inventoryValidateOptions{IO: io, Files: []string{valid}, Families: fams}))
	assert.Contains(t, errOut.String(), "inventory ok: 1 group(s), 3 profile(s)")

	io, _, _ = testIO()
	err = runInventoryList(context.Background(), &inventoryListOptions{IO: io, Families: fams})
	assert.Equal(t, exitUsage, codeFor(err))
	assert.ErrorContains(t, err, "no inventory: pass --inventory FILE")
}
