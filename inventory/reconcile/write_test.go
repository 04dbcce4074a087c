package reconcile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/specstest"
)

// copyInventory puts the fixture inventory (or the given text) in a temp dir.
func copyInventory(t *testing.T, text string) string {
	t.Helper()
	if text == "" {
		data, err := os.ReadFile(fixtureInventory)
		require.NoError(t, err)
		text = string(data)
	}
	p := filepath.Join(t.TempDir(), "inventory.yaml")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o640))
	return p
}

func TestWriteAppendsPlannedEntriesWithoutTouchingExistingOnes(t *testing.T) {
	repo := specstest.Fixture(t)
	snap := repo.Snapshot(t, "main")
	cfg := specs.DefaultConfig()
	for _, tt := range []struct {
		group   string
		ids     []string
		after   Summary
		entries string
	}{
		{
			group: "detection", ids: []string{"det-large"},
			after: Summary{Normal: 2, OK: 2, Variants: 3, Partials: 3},
			entries: `      - id: det-large
        checkpoint: example/det-large
        family: detectors
        task: object_detection
        kind: normal
        precision: fp32
        parallelism:
          tp: 1
        bundle:
          path: det-large.bundle
        status: planned
`,
		},
		{
			// vlm is followed by another group: the entries go in the middle.
			group: "vlm", ids: []string{"legacy-vl"},
			after: Summary{Normal: 4, OK: 2, Drift: 1, Excluded: 1, Variants: 3, Partials: 2, Stale: 2, Unlisted: 1, Invalid: 2, NeedAction: 6},
			entries: `      - id: legacy-vl
        checkpoint: example/Legacy-VL
        revision: "2222222222222222222222222222222222222222"
        family: legacyvl
        task: vision_language_generation
        kind: normal
        precision: bf16
        parallelism:
          tp: 1
        bundle:
          path: legacy-vl.bundle
        status: planned
`,
		},
	} {
		t.Run(tt.group, func(t *testing.T) {
			path := copyInventory(t, "")
			old, err := os.ReadFile(path)
			require.NoError(t, err)
			inv := loadFixtureInventory(t, path)
			r := Reconcile(cfg, snap, inv, tt.group)
			p, err := WriteProposals(r, inv, []string{path}, nil, nil)
			require.NoError(t, err)
			assert.Equal(t, &Proposal{File: path, Appended: true, Profiles: tt.ids}, p)

			updated, err := os.ReadFile(path)
			require.NoError(t, err)
			// Removing the inserted block gives back the old bytes exactly.
			i := strings.Index(string(updated), "      # Proposed by `trtmc-qual inventory reconcile --write`")
			require.GreaterOrEqual(t, i, 0, string(updated))
			end := i + strings.Index(string(updated[i:]), "status: planned\n") + len("status: planned\n")
			assert.Equal(t, string(old), string(updated[:i])+string(updated[end:]))
			assert.True(t, strings.HasSuffix(string(updated[:end]), tt.entries), string(updated[i:end]))
			assert.Contains(t, string(updated[i:end]), repo.Base, "the proposal names the spec commit")
			info, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "mode kept")

			// The result is a valid inventory, and reconciling again finds the
			// entries in agreement with the specs.
			again := loadFixtureInventory(t, path)
			for _, id := range tt.ids {
				prof, ok := again.Find(id)
				require.True(t, ok)
				assert.Equal(t, inventory.StatusPlanned, prof.Status)
				assert.Equal(t, tt.group, prof.Group)
			}
			assert.Equal(t, tt.after, Reconcile(cfg, snap, again, tt.group).Summary)
			leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
			assert.Empty(t, leftovers, "no temporary file left behind")
		})
	}
}

