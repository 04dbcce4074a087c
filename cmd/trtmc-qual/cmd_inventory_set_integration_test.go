//go:build integration

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Issue 36 item 5: an inventory whose pins were removed and then set by
// `inventory set --pin` (bundle and corpus, by the run's own rules) is what
// the run checks: the row qualifies, served from the bundle it pinned.
// Without the pins it would not (bundle_not_pinned).
func TestInventorySetPinsQualifyARow(t *testing.T) {
	h := getHarness(t)
	t.Parallel()
	var pinned string
	o := h.run(t, scenario{
		inventory: func(d doc) {
			det := group(d, "detection")
			delete(det["workload"].(doc)["dataset"].(doc), "sha256")
			for _, p := range det["profiles"].([]any) {
				if p.(doc)["id"] == "ref-detect-small" {
					delete(p.(doc)["bundle"].(doc), "sha256")
				}
			}
		},
		prepare: func(t *testing.T, cfg string) {
			inv := filepath.Join(cfg, "inventory.yaml")
			for _, args := range [][]string{
				{"ref-detect-small", "--pin", "bundle", "source_commit=0123456789abcdef0123456789abcdef01234567"},
				{"--group", "detection", "--pin", "corpus"},
			} {
				cmd := exec.CommandContext(context.Background(), h.qual, append(append([]string{"inventory", "set"}, args...),
					"--inventory", inv, "--families", filepath.Join(cfg, "families.yaml"), "--write")...)
				cmd.Env = cleanEnv()
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s", out)
			}
			loaded, err := inventory.Load([]string{inv}, nil)
			require.NoError(t, err)
			p, ok := loaded.Find("ref-detect-small")
			require.True(t, ok)
			require.NotEmpty(t, p.Bundle.SHA256)
			require.NotEmpty(t, loaded.Groups["detection"].Workload.Dataset.SHA256)
			pinned = p.Bundle.SHA256
			data, err := os.ReadFile(inv)
			require.NoError(t, err)
			t.Logf("inventory after inventory set:\n%s", data)
		},
	}, 3*time.Minute)
	require.Equal(t, 0, o.code, o.stderr)
	r := o.result(t, "detection", "ref-detect-small")
	assert.Equal(t, verdict.VerdictQualified, r.Verdict, "reasons: %+v", r.Reasons)
	assert.Equal(t, pinned, r.Provenance.BundleSHA256, "served the bundle it pinned")
	assert.Equal(t, "0123456789abcdef0123456789abcdef01234567", r.Provenance.SourceCommit)
	assertNoOrphans(t, o)
}
