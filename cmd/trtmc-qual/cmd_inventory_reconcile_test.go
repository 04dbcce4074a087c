package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/reconcile"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/specstest"
)

// specsFixture is a throwaway TRTMC-layout git repository (main = the base
// fixture, feature = the head fixture of inventory/specs/testdata, built by
// specstest), with an
// inventory and a family configuration whose family names fit it.
type specsFixture struct {
	Repo      string
	Base      string
	Head      string
	Inventory string
	Families  string
	Dir       string
}

func newSpecsFixture(t *testing.T) specsFixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	td := specstest.Testdata()
	repo := t.TempDir()
	fixture := specstest.Build(t, repo)
	base, head := fixture.Base, fixture.Head

	// The family configuration knows the fixture's TRTMC families by name
	// (a copy of the shipped one, renamed), so --write can append.
	dir := t.TempDir()
	fams, err := os.ReadFile(repoFile("families", "families.yaml"))
	require.NoError(t, err)
	famText := strings.Replace(string(fams), "\n  ref-detect:\n", "\n  detectors:\n", 1)
	famText = strings.Replace(famText, "\n  ref-vlm:\n", "\n  vislm:\n", 1)
	famFile := filepath.Join(dir, "families.yaml")
	require.NoError(t, os.WriteFile(famFile, []byte(famText), 0o644))
	inv, err := os.ReadFile(filepath.Join(td, "inventory.yaml"))
	require.NoError(t, err)
	invText := strings.NewReplacer("family: ocrish", "family: vislm", "family: texty", "family: vislm").Replace(string(inv))
	invFile := filepath.Join(dir, "inventory.yaml")
	require.NoError(t, os.WriteFile(invFile, []byte(invText), 0o644))
	return specsFixture{Repo: repo, Base: base, Head: head, Inventory: invFile, Families: famFile, Dir: dir}
}

func (fx specsFixture) args(args ...string) []string {
	return append(args, "--inventory", fx.Inventory, "--families", fx.Families)
}