func TestWriteFallsBackToAProposalFile(t *testing.T) {
	repo := specstest.Fixture(t)
	snap := repo.Snapshot(t, "main")
	cfg := specs.DefaultConfig()
	flow := strings.Replace(mustRead(t, fixtureInventory), `  detection:
    description: detection fixture group`, `  detection:
    description: detection fixture group
    profiles: []
    x-ignored: 1`, 1)
	flow = strings.Replace(flow, "    x-ignored: 1\n", "", 1)
	flow = flow[:strings.Index(flow, "    profiles:\n      - id: det-small")] // drop the block list
	tests := []struct {
		name        string
		text        string
		known       func(string) bool
		group       string
		noGroup     bool
		wantReasons []string
		wantIDs     []string
	}{
		{name: "unknown family", group: "detection", known: func(f string) bool { return f != "detectors" },
			wantReasons: []string{`profile det-large: family: unknown family "detectors" (not in the family configuration)`},
			wantIDs:     []string{"det-large"}},
		{name: "flow-style empty list", group: "detection", text: flow,
			wantReasons: []string{"groups.detection.profiles is not a non-empty block list"},
			wantIDs:     []string{"det-large", "det-small"}},
		{name: "group absent", group: "detection", noGroup: true,
			wantReasons: []string{"the inventory has no group detection to append to"},
			wantIDs:     []string{"det-large", "det-small"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := copyInventory(t, tt.text)
			before := mustRead(t, path)
			inv, err := inventory.Load([]string{path}, nil)
			require.NoError(t, err)
			if tt.noGroup {
				delete(inv.Groups, tt.group)
			}
			r := Reconcile(cfg, snap, inv, tt.group)
			p, err := WriteProposals(r, inv, []string{path}, tt.known, nil)
			require.NoError(t, err)
			assert.False(t, p.Appended)
			assert.Equal(t, filepath.Join(filepath.Dir(path), "inventory.detection.proposed.yaml"), p.File)
			assert.Equal(t, tt.wantReasons, p.Reasons)
			assert.Equal(t, tt.wantIDs, p.Profiles)
			assert.Equal(t, before, mustRead(t, path), "the inventory is untouched")
			proposal := mustRead(t, p.File)
			assert.Contains(t, proposal, "# NOT an inventory file")
			assert.Contains(t, proposal, "  - id: det-large\n")
			assert.Contains(t, proposal, tt.wantReasons[0])
		})
	}
}

func TestWriteNothingMissing(t *testing.T) {
	r := &Report{Group: "vlm", Rows: []Row{{Profile: "a", State: StateOK}}}
	p, err := WriteProposals(r, nil, nil, nil, nil)
	require.NoError(t, err)
	assert.Empty(t, p.Profiles)
	assert.Empty(t, p.File)
}

func TestInsertionPointIndentation(t *testing.T) {
	doc := "schema: x\ngroups:\n  g:\n    profiles:\n    - id: a\n      kind: normal\n    - id: b\n      note: |\n        two\n        lines\n\n# trailing comment\n"
	at, indent, why := insertionPoint([]byte(doc), "g")
	require.Empty(t, why)
	assert.Equal(t, 4, indent, "dashes at the key's column")
	assert.True(t, strings.HasSuffix(doc[:at], "        lines\n"), "after the block scalar: %q", doc[:at])
	assert.Equal(t, "\n# trailing comment\n", doc[at:], "before the blank line and trailing comment")
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// A family's configuration fills the controls, gaps, hardware scope,
// bundle directory and tokenizer of the entries --write proposes; the
// result still reconciles (bundle compared by base name).
func TestWriteRecordsFamilyDefaults(t *testing.T) {
	repo := specstest.Fixture(t)
	snap := repo.Snapshot(t, "main")
	cfg := specs.DefaultConfig()
	path := copyInventory(t, "")
	inv := loadFixtureInventory(t, path)
	r := Reconcile(cfg, snap, inv, "detection")
	defaults := func(family string) *EntryDefaults {
		if family != "detectors" {
			return nil
		}
		return &EntryDefaults{Controls: []string{"score_threshold"}, Gaps: []string{"batch of images"}, Hardware: []string{"gb300"},
			BundleDir: "../bundles", Tokenizer: "../tokenizers/{profile}"}
	}
	p, err := WriteProposals(r, inv, []string{path}, nil, defaults)
	require.NoError(t, err)
	require.True(t, p.Appended)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(data), `      - id: det-large
        checkpoint: example/det-large
        family: detectors
        task: object_detection
        kind: normal
        precision: fp32
        parallelism:
          tp: 1
        bundle:
          path: ../bundles/det-large.bundle
        tokenizer:
          path: ../tokenizers/det-large
        controls: [score_threshold]
        gaps: [batch of images]
        hardware: [gb300]
        status: planned
`)
	after := Reconcile(cfg, snap, loadFixtureInventory(t, path), "detection")
	assert.Zero(t, after.Summary.Missing)
	assert.Zero(t, after.Summary.Drift)
}

