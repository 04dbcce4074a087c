package reports

import (
	"testing"

	"github.com/trtmc-qual/trtmc-qual/reports/golden"
)

// What the tests of package reports and of reports_test (the renderers'
// tests, which publish through reports/publish) share.

// Evidence roots written by testdata/gen_evidence.py.
const (
	RootA        = "testdata/evidence/a"        // vlm: every kind of row; detection: no inventory snapshot
	RootB        = "testdata/evidence/b"        // a later partial re-run of vlm
	RootBaseline = "testdata/evidence/baseline" // an earlier, faster vlm run
	RootComplete = "testdata/evidence/complete" // detection: every normal profile in scope qualified, its sealed snapshot
)

// CopyTree copies an evidence root into a temporary directory.
func CopyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	golden.CopyTree(t, src, dst)
	return dst
}

// RowOf is the report's row of a profile.
func RowOf(t *testing.T, g *GroupReport, profile string) Row {
	t.Helper()
	for _, r := range g.Rows {
		if r.Profile == profile {
			return r
		}
	}
	t.Fatalf("no row %s", profile)
	return Row{}
}

// ReadInventorySnapshot is the loader's reader of OUT/<group>/inventory.json.
var ReadInventorySnapshot = readInventorySnapshot

// Summarize counts the coverage again (after a test edits rows).
func (g *GroupReport) Summarize() { g.summarize() }
