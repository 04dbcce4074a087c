package reports_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	. "github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Complete means proven complete (issue 32 items 1–3): the tests below
// break the evidence of a complete group (testdata/evidence/complete) one
// way at a time, as a run could leave it or a hand could edit and reseal
// it, and check that no summary then reads as complete.

// groupFixture is a copy of a hand-made group that a test edits the way
// a run writes evidence: rows resealed, the snapshot rewritten.
type groupFixture struct {
	t    *testing.T
	root string
	dir  string // root/group
}

func copyGroup(t *testing.T, from, group string) *groupFixture {
	t.Helper()
	root := filepath.Join(t.TempDir(), "out")
	golden.CopyTree(t, filepath.Join(from, group), filepath.Join(root, group))
	return &groupFixture{t: t, root: root, dir: filepath.Join(root, group)}
}

func (f *groupFixture) load(roots ...string) *GroupReport {
	f.t.Helper()
	if len(roots) == 0 {
		roots = []string{f.root}
	}
	g, err := published(Load(roots, filepath.Base(f.dir)))
	require.NoError(f.t, err)
	g.Summary = SummaryOptions{Reconcile: currentFact} // a current reconciliation: the rows decide
	return g
}

func (f *groupFixture) snapshot() []*verdict.InventoryEntry {
	f.t.Helper()
	ps, _, found, err := ReadInventorySnapshot(filepath.Join(f.dir, InventoryFile), filepath.Base(f.dir))
	require.NoError(f.t, err)
	require.True(f.t, found)
	return ps
}

// writeSnapshot writes the snapshot as run does and returns its sha256.
func (f *groupFixture) writeSnapshot(ps []*verdict.InventoryEntry) string {
	f.t.Helper()
	data, err := json.MarshalIndent(ps, "", "  ")
	require.NoError(f.t, err)
	data = append(data, '\n')
	require.NoError(f.t, os.WriteFile(filepath.Join(f.dir, InventoryFile), data, 0o644))
	return fileio.SHA256(data)
}

// editRow edits a row's result.json and seals its directory again, as if
// its run had written it so.
func (f *groupFixture) editRow(id string, edit func(*verdict.Result)) {
	f.t.Helper()
	dir := filepath.Join(f.dir, id)
	data, err := os.ReadFile(filepath.Join(dir, ResultFile))
	require.NoError(f.t, err)
	var r verdict.Result
	require.NoError(f.t, json.Unmarshal(data, &r))
	edit(&r)
	out, err := json.MarshalIndent(&r, "", "  ")
	require.NoError(f.t, err)
	require.NoError(f.t, os.WriteFile(filepath.Join(dir, ResultFile), append(out, '\n'), 0o644))
	require.NoError(f.t, evidence.Seal(dir, map[string]any{"harness_version": "test"}))
}

// pinAll makes every row record the snapshot as it is now and its own
// entry in it: what a run over the whole group writes.
func (f *groupFixture) pinAll() {
	f.t.Helper()
	ps := f.snapshot()
	sha := f.writeSnapshot(ps)
	for _, p := range ps {
		if _, err := os.Stat(filepath.Join(f.dir, p.ID, ResultFile)); err != nil {
			continue
		}
		f.editRow(p.ID, func(r *verdict.Result) {
			r.Provenance.InventoryEntrySHA256, r.Provenance.InventorySnapshotSHA256 = p.Digest(), sha
		})
	}
}

func completeSummary(t *testing.T, g *GroupReport) string {
	t.Helper()
	g.Summary = SummaryOptions{Reconcile: currentFact}
	return string(render(t, g, FormatSummary))
}

// The intact fixture is complete: what every case below breaks.
func TestCompleteFixtureIsComplete(t *testing.T) {
	f := copyGroup(t, RootComplete, "detection")
	g := f.load()
	assert.Empty(t, Incomplete(g))
	assert.True(t, strings.HasPrefix(completeSummary(t, g), "**detection: complete.**"))
}

