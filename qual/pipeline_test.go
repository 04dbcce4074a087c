package qual

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// TestLongestFirst orders checkpoints by the length of their previous
// finished run, longest first, unknown ones first of all.
func TestLongestFirst(t *testing.T) {
	out := t.TempDir()
	write := func(id, v string, seconds int) {
		dir := filepath.Join(out, "g", id)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		start := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
		r := verdict.Result{Profile: id, Verdict: v, StartedAt: start, EndedAt: start.Add(time.Duration(seconds) * time.Second)}
		data, err := json.Marshal(r)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "result.json"), data, 0o644))
	}
	write("short", verdict.VerdictQualified, 5)
	write("long", verdict.VerdictFailed, 50)
	write("broke", verdict.VerdictError, 500) // an error says nothing about length
	profiles := []*inventory.Profile{{ID: "short"}, {ID: "new"}, {ID: "long"}, {ID: "broke"}}
	order := longestFirst(out, "g", profiles, GPUsNeeded)
	var ids []string
	for _, i := range order {
		ids = append(ids, profiles[i].ID)
	}
	assert.Equal(t, []string{"new", "broke", "long", "short"}, ids)
}

// TestLongestFirstByGPUTime: the length that orders is the GPU time
// (duration x GPUs held), so a wide checkpoint is not queued behind longer
// narrow ones that would keep one of its GPUs busy until the end; on CPU
// slots every checkpoint holds one slot and the duration alone counts.
func TestLongestFirstByGPUTime(t *testing.T) {
	out := t.TempDir()
	start := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for id, seconds := range map[string]int{"tp1-47s": 47, "tp4-13s": 13, "tp2-16s": 16, "tp1-26s": 26} {
		dir := filepath.Join(out, "g", id)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		data, err := json.Marshal(verdict.Result{Profile: id, Verdict: verdict.VerdictQualified, StartedAt: start, EndedAt: start.Add(time.Duration(seconds) * time.Second)})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "result.json"), data, 0o644))
	}
	profiles := []*inventory.Profile{
		{ID: "tp1-47s", Parallelism: inventory.Parallelism{TP: 1}},
		{ID: "tp2-16s", Parallelism: inventory.Parallelism{TP: 2}},
		{ID: "tp4-13s", Parallelism: inventory.Parallelism{TP: 4}},
		{ID: "tp1-26s", Parallelism: inventory.Parallelism{TP: 1}},
	}
	ids := func(width func(*inventory.Profile) int) []string {
		var out2 []string
		for _, i := range longestFirst(out, "g", profiles, width) {
			out2 = append(out2, profiles[i].ID)
		}
		return out2
	}
	assert.Equal(t, []string{"tp4-13s", "tp1-47s", "tp2-16s", "tp1-26s"}, ids(GPUsNeeded)) // 52, 47, 32, 26 GPU-s
	assert.Equal(t, []string{"tp1-47s", "tp1-26s", "tp2-16s", "tp4-13s"}, ids(func(*inventory.Profile) int { return 1 }))
}

// TestLongestFirstLargestOnTies: among profiles with no previous run (or
// equally long ones) the one needing more GPUs goes first.
func TestLongestFirstLargestOnTies(t *testing.T) {
	profiles := []*inventory.Profile{
		{ID: "tp1", Parallelism: inventory.Parallelism{TP: 1}},
		{ID: "tp4", Parallelism: inventory.Parallelism{TP: 4}},
		{ID: "tp2", Parallelism: inventory.Parallelism{TP: 2}},
		{ID: "tp2cp2", Parallelism: inventory.Parallelism{TP: 2, CP: 2}},
	}
	var ids []string
	for _, i := range longestFirst(t.TempDir(), "g", profiles, GPUsNeeded) {
		ids = append(ids, profiles[i].ID)
	}
	assert.Equal(t, []string{"tp4", "tp2cp2", "tp2", "tp1"}, ids)
}