func TestInventoryReconcileCLI(t *testing.T) {
	fx := newSpecsFixture(t)
	tests := []struct {
		name     string
		args     []string
		code     exitCode
		stdout   []string
		stderr   []string
		noStdout bool
	}{
		{
			name: "vlm tab-separated when piped",
			args: []string{"inventory", "reconcile", "--repo", fx.Repo, "--group", "vlm"},
			code: exitFailed,
			stdout: []string{
				"legacy-vl\tlegacyvl\texample/Legacy-VL\tnormal\tnormal.only-profile: the only full profile of its checkpoint\tmissing\tnot in the inventory\ttests/e2e/models/legacyvl/manifests/legacy-vl.json@d125bef1fac0\n",
				"alpha-vl-2b\tvislm\texample/Alpha-VL-2B\tnormal\tnormal.only-profile: the only full profile of its checkpoint\tok\t\ttests/e2e/models/vislm/manifests/alpha-vl-2b.json@38a0676e9f6f\n",
				"alpha-vl-2b-tp2\tvislm\texample/Alpha-VL-2B\tvariant\tvariant.build_args.parallel: build_args.parallel tensor_parallel tp=2 (of alpha-vl-2b)\tvariant\tin the inventory as a variant profile\ttests/e2e/models/vislm/manifests/alpha-vl-2b-tp2.json@6eee3a52c688\n",
				"beta-vl-7b\tvislm\texample/Beta-VL-7B\tnormal\t",
				"\tdrift\tprecision: inventory fp32, spec fp16; bundle: inventory beta-7b.bundle, spec beta-vl-7b.bundle\ttests/e2e/models/vislm/manifests/beta-vl-7b.json@ab6f3268500f\n",
				"ocr-one\tocrish\texample/OCR-One\tnormal\tnormal.only-profile: the only full profile of its checkpoint\texcluded\texcluded: public CI OOM; verified locally\ttests/e2e/models/ocrish/manifests/ocr-one.json@bb1558b30f6d\n",
				"alpha-vl-2b-extra\t", "\tunlisted\tnot listed in tests/e2e/models/vislm/MODEL.toml test_manifests\ttests/e2e/models/vislm/manifests/alpha-vl-2b-extra.json@fb942e94ba09\n",
				"ocr-broken\tocrish\t-\t-\tspec.malformed-json\tinvalid\tline 5: malformed JSON: unexpected EOF\ttests/e2e/models/ocrish/manifests/ocr-broken.json\n",
				"old-vl\tvislm\texample/Old-VL\tnormal\tinventory: kind as recorded in the inventory\tstale\tno manifest named old-vl at " + fx.Base[:7] + "\t-\n",
			},
			stderr: []string{"vlm @ " + fx.Base[:7] + ": 4 normal (1 ok, 1 missing, 1 drift, 1 excluded), 3 variants, 2 partials, 2 stale, 1 unlisted, 2 invalid; 7 need action\n"},
		},
		{
			name: "detection at a sha, markdown",
			args: []string{"inventory", "reconcile", "--repo", fx.Repo, "--ref", fx.Base[:10], "--group", "detection", "--format", "md"},
			code: exitFailed,
			stdout: []string{"### Reconcile `detection` against " + fx.Base[:10] + " @ `" + fx.Base[:7] + "`",
				"| `det-large` | detectors | `example/det-large` | normal |", "| **missing** |",
				"| `det-repro` | detectors | `det-local-weights` | partial | partial.testcase-category: every testcase has test_category \"regression\" | partial |",
				"- `example/det-huge`: `det-huge-tp2`"},
			stderr: []string{"1 need action", "gap: example/det-huge has no normal profile (only det-huge-tp2)"},
		},
		{
			name:   "the ref's content, not the work tree's",
			args:   []string{"inventory", "reconcile", "--repo", fx.Repo, "--ref", "feature", "--group", "vlm"},
			code:   exitFailed,
			stdout: []string{"alpha-vl-2b\tvislm\texample/Alpha-VL-2B\tnormal\tnormal.only-profile: the only full profile of its checkpoint\tdrift\tprecision: inventory fp16, spec bf16\ttests/e2e/models/vislm/manifests/alpha-vl-2b.json@8d0a294a7b35\n", "gamma-vl-4b\t", "orphan-one\torphan\t"},
			stderr: []string{"vlm @ " + fx.Head[:7] + ": "},
		},
		{name: "unknown group", args: []string{"inventory", "reconcile", "--repo", fx.Repo, "--group", "audio"},
			code: exitUsage, stderr: []string{`unknown group "audio": valid groups are detection, vlm`}, noStdout: true},
		{name: "unknown ref", args: []string{"inventory", "reconcile", "--repo", fx.Repo, "--ref", "nope", "--group", "vlm"},
			code: exitUsage, stderr: []string{`unknown ref "nope"`}, noStdout: true},
		{name: "not a repository", args: []string{"inventory", "reconcile", "--repo", t.TempDir(), "--group", "vlm"},
			code: exitUsage, stderr: []string{"not a git repository"}, noStdout: true},
		{name: "repo required", args: []string{"inventory", "reconcile", "--group", "vlm"},
			code: exitUsage, stderr: []string{"--repo is required"}, noStdout: true},
		{name: "bad format", args: []string{"inventory", "reconcile", "--repo", fx.Repo, "--group", "vlm", "--format", "xml"},
			code: exitUsage, stderr: []string{"valid values are"}, noStdout: true},
		{name: "bad spec-groups file", args: []string{"inventory", "reconcile", "--repo", fx.Repo, "--group", "vlm", "--spec-groups", fx.Inventory},
			code: exitUsage, stderr: []string{"spec groups " + fx.Inventory}, noStdout: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, nil, fx.args(tt.args...)...)
			assert.Equal(t, tt.code, code, "stderr: %s", errOut)
			for _, s := range tt.stdout {
				assert.Contains(t, out, s)
			}
			for _, s := range tt.stderr {
				assert.Contains(t, errOut, s)
			}
			if tt.noStdout {
				assert.Empty(t, out)
			}
		})
	}
}

