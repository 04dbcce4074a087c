package reports

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// TestFixturesAreJudged checks the hand-made evidence against the rules:
// every stored verdict and reason is what Judge says, and every evidence
// directory is sealed. With -update it writes Judge's verdict and reasons
// into each result.json and seals each directory (after gen_evidence.py).
func TestFixturesAreJudged(t *testing.T) {
	n := 0
	for _, root := range fixtureRoots {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.Name() != ResultFile {
				return err
			}
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			stored, err := verdict.DecodeResult(path, data, "", "")
			require.NoError(t, err)
			var judged verdict.Result
			require.NoError(t, json.Unmarshal(data, &judged))
			verdict.Judge(&judged)
			// The row records the snapshot entry it was run for, and the
			// snapshot its run wrote, as run does (gen_evidence.py leaves
			// them to this step: one implementation of the digests).
			entry, snapshot := fixtureSnapshot(t, filepath.Dir(filepath.Dir(path)), stored.Profile)
			if entry != nil {
				judged.Provenance.InventoryEntrySHA256, judged.Provenance.InventorySnapshotSHA256 = entry.Digest(), snapshot
			}
			if golden.Updating() {
				// Rewrite and reseal only what Judge, the pins or the seal
				// disagree with, so that make golden on agreeing fixtures
				// leaves the tree as it is (a seal in the retired
				// sha256-tree-1mib is made again in DigestAlgorithm).
				out, err := json.MarshalIndent(&judged, "", "  ")
				require.NoError(t, err)
				out = append(out, '\n')
				m, _ := evidence.ReadManifest(filepath.Dir(path))
				if !bytes.Equal(out, data) || len(evidence.VerifySeal(filepath.Dir(path), evidence.Digests{})) > 0 || m == nil || m.Algorithm != evidence.DigestAlgorithm {
					require.NoError(t, os.WriteFile(path, out, 0o644))
					require.NoError(t, evidence.Seal(filepath.Dir(path), map[string]any{"harness_version": "fixture"}))
				}
			} else {
				assert.Equal(t, stored.Verdict, judged.Verdict, path)
				assert.Equal(t, stored.Reasons, judged.Reasons, path)
				assert.Equal(t, stored.Provenance.InventoryEntrySHA256, judged.Provenance.InventoryEntrySHA256, path)
				assert.Equal(t, stored.Provenance.InventorySnapshotSHA256, judged.Provenance.InventorySnapshotSHA256, path)
				assert.Empty(t, evidence.VerifySeal(filepath.Dir(path), evidence.Digests{}), path)
				m, f := evidence.ReadManifest(filepath.Dir(path))
				require.Nil(t, f, path)
				assert.Equal(t, evidence.DigestAlgorithm, m.Algorithm, "%s: fixtures are sealed in the current algorithm", path)
			}
			n++
			return nil
		})
		require.NoError(t, err)
	}
	assert.Greater(t, n, 10)
}

// fixtureRoots are the hand-made evidence roots.
var fixtureRoots = []string{RootA, RootB, RootBaseline, filepath.Join("testdata", "evidence", "gpu"), RootComplete}

// fixtureSnapshot is the entry of profile in the inventory snapshot of a
// group directory and the snapshot's sha256 (nil, "" without one).
func fixtureSnapshot(t *testing.T, groupDir, profile string) (*verdict.InventoryEntry, string) {
	t.Helper()
	profiles, sha, found, err := readInventorySnapshot(filepath.Join(groupDir, InventoryFile), filepath.Base(groupDir))
	require.NoError(t, err)
	if !found {
		return nil, ""
	}
	for _, p := range profiles {
		if p.ID == profile {
			return p, sha
		}
	}
	return nil, ""
}

// The Task column says which source it shows.
func TestTaskCellSaysItsSource(t *testing.T) {
	p50, p95 := 7.52, 9.29
	l := verdict.Latency{Task: verdict.Percentiles{P50: &p50, P95: &p95, Count: 50}, TaskSource: "server", TaskScope: "public_task_call_wall"}
	assert.Equal(t, "7.52 / 9.29 (server)", taskCell(l, nil))
	l.TaskSource = "native"
	assert.Equal(t, "7.52 / 9.29 (native)", taskCell(l, nil))
	l.Task.P50 = nil
	assert.NotContains(t, taskCell(l, nil), "native", "no source for a figure that is withheld")
	l.TaskSource, l.Task.P50 = "", &p50
	assert.Equal(t, "7.52 / 9.29", taskCell(l, nil), "rows of earlier versions name no source")
}
