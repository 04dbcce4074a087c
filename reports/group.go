package reports

import (
	"fmt"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// GroupReportSchema is the schema id of results.json and of
// `report --format json`.
const GroupReportSchema = "trtmc-qual/group-report/v1"

// Statuses of a profile in the coverage matrix. The first four are claims
// an inventory makes; the others are what the evidence shows.
const (
	StatusPlanned         = verdict.StatusPlanned
	StatusImplemented     = verdict.StatusImplemented
	StatusFamilyValidated = verdict.StatusFamilyValidated
	StatusQualified       = verdict.StatusAIPerfQualified
	StatusFailed          = "failed"
	StatusError           = "error"
	StatusInterrupted     = "interrupted"
	StatusExcluded        = "excluded"
	StatusNotRun          = "not-run"
)

// GroupReport is everything the group's tables are rendered from: one row
// per profile (from the inventory snapshot and/or a result), the coverage
// counts and the conflicts met while merging result roots. It holds only
// what the evidence holds, so rendering it twice gives the same bytes.
type GroupReport struct {
	Schema    string     `json:"schema"`
	Group     string     `json:"group"`
	Coverage  Coverage   `json:"coverage"`
	Rows      []Row      `json:"rows"`
	Conflicts []Conflict `json:"conflicts"`
	// Notes are facts a reader must know to trust the tables (no inventory
	// snapshot, an evidence directory without result.json...).
	Notes []string `json:"notes"`
	// Baseline is set when the rows were compared with an earlier run.
	Baseline *BaselineInfo `json:"baseline,omitempty"`
	// LinkDir is the directory the HTML report is written to; its links to
	// each row's evidence are relative to it. Empty: relative to the
	// group's directory (OUT/<group>/results.html).
	LinkDir string `json:"-"`
	// Publisher makes the report's public copy, from which the public
	// formats are rendered (see Publisher); nil: none is rendered.
	Publisher Publisher `json:"-"`
	// Summary is what the completion summary (FormatSummary) knows beyond
	// the rows.
	Summary SummaryOptions `json:"-"`

	// loadRoots are the result roots the report was loaded from
	// (absolute); mapper is set on a public copy (Mapped): what mapped it
	// and writes its commands.
	loadRoots []string
	mapper    Mapper
}

// Row is one profile of the group.
type Row struct {
	Profile     string `json:"profile"`
	Kind        string `json:"kind"`
	Counted     bool   `json:"counted"`
	VariantOf   string `json:"variant_of,omitempty"`
	Checkpoint  string `json:"checkpoint"`
	Family      string `json:"family"`
	Precision   string `json:"precision"`
	Parallelism string `json:"parallelism"`
	// Verdict is the result's verdict, or the status when there is no result.
	Verdict string `json:"verdict"`
	// Status is the profile's place in the coverage matrix.
	Status string `json:"status"`
	// Note explains the status: the exclusion reason, why it is not-run...
	Note string `json:"note,omitempty"`
	// InventoryStatus is what the inventory snapshot claims, if any.
	InventoryStatus string `json:"inventory_status,omitempty"`
	// BundleSHA256 is the served bundle's digest (the inventory's claim when
	// there is no result).
	BundleSHA256 string `json:"bundle_sha256,omitempty"`
	// Gaps are the capabilities the inventory declares the profile does
	// not support (its snapshot entry's gaps: a control, an input mode):
	// outside the qualification, never claimed.
	Gaps []string `json:"gaps,omitempty"`
	// Evidence is the row's evidence directory relative to its result root.
	Evidence  string         `json:"evidence,omitempty"`
	Reproduce *Reproduce     `json:"reproduce,omitempty"`
	Baseline  *BaselineDelta `json:"baseline,omitempty"`
	// Result is the stored (or re-judged) result; null when none exists.
	Result *verdict.Result `json:"result"`

	// joined holds the row's joined requests (for the HTML plots and diffs);
	// joinedNote says why there are none.
	joined     []verdict.JoinedLine
	joinedNote string
	// mismatches are both answers of the shown mismatches, from the
	// sealed mismatches.jsonl (readSealedMismatches).
	mismatches rowMismatches
	// dir is the row's evidence directory as loaded; files are the
	// evidence files the HTML report links to that exist there.
	dir   string
	files []evidenceLink
	// bound says the row was run for the snapshot entry it is shown for
	// (bindRow); holdsSnapshot that it records the snapshot of its own
	// root as that snapshot is.
	bound, holdsSnapshot bool
}

// Bound reports whether the row's result was run for exactly the
// inventory snapshot entry it is shown for (its entry digest and bundle
// pin); false without a snapshot entry or a result.
func (r *Row) Bound() bool { return r.bound }

// HoldsSnapshot reports whether the row records the inventory snapshot
// of its own root as the snapshot is (provenance.inventory_snapshot_sha256).
func (r *Row) HoldsSnapshot() bool { return r.holdsSnapshot }

// Reproduce is how to regenerate a row: the trtmc-qual invocation that ran
// it, and the exact AIPerf argv it recorded (secrets redacted).
type Reproduce struct {
	Command    string   `json:"command"`
	AIPerfArgv []string `json:"aiperf_argv"`
}

// Coverage is the coverage matrix's counts: normal profiles (counted as
// models) apart from variants and partial profiles (listed, not counted).
type Coverage struct {
	// InventorySnapshot says whether OUT/<group>/inventory.json was found;
	// without it only profiles with results are listed.
	InventorySnapshot bool `json:"inventory_snapshot"`
	// InventorySnapshotSealed says whether every snapshot found is the one
	// its root's latest run wrote (the sha256 the latest row records).
	InventorySnapshotSealed bool  `json:"inventory_snapshot_sealed,omitempty"`
	Counted                 Tally `json:"counted"`
	NotCounted              Tally `json:"not_counted"`
	// Summary is the sentence a reviewer checks, e.g.
	// "9 of 9 normal profiles qualified".
	Summary string `json:"summary"`
	// OK is true when the sealed inventory snapshot is in the evidence,
	// every counted, non-excluded normal profile is aiperf-qualified (by a
	// row bound to its snapshot entry: a row that is not is an error row)
	// and no row at all failed, broke or was interrupted (Row.Blocks: a
	// variant or partial profile that did not run is not coverage, and
	// does not block).
	OK bool `json:"ok"`
}

// Tally counts profiles by status.
type Tally struct {
	Total    int            `json:"total"`
	ByStatus map[string]int `json:"by_status"`
}

// Conflict is a profile found in several result roots with a different run
// key or verdict. The latest run (by ended_at) is kept.
type Conflict struct {
	Profile string         `json:"profile"`
	Kept    ConflictSide   `json:"kept"`
	Others  []ConflictSide `json:"others"`
}

// ConflictSide is one root's result of a conflicting profile.
type ConflictSide struct {
	Root    string    `json:"root"`
	RunKey  string    `json:"run_key"`
	Verdict string    `json:"verdict"`
	EndedAt time.Time `json:"ended_at"`
}

// Dir is the row's evidence directory as loaded ("" without a result).
func (r *Row) Dir() string { return r.dir }

// Joined returns the row's joined requests (nil when none were stored).
func (r *Row) Joined() []verdict.JoinedLine { return r.joined }

// statusFor derives a profile's coverage status from its result (evidence
// first) and its inventory entry.
func statusFor(p *verdict.InventoryEntry, res *verdict.Result) (status, note string) {
	if res != nil {
		switch res.Verdict {
		case verdict.VerdictQualified:
			return StatusQualified, ""
		case verdict.VerdictFailed:
			return StatusFailed, ""
		case verdict.VerdictError:
			return StatusError, ""
		case verdict.VerdictInterrupted:
			return StatusInterrupted, ""
		case verdict.VerdictExcluded:
			return StatusExcluded, res.Exclusion
		case verdict.VerdictSkipped:
			return StatusNotRun, "result.json records verdict skipped: no finished result in this evidence"
		case verdict.VerdictNotRun:
			note := "result.json records that the run never started it"
			if len(res.Reasons) > 0 {
				note = res.Reasons[0].Message
			}
			return StatusNotRun, note
		}
	}
	if p == nil {
		return StatusNotRun, "no result"
	}
	if p.Exclusion != nil {
		return StatusExcluded, p.Exclusion.Reason
	}
	switch p.Status {
	case StatusImplemented, StatusFamilyValidated:
		return p.Status, "inventory claim; no result in the evidence"
	case StatusQualified:
		return StatusNotRun, "the inventory claims aiperf-qualified but the evidence holds no result"
	default:
		return StatusNotRun, "planned; no result in the evidence"
	}
}

// Blocks reports whether the row keeps its group from OK (coverage.ok,
// `report`'s exit status) and from complete (Incomplete): the one rule of
// both. A row of any kind that ran and did not qualify — failed, broke
// (error) or was interrupted — blocks. A counted normal profile that did
// not run, or has only an inventory claim, blocks (it is the group). A
// variant or partial profile that did not run does not: the group is its
// normal profiles, and distributed, diagnostic, L0 and partial profiles
// are not checkpoint coverage (seed 000, "Existing distributed/diagnostic
// profiles are not additional checkpoint coverage"; seed 003, "do not
// count variants as extra models"), so the summary lists it apart, as not
// run.
func (r *Row) Blocks() bool {
	switch r.Status {
	case StatusQualified, StatusExcluded:
		return false
	case StatusFailed, StatusError, StatusInterrupted:
		return true
	}
	// not-run, or an inventory claim without a result
	return r.Counted
}

// NotRunApart reports whether the row is a variant or partial profile
// that did not run: listed apart, never blocking (Blocks).
func (r *Row) NotRunApart() bool {
	return !r.Counted && !r.Blocks() && r.Status != StatusQualified && r.Status != StatusExcluded
}

// summarize fills the coverage counts, the summary sentence and OK.
func (g *GroupReport) summarize() {
	c := &g.Coverage
	c.Counted = Tally{ByStatus: map[string]int{}}
	c.NotCounted = Tally{ByStatus: map[string]int{}}
	ok := true
	for _, r := range g.Rows {
		t := &c.NotCounted
		if r.Counted {
			t = &c.Counted
		}
		t.Total++
		t.ByStatus[r.Status]++
		if r.Blocks() {
			ok = false
		}
	}
	excluded := c.Counted.ByStatus[StatusExcluded]
	considered := c.Counted.Total - excluded
	qualified := c.Counted.ByStatus[StatusQualified]
	if considered == 0 || qualified != considered || !c.InventorySnapshot || !c.InventorySnapshotSealed {
		ok = false
	}
	c.OK = ok

	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d normal %s qualified", qualified, considered, text.Plural(considered, "profile", "profiles"))
	var rest []string
	for _, s := range []string{StatusFailed, StatusError, StatusInterrupted, StatusNotRun, StatusImplemented, StatusFamilyValidated} {
		if n := c.Counted.ByStatus[s]; n > 0 {
			rest = append(rest, fmt.Sprintf("%d %s", n, s))
		}
	}
	if len(rest) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(rest, ", "))
	}
	if excluded > 0 {
		fmt.Fprintf(&b, "; %d excluded with a reason", excluded)
	}
	if n := c.NotCounted.Total; n > 0 {
		fmt.Fprintf(&b, "; %d variant or partial %s listed separately, not counted", n, text.Plural(n, "profile", "profiles"))
	}
	switch {
	case !c.InventorySnapshot:
		b.WriteString("; no inventory snapshot, so profiles that never ran cannot be counted")
	case !c.InventorySnapshotSealed:
		b.WriteString("; the inventory snapshot is not the one the latest run wrote (see the notes)")
	}
	c.Summary = b.String()
}