// Issue 32 item 1 and our hostile cases on the snapshot: without it, or
// when it is not the one the latest run wrote, nothing proves that every
// profile ran; the summary names what is missing.
func TestCompleteNeedsTheSealedSnapshot(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(f *groupFixture)
		want string
	}{
		// Issue 32 item 1: a copy of the profile directories only.
		"the snapshot removed": {func(f *groupFixture) {
			require.NoError(t, os.Remove(filepath.Join(f.dir, InventoryFile)))
		}, "the inventory snapshot (`detection/inventory.json`): not in the evidence"},
		// H38: a planned profile that never ran dropped from the snapshot.
		"an entry dropped from the snapshot": {func(f *groupFixture) {
			ps := f.snapshot()
			ps = append(ps, &verdict.InventoryEntry{ID: "ref-detect-xl", Family: "ref-detect", Kind: verdict.KindNormal, Status: verdict.StatusPlanned, Group: "detection"})
			f.writeSnapshot(ps)
			f.pinAll() // the run saw the planned profile, and never ran it
			f.writeSnapshot(ps[:len(ps)-1])
		}, "a sealed inventory snapshot: `detection/inventory.json` is not the one the latest run wrote"},
		// H39: rows of an earlier version record no snapshot.
		"no row records the snapshot": {func(f *groupFixture) {
			for _, id := range []string{"ref-detect-small", "ref-detect-small-tp2", "ref-detect-large"} {
				f.editRow(id, func(r *verdict.Result) { r.Provenance.InventorySnapshotSHA256 = "" })
			}
		}, "a sealed inventory snapshot"},
		// H40: only an older row records it; the latest records another.
		"the latest row records another snapshot": {func(f *groupFixture) {
			f.editRow("ref-detect-small-tp2", func(r *verdict.Result) {
				r.Provenance.InventorySnapshotSHA256 = strings.Repeat("0", 64)
				r.EndedAt = r.EndedAt.Add(time.Hour)
			})
		}, "a sealed inventory snapshot"},
		// H41: the snapshot not a regular file: malformed evidence, never read.
		"the snapshot a directory": {func(f *groupFixture) {
			require.NoError(t, os.Remove(filepath.Join(f.dir, InventoryFile)))
			require.NoError(t, os.Mkdir(filepath.Join(f.dir, InventoryFile), 0o755))
		}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			f := copyGroup(t, RootComplete, "detection")
			tc.edit(f)
			g, err := published(Load([]string{f.root}, "detection"))
			if tc.want == "" {
				require.Error(t, err, "a snapshot that is not a regular file is malformed evidence")
				return
			}
			require.NoError(t, err)
			assert.False(t, g.Coverage.OK, "report exits 1")
			s := completeSummary(t, g)
			assert.True(t, strings.HasPrefix(s, "**detection: NOT complete"), s)
			assert.Contains(t, s, tc.want)
			assert.NotEmpty(t, Incomplete(g))
		})
	}
}

// Issue 32 item 2 and our cases on merged roots: a row stands only for
// the snapshot entry it was run for. Root B is the same group run for
// another bundle of ref-detect-small (its own snapshot, pins and seal,
// consistent in itself) and later; merged with A, in either order, the
// kept row is not the entry in use.
func TestMergedRootsNeverStandForAnotherEntry(t *testing.T) {
	a := copyGroup(t, RootComplete, "detection")
	b := copyGroup(t, RootComplete, "detection")
	ps := b.snapshot()
	other := strings.Repeat("b", 64)
	for _, p := range ps {
		if p.ID == "ref-detect-small" {
			p.Bundle.SHA256 = other
		}
	}
	b.writeSnapshot(ps)
	b.editRow("ref-detect-small", func(r *verdict.Result) {
		r.Provenance.BundleSHA256, r.Provenance.BundlePinnedSHA256 = other, other
		for i := range r.Provenance.BundleChecks { // the bundle served, unchanged by the run
			r.Provenance.BundleChecks[i].SHA256 = other
		}
		r.EndedAt = r.EndedAt.Add(24 * time.Hour)
	})
	b.pinAll()
	require.Empty(t, Incomplete(b.load()), "B alone is complete: its row was run for its entry")

	for name, roots := range map[string][]string{"A then B": {a.root, b.root}, "B then A": {b.root, a.root}} {
		t.Run(name, func(t *testing.T) {
			g := a.load(roots...)
			row := RowOf(t, g, "ref-detect-small")
			require.NotNil(t, row.Result)
			first := roots[0] == a.root
			if first {
				// A's entry is in use; B's later row is kept and is not A's.
				assert.Equal(t, StatusError, row.Status)
				assert.False(t, row.Bound())
				assert.Contains(t, reasonCodes(row.Result), verdict.CodeInventoryUnbound)
				assert.Contains(t, row.Result.Reasons[0].Message, "it was run for bundle "+other[:12]+", the snapshot's entry pins ")
				s := completeSummary(t, g)
				assert.True(t, strings.HasPrefix(s, "**detection: NOT complete"), s)
				assert.Contains(t, s, "evidence/inventory_unbound")
				return
			}
			// B's entry is in use and B's row is kept: bound, and the
			// summary may say complete of B's entry.
			assert.True(t, row.Bound())
			assert.Empty(t, Incomplete(g))
		})
	}

	// H42: a row edited to record another entry digest (resealed) is not
	// the entry's either.
	a.editRow("ref-detect-small", func(r *verdict.Result) { r.Provenance.InventoryEntrySHA256 = strings.Repeat("1", 64) })
	g := a.load()
	assert.Contains(t, reasonCodes(RowOf(t, g, "ref-detect-small").Result), verdict.CodeInventoryUnbound)
	assert.NotEmpty(t, Incomplete(g))

	// H43: a qualified row that records no entry at all stands for none.
	c := copyGroup(t, RootComplete, "detection")
	c.editRow("ref-detect-small", func(r *verdict.Result) { r.Provenance.InventoryEntrySHA256 = "" })
	g = c.load()
	assert.Equal(t, StatusError, RowOf(t, g, "ref-detect-small").Status)
	assert.NotEmpty(t, Incomplete(g))
}