func TestInventoryReconcileJSONContract(t *testing.T) {
	fx := newSpecsFixture(t)
	code, out, _ := runCLI(t, nil, fx.args("inventory", "reconcile", "--repo", fx.Repo, "--group", "detection", "-o", "json")...)
	assert.Equal(t, exitFailed, code)
	var doc struct {
		Schema  string `json:"schema"`
		Group   string `json:"group"`
		Commit  string `json:"commit"`
		Ref     string `json:"ref"`
		Rows    []map[string]any
		Summary map[string]int `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, reconcile.Schema, doc.Schema)
	assert.Equal(t, fx.Base, doc.Commit)
	assert.Equal(t, "main", doc.Ref)
	assert.Len(t, doc.Rows, 8)
	for _, row := range doc.Rows {
		for _, key := range []string{"profile", "family", "checkpoint", "kind", "rule", "reason", "state", "detail", "needs_action"} {
			assert.Contains(t, row, key)
		}
	}
	assert.Equal(t, map[string]int{"normal": 2, "ok": 1, "missing": 1, "drift": 0, "excluded": 0, "variants": 3, "partials": 3,
		"stale": 0, "unlisted": 0, "invalid": 0, "need_action": 1}, doc.Summary)
}

func TestInventoryReconcileWrite(t *testing.T) {
	fx := newSpecsFixture(t)
	before, err := os.ReadFile(fx.Inventory)
	require.NoError(t, err)

	// detection: det-large is missing; its family is configured, so the
	// planned entry is appended and a second reconcile is clean.
	code, _, errOut := runCLI(t, nil, fx.args("inventory", "reconcile", "--repo", fx.Repo, "--group", "detection", "--write")...)
	assert.Equal(t, exitFailed, code, "the exit status describes the state before writing")
	assert.Contains(t, errOut, "write: appended 1 planned profile(s) to "+fx.Inventory+": det-large")
	after, err := os.ReadFile(fx.Inventory)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(after), string(before[:strings.Index(string(before), "  # The detection group follows")])))
	assert.Contains(t, string(after), "      - id: det-large\n")
	code, _, errOut = runCLI(t, nil, fx.args("inventory", "reconcile", "--repo", fx.Repo, "--group", "detection")...)
	assert.Equal(t, exitOK, code, errOut)
	assert.Contains(t, errOut, "detection @ "+fx.Base[:7]+": 2 normal (2 ok), 3 variants, 3 partials; 0 need action")
	code, _, errOut = runCLI(t, nil, fx.args("inventory", "validate")...)
	assert.Equal(t, exitOK, code, errOut)

	// vlm: legacy-vl's family (legacyvl) is not configured: the inventory
	// is left alone and a proposal file says why.
	mid, err := os.ReadFile(fx.Inventory)
	require.NoError(t, err)
	code, _, errOut = runCLI(t, nil, fx.args("inventory", "reconcile", "--repo", fx.Repo, "--group", "vlm", "--write")...)
	assert.Equal(t, exitFailed, code)
	proposal := filepath.Join(fx.Dir, "inventory.vlm.proposed.yaml")
	assert.Contains(t, errOut, "write: the inventory was NOT changed; 1 proposed profile(s) written to "+proposal+": legacy-vl")
	assert.Contains(t, errOut, `because profile legacy-vl: family: unknown family "legacyvl"`)
	now, err := os.ReadFile(fx.Inventory)
	require.NoError(t, err)
	assert.Equal(t, string(mid), string(now))
	assert.FileExists(t, proposal)
}

// Issue 36: --write edited the shipped inventory in place. It refuses an
// inventory shipped with trtmc-qual (an inventory/ directory beside the
// harness's go.mod, as inventory set judges it) unless --force, before
// anything is read or written; without --write it reconciles as ever.
func TestInventoryReconcileWriteRefusesTheShippedInventory(t *testing.T) {
	fx := newSpecsFixture(t)
	checkout := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(checkout, "go.mod"), []byte("module github.com/trtmc-qual/trtmc-qual\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(checkout, "inventory"), 0o755))
	shipped := filepath.Join(checkout, "inventory", "trtmc.yaml")
	before, err := os.ReadFile(fx.Inventory)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(shipped, before, 0o644))
	args := []string{"inventory", "reconcile", "--repo", fx.Repo, "--group", "detection", "--inventory", shipped, "--families", fx.Families}

	code, out, errOut := runCLI(t, nil, append(args, "--write")...)
	assert.Equal(t, exitUsage, code, errOut)
	assert.Empty(t, out, "refused before the rows")
	assert.Contains(t, errOut, "inventory reconcile --write: "+shipped+" is the inventory shipped with trtmc-qual ("+checkout+
		"): reconcile a copy (docs/trtmc.md, step 4), or pass --force to edit it")
	after, err := os.ReadFile(shipped)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "nothing written")

	code, _, errOut = runCLI(t, nil, args...)
	assert.Equal(t, exitFailed, code, "without --write: the rows, det-large missing: %s", errOut)

	code, _, errOut = runCLI(t, nil, append(args, "--write", "--force")...)
	assert.Equal(t, exitFailed, code, errOut)
	assert.Contains(t, errOut, "write: appended 1 planned profile(s) to "+shipped+": det-large")
}

// What --write says on stderr is escaped: a refused manifest name with
// U+202E never reaches the terminal raw (issue 25, item 13).
func TestReconcileWriteReportIsEscaped(t *testing.T) {
	io, _, stderr := testIO()
	reportProposal(io, &reconcile.Proposal{File: "inv.yaml", Appended: true, Profiles: []string{"fine"},
		Refused: []reconcile.Refusal{{Profile: `"$(touch${IFS}PWNED)\u202e"`, Manifest: "m/evil\u202e.json", Problem: "m/evil\u202e.json: name: bad"}}})
	out := stderr.String()
	assert.NotContains(t, out, "\u202e")
	assert.Contains(t, out, `write: refused "$(touch${IFS}PWNED)\u202e" from m/evil\u{202e}.json`)
	assert.Contains(t, out, "write: appended 1 planned profile(s) to inv.yaml: fine")
}

// TestInventoryReconcileOptions: the flags and the configured files reach
// the options (runF), the checks hold on the options alone, and the logic
// runs without cobra, --write appending to the configured inventory.
func TestInventoryReconcileOptions(t *testing.T) {
	var got *inventoryReconcileOptions
	code := withInventoryVerb(t, func(f *factory) *cobra.Command {
		return newInventoryReconcileCmd(f, func(o *inventoryReconcileOptions) error { got = o; return nil })
	}, "reconcile", "--repo", "r", "--ref", "v1", "-g", "vlm", "--write", "--inventory", "i.yaml", "--families", "f.yaml", "-o", "json")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "r", got.Repo)
	assert.Equal(t, "v1", got.Ref)
	assert.Equal(t, "vlm", got.Group)
	assert.True(t, got.Write)
	assert.Equal(t, []string{"i.yaml"}, got.Inventory)
	assert.Equal(t, "f.yaml", got.Families)
	assert.Equal(t, "json", got.Format)

	for want, o := range map[string]*inventoryReconcileOptions{
		"--repo is required":   {Group: "vlm"},
		"--group is required":  {Repo: "r"},
		"--group":              {Repo: "r", Group: "v lm"},
		`invalid format "csv"`: {Repo: "r", Group: "vlm", Format: "csv"},
	} {
		err := o.Validate()
		assert.Equal(t, exitUsage, codeFor(err), want)
		assert.ErrorContains(t, err, want)
	}

	fx := newSpecsFixture(t)
	io, out, errOut := testIO()
	opts := &inventoryReconcileOptions{IO: io, Repo: fx.Repo, Ref: "main", Group: "detection", Format: "json", Write: true,
		NewGit: gitCLI, Inventory: []string{fx.Inventory}, Families: fx.Families}
	err := runInventoryReconcile(context.Background(), opts)
	assert.Equal(t, exitFailed, codeFor(err), "det-large is missing before the write")
	var r reconcile.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	assert.Equal(t, 1, r.Summary.Missing)
	assert.Contains(t, errOut.String(), "write: appended 1 planned profile(s) to "+fx.Inventory+": det-large")
	io, _, _ = testIO()
	opts.IO, opts.Write = io, false
	assert.NoError(t, runInventoryReconcile(context.Background(), opts), "written: nothing needs action")
}
