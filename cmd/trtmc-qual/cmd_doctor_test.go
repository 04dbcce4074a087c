package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDoctorValidate: doctor's checks of its flags, on the options alone:
// the format, the free-space floor, and the group and --probe names.
func TestDoctorValidate(t *testing.T) {
	assert.NoError(t, (&doctorOptions{Groups: []string{"vlm"}, Probe: []string{"qwen3-vl-2b"}, MinFreeGiB: 1}).Validate())
	for want, o := range map[string]*doctorOptions{
		`invalid format "yaml"`:       {Format: "yaml"},
		"--min-free-gib must be >= 0": {MinFreeGiB: -1},
		`--group: "a;b"`:              {Groups: []string{"a;b"}},
		`--probe: "$(id)"`:            {Probe: []string{"ok", "$(id)"}},
	} {
		err := o.Validate()
		assert.Equal(t, exitUsage, codeFor(err), want)
		assert.ErrorContains(t, err, want)
	}
}

// TestDoctorRunDirect: the logic called with options: a group the
// inventory does not have is a usage error naming the groups it has.
func TestDoctorRunDirect(t *testing.T) {
	io, out, _ := testIO()
	err := runDoctor(context.Background(), &doctorOptions{IO: io, Groups: []string{"audio"}, Getenv: func(string) string { return "" },
		Config: &Config{Inventory: []string{repoFile("inventory", "testdata", "valid.yaml")}, Families: repoFile("families", "families.yaml")}})
	require.Error(t, err)
	assert.Equal(t, exitUsage, codeFor(err))
	assert.Contains(t, err.Error(), `no group "audio" in the inventory (groups: [vlm])`)
	assert.Empty(t, out.String())
}
