package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

// publishableRoot writes a new evidence root holding group "detection"
// (family ref-detect) as a run leaves it and as a publication needs it;
// see addPublishable. Its summary is complete (with a current
// reconciliation); a test breaks it on purpose.
func publishableRoot(tb testing.TB, profiles ...string) string {
	tb.Helper()
	root := filepath.Join(tb.TempDir(), "out")
	addPublishable(tb, root, "detection", synth.FamilyDetect, profiles...)
	return root
}

// addPublishable writes a group of root: each profile's raw artifacts (the
// synthetic AIPerf 0.13.0 shapes of family, every request matching), the
// group's inventory snapshot, and each stored row exactly what a rejudge
// derives from them by the shipped family configuration, sealed, each run
// ending after the one before; every row qualifies.
func addPublishable(tb testing.TB, root, group, family string, profiles ...string) {
	tb.Helper()
	for i, p := range profiles {
		writeSynth(tb, root, group, family, p, uint64(i+1), nil)
	}
	for _, r := range promote(tb, root, group) {
		require.Equal(tb, verdict.VerdictQualified, r.Verdict, "%s: %+v", r.Profile, r.Reasons)
	}
}

// writeSynth writes one profile's raw artifacts and sealed row (synth),
// after edit, when given, changed the raw artifacts of its directory.
func writeSynth(tb testing.TB, root, group, family, profile string, seed uint64, edit func(dir string)) {
	tb.Helper()
	dir := filepath.Join(root, group, profile)
	exp, err := synth.Write(dir, synth.Config{Requests: 55, Family: family, Seed: seed, NoFaults: true, ImageMin: 16, ImageMax: 32})
	require.NoError(tb, err)
	if edit != nil {
		edit(dir)
	}
	require.NoError(tb, synth.Seal(dir, group, profile, exp))
}

// promote makes each stored row of a group what a run would have written:
// the row re-derived from its raw artifacts by the shipped family
// configuration, recording the group's snapshot, sealed, each ending
// after the one before. It returns the rows.
func promote(tb testing.TB, root, group string) []*verdict.Result {
	tb.Helper()
	fams, err := families.Shipped()
	require.NoError(tb, err)
	rep, _, err := qual.Rejudge(context.Background(), qual.RejudgeOptions{Roots: []string{root}, Group: group, Families: fams,
		Registry: families.DefaultRegistry(), Now: time.Now(), NoJoined: true, NoWrite: true})
	require.NoError(tb, err)
	// One run over the group wrote every row: each records the snapshot.
	snapshot, err := fileio.FileSHA256(context.Background(), filepath.Join(root, group, reports.InventoryFile))
	require.NoError(tb, err)
	var out []*verdict.Result
	for i, row := range rep.Rows {
		r := *row.Result
		r.Rejudged, r.Provenance.InventorySnapshotSHA256 = nil, snapshot
		r.EndedAt = time.Date(2026, 12, 1, 10, i, 0, 0, time.UTC)
		require.NoError(tb, fileio.WriteJSON(filepath.Join(row.Dir(), reports.ResultFile), &r))
		require.NoError(tb, evidence.Seal(row.Dir(), map[string]any{"harness_version": "test"}))
		out = append(out, &r)
	}
	return out
}

// editStored edits a stored row of a root and seals it again, as a hand
// that knows the seal would.
func editStored(t *testing.T, root, group, profile string, edit func(*verdict.Result)) {
	t.Helper()
	dir := filepath.Join(root, group, profile)
	r, err := reports.ReadRow(dir, group, profile)
	require.NoError(t, err)
	require.NotNil(t, r)
	edit(r)
	require.NoError(t, fileio.WriteJSON(filepath.Join(dir, reports.ResultFile), r))
	require.NoError(t, evidence.Seal(dir, map[string]any{"harness_version": "test"}))
}