// Issue 32 item 3: rows measured at two TRTMC source commits, and a
// reconciliation at a third: complete, and the summary's first sentence
// names each commit with its rows, and the reconciliation's.
func TestCompleteNamesTheCommitsItsRowsCover(t *testing.T) {
	f := copyGroup(t, RootComplete, "detection")
	// A second normal profile, its own row at another commit.
	golden.CopyTree(t, filepath.Join(f.dir, "ref-detect-small"), filepath.Join(f.dir, "ref-detect-medium"))
	ps := f.snapshot()
	medium := *ps[0]
	medium.ID, medium.Checkpoint = "ref-detect-medium", "trtmc-ref/ref-detect-medium"
	f.writeSnapshot(append(ps, &medium))
	f.editRow("ref-detect-medium", func(r *verdict.Result) {
		r.Profile, r.Checkpoint, r.Provenance.SourceCommit = medium.ID, medium.Checkpoint, strings.Repeat("c", 40)
	})
	f.pinAll()
	g := f.load()
	require.Empty(t, Incomplete(g))
	s := completeSummary(t, g)
	first, _, _ := strings.Cut(s, "\n")
	assert.Contains(t, first, "**detection: complete.** All 2 existing normal profiles in scope passed")
	assert.Contains(t, first, "Measured at 2 TRTMC source commits: `cccccccccccccccccccccccccccccccccccccccc` (ref-detect-medium); `e82d4d98b889bbd7e787fb302db9128504081d27` (ref-detect-small).")
	assert.Contains(t, first, "The inventory was reconciled with TRTMC's specs at `a832817e6ed9603b100bbff25dce3f04c65beaca`.")

	// H44: a row that records no commit is named as such, never folded
	// into another's.
	f.editRow("ref-detect-medium", func(r *verdict.Result) { r.Provenance.SourceCommit = "" })
	first, _, _ = strings.Cut(completeSummary(t, f.load()), "\n")
	assert.Contains(t, first, "Measured at TRTMC source commit `e82d4d98b889bbd7e787fb302db9128504081d27` (ref-detect-small). "+
		"The source commit of ref-detect-medium is not recorded.")
	// Issue 36: no row records one: said as such, never "Measured at
	// TRTMC source commit a commit not recorded".
	f.editRow("ref-detect-small", func(r *verdict.Result) { r.Provenance.SourceCommit = "" })
	first, _, _ = strings.Cut(completeSummary(t, f.load()), "\n")
	assert.Contains(t, first, "No row records its TRTMC source commit (ref-detect-medium, ref-detect-small).")
	assert.NotContains(t, first, "Measured at")
}

func reasonCodes(r *verdict.Result) []verdict.Code {
	var out []verdict.Code
	for _, x := range r.Reasons {
		out = append(out, x.Code)
	}
	return out
}

// The headline of a complete group names foreign text too: each row's
// recorded source commit and the reconciliation's commit, both from files
// the harness did not write. With hostile text there, the rendered
// summary has exactly the elements it has with plain commits.
func TestCompleteHeadlineEscapesItsCommits(t *testing.T) {
	summary := func(s string) string {
		f := copyGroup(t, RootComplete, "detection")
		f.editRow("ref-detect-small", func(r *verdict.Result) { r.Provenance.SourceCommit = s })
		f.pinAll()
		g := f.load()
		g.Summary = SummaryOptions{Reconcile: &ReconcileFact{Ref: "main", Commit: s, Head: s, Normal: 1}}
		require.Empty(t, Incomplete(g))
		first, _, _ := strings.Cut(string(render(t, g, FormatSummary)), "\n")
		require.True(t, strings.HasPrefix(first, "**detection: complete.**"), first)
		return gfm(t, first)
	}
	plain := htmlTags(summary("e82d4d98b889bbd7e787fb302db9128504081d27"))
	for _, s := range hostileText {
		assert.Equal(t, plain, htmlTags(summary(s)), "source commit %q", s)
	}
}