// Everything --write writes passes the validation every verb applies when
// it reads the inventory back (issue 25, item 13): a manifest named
// `$(touch${IFS}PWNED)` with U+202E was appended, and every later verb
// then exited 2 on the file. Such an entry is written nowhere, the refusal
// names the manifest field, and the valid entries are still appended.
func TestWriteRefusesEntriesTheInventoryWouldReject(t *testing.T) {
	path := copyInventory(t, "")
	inv, err := inventory.Load([]string{path}, nil)
	require.NoError(t, err)
	row := func(name, family, manifest string) Row {
		return Row{Profile: name, Family: family, Checkpoint: "example/" + family, Kind: "normal", State: StateMissing,
			Precision: "fp16", Bundle: name + ".bundle", Task: "object_detection", Manifest: manifest}
	}
	hostile := "$(touch${IFS}PWNED)\u202e"
	r := &Report{Group: "detection", Repo: "repo", Ref: "main", Commit: "c0ffee", Rows: []Row{
		row(hostile, "detectors", "tests/e2e/models/det/manifests/evil.json"),
		row("fine-det", "detectors", "tests/e2e/models/det/manifests/fine.json"),
		row("bad-family", "../fam", "tests/e2e/models/det/manifests/bad-family.json"),
		{Profile: "no-checkpoint", Family: "detectors", State: StateMissing, Precision: "fp16", Task: "object_detection",
			Manifest: "tests/e2e/models/det/manifests/no-checkpoint.json"},
	}}
	p, err := WriteProposals(r, inv, []string{path}, nil, nil)
	require.NoError(t, err)
	assert.True(t, p.Appended)
	assert.Equal(t, []string{"fine-det"}, p.Profiles)
	require.Len(t, p.Refused, 3)
	assert.Equal(t, `"$(touch${IFS}PWNED)\u202e"`, p.Refused[0].Profile, "quoted, never raw")
	assert.Contains(t, p.Refused[0].Problem, "tests/e2e/models/det/manifests/evil.json: name: ")
	assert.Contains(t, p.Refused[0].Problem, "is not a valid name")
	assert.Contains(t, p.Refused[1].Problem, "bad-family.json: family: ")
	assert.Contains(t, p.Refused[2].Problem, "no-checkpoint.json: checkpoint: missing")
	for _, x := range p.Refused {
		assert.NotContains(t, x.Problem, "\u202e")
		assert.NotContains(t, x.Profile, "\u202e")
	}
	text := mustRead(t, path)
	assert.NotContains(t, text, "PWNED")
	assert.Contains(t, text, "- id: fine-det")
	// Read back as every verb reads it: no problem.
	_, err = inventory.Load([]string{path}, nil)
	assert.NoError(t, err)

	// Nothing valid left: nothing is written, the inventory is untouched.
	path2 := copyInventory(t, "")
	inv2, err := inventory.Load([]string{path2}, nil)
	require.NoError(t, err)
	r.Rows = r.Rows[:1]
	before := mustRead(t, path2)
	p, err = WriteProposals(r, inv2, []string{path2}, nil, nil)
	require.NoError(t, err)
	assert.Empty(t, p.Profiles)
	assert.Len(t, p.Refused, 1)
	assert.Equal(t, before, mustRead(t, path2))
	assert.NoFileExists(t, filepath.Join(filepath.Dir(path2), "inventory.detection.proposed.yaml"))
}

// TestInsertionPointCases: where the append goes, whatever follows the
// list, and what is refused.
func TestInsertionPointCases(t *testing.T) {
	for name, tc := range map[string]struct {
		doc, group string
		before     string // what precedes the insertion point
		indent     int
		why        string
	}{
		"another group follows": {doc: "groups:\n  g:\n    profiles:\n      - id: a\n\n  h:\n    profiles:\n      - id: b\n", group: "g",
			before: "      - id: a\n", indent: 6},
		"a key follows in the group": {doc: "groups:\n  g:\n    profiles:\n    - id: a\n    # about x\n    x: 1\n", group: "g",
			before: "    - id: a\n", indent: 4},
		"the last group, then a document": {doc: "groups:\n  g:\n    profiles:\n    - id: a\n---\nother: 1\n", group: "g",
			before: "    - id: a\n", indent: 4},
		"the last group at the end": {doc: "groups:\n  h:\n    profiles:\n    - id: b\n  g:\n    profiles:\n    - id: a", group: "g",
			before: "    - id: a", indent: 4},
		"flow list":     {doc: "groups:\n  g:\n    profiles: [{id: a}]\n", group: "g", why: "groups.g.profiles is not a non-empty block list"},
		"empty list":    {doc: "groups:\n  g:\n    profiles: []\n", group: "g", why: "groups.g.profiles is not a non-empty block list"},
		"flow group":    {doc: "groups: {g: {profiles: [{id: a}]}}\n", group: "g", why: "groups.g.profiles is not a non-empty block list"},
		"no such group": {doc: "groups:\n  g:\n    profiles:\n    - id: a\n", group: "x", why: "group x is not a mapping in the file"},
		"no groups":     {doc: "schema: x\n", group: "g", why: "the inventory file has no groups mapping"},
		"not YAML":      {doc: "groups: [\n", group: "g", why: "the inventory file does not parse as YAML"},
	} {
		at, indent, why := insertionPoint([]byte(tc.doc), tc.group)
		if tc.why != "" {
			assert.Equal(t, tc.why, why, name)
			continue
		}
		require.Empty(t, why, name)
		assert.True(t, strings.HasSuffix(tc.doc[:at], tc.before), "%s: inserts after %q, at %q", name, tc.before, tc.doc[:at])
		assert.Equal(t, tc.indent, indent, name)
	}
}
