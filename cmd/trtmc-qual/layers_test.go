package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The import rules of docs/design.md ("Packages and who may import whom"),
// checked against `go list`. A package missing from this table fails the
// test: a new package gets a row here and in docs/design.md.
//
// Entries are module-relative. "x/..." matches x and everything under it.
var mayImport = map[string][]string{
	// The shared leaves: they import nothing of ours, so every layer, the
	// reference target included, may import them.
	"reports/text":   nil, // text for people: terminal escaping, shell quoting, line and word helpers
	"reports/fileio": nil, // safe file I/O: atomic writes, capped regular-file reads, line readers, the flock

	// Leaves of one job each: they import at most the shared leaves.
	"reports/evidence":         {"reports/fileio", "reports/text"}, // the seal, redaction, the group lock
	"reports/junit":            nil,                                // the JUnit XML model
	"reports/markdown":         nil,                                // Markdown tables of the reports that are not rows
	"reports/stats":            nil,                                // intervals, drift, trials and the baseline rule (stdlib and gonum)
	"reports/golden":           nil,                                // tests only: golden files, tree copies
	"schemas":                  nil,                                // the JSON Schemas and their generator
	"inventory/specs/gitread":  nil,                                // the one safe git command line, read-only
	"qual/proc":                {"reports/text"},                   // child processes, the subreaper and its sweep
	"families/trtmc/trtmctest": nil,                                // tests only: the strict fake TRTMC programs

	// The reference target (trtmc-refserver and the GPU family): a program
	// of its own, importing nothing of the harness but the shared leaves;
	// its own leaves first.
	"families/reftarget/imaging":      nil,       // image decoding and drawing
	"families/reftarget/internal/rng": nil,       // its deterministic random numbers
	"families/reftarget/bundle":       reftarget, // bundle files
	"families/reftarget/check":        reftarget, // the correctness case
	"families/reftarget/corpus":       reftarget, // corpus generation
	"families/reftarget/detect":       reftarget, // the tiny detector
	"families/reftarget/native":       reftarget, // the native runner
	"families/reftarget/server":       reftarget, // the HTTP server (trtmc-server's contract)
	"families/reftarget/task":         reftarget, // the Task both paths call
	"families/reftarget/vlm":          reftarget, // the tiny VLM
	"cmd/trtmc-refserver":             reftarget, // its wiring

	// Configuration.
	"inventory": {"reports/fileio", "reports/text", "reports/verdict"}, // the inventory: schema, loading, validation
	"families":  {"reports/fileio", "reports/verdict"},                 // family configuration; its semantics are verdict.Semantics

	// The verdict: the row model, the reason codes and Judge.
	"reports/verdict": {"reports/fileio", "reports/text"}, // the row model, reason codes and classes, Judge

	// The row model, the specs and what compares the inventory with them.
	"reports":                     {"reports/verdict", "reports/evidence", "reports/fileio", "reports/junit", "reports/markdown", "reports/text"}, // the one row model, Judge, renderers
	"reports/publish":             {"reports", "reports/verdict", "reports/evidence", "reports/fileio", "reports/text"},                           // publication: roots, the Scrubber, the public report, the leak scanner
	"reports/verdict/verdicttest": {"reports/verdict"},                                                                                            // tests only: row fixtures that Judge gives a chosen verdict
	"reports/publish/export":      {"reports", "reports/publish", "reports/verdict", "reports/evidence", "reports/fileio", "reports/text"},        // the public evidence pack
	"inventory/specs":             {"inventory", "inventory/specs/gitread", "reports/fileio", "reports/junit", "reports/text"},                    // TRTMC's manifests at a commit
	"inventory/specs/specstest":   {"inventory/specs", "inventory/specs/gitread", "reports/golden"},                                               // tests only: fixture TRTMC repositories
	"inventory/reconcile":         {"inventory", "inventory/specs", "reports/fileio", "reports/markdown", "reports/text"},                         // the inventory against the specs
	"inventory/drift":             {"inventory/specs", "inventory/specs/gitread", "reports/markdown", "reports/text"},                             // the specs between two commits
	"families/trtmc":              {"families", "inventory/specs/...", "reports/fileio", "reports/text", "qual/proc"},                             // the adapters to real TRTMC

	// The pipeline and what runs it.
	"qual/aiperf":     {"qual/proc", "reports/fileio"},                                                                                                                                                                            // the AIPerf 0.13.0 driver
	"qual/streamjoin": {"qual/aiperf", "reports/evidence", "reports/fileio", "reports/text", "families", "reports", "reports/verdict"},                                                                                            // the one join
	"qual":            {"qual/aiperf", "qual/proc", "qual/streamjoin", "reports/evidence", "reports/fileio", "reports/text", "inventory", "inventory/specs/gitread", "families", "reports", "reports/publish", "reports/verdict"}, // the pipeline, scheduling, rejudge
	"qual/slurm":      {"qual", "qual/proc", "reports/fileio", "reports/text", "inventory", "families", "reports", "reports/verdict"},                                                                                             // the Slurm executor
	"qual/doctor":     {"qual", "qual/aiperf", "qual/proc", "reports/fileio", "reports/text", "inventory", "inventory/specs/gitread", "families", "families/trtmc", "reports", "reports/verdict"},                                 // host checks
	"qual/ci":         {"inventory", "inventory/specs", "inventory/specs/gitread", "inventory/reconcile", "inventory/drift", "families", "reports/junit", "reports/markdown", "reports/text"},                                     // the premerge job

	// Tests only: the test double of proc.Runner.
	"qual/proc/proctest": {"qual/proc"}, // FakeRunner, FakeProcess

	// Tools (make bench), not product: nothing of the product imports them.
	"scripts/benchtools/synth":                {"inventory", "reports/evidence", "reports/fileio", "reports", "reports/verdict"}, // synthetic sealed evidence
	"scripts/benchtools/gen-aiperf-artifacts": {"scripts/benchtools/synth"},                                                      // its command
	"scripts/benchtools/noise":                {"reports", "reports/verdict", "reports/fileio", "reports/stats"},                 // timing noise and the baseline rule's false and true calls
	"scripts/benchtools/baseline-noise":       {"reports", "reports/verdict", "reports/stats", "scripts/benchtools/noise"},       // its command (make bench parts 5 and 6)

	// The wiring.
	"cmd/trtmc-qual": {"inventory/...", "families", "families/trtmc", "qual/...", "reports/...", "reports/evidence"},
}

// reftarget is what a package of the reference target may import: itself
// and the shared leaves.
var reftarget = []string{"families/reftarget/...", "reports/fileio", "reports/text"}

// modulePackages returns each package of the module (module-relative) with
// the module packages it imports directly (not counting tests).
func modulePackages(t *testing.T) (module string, imports map[string][]string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m").Output()
	require.NoError(t, err)
	module = strings.TrimSpace(string(out))
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...")
	out, err = cmd.Output()
	require.NoError(t, err, "go list")
	imports = map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		imports[pkg] = []string{}
		for _, imp := range f[1:] {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				imports[pkg] = append(imports[pkg], strings.TrimPrefix(imp, module+"/"))
			}
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, imports)
	return module, imports
}

func allowed(rules []string, imp string) bool {
	for _, r := range rules {
		if base, ok := strings.CutSuffix(r, "/..."); ok {
			if imp == base || strings.HasPrefix(imp, base+"/") {
				return true
			}
		} else if imp == r {
			return true
		}
	}
	return false
}

func TestImportRules(t *testing.T) {
	_, imports := modulePackages(t)
	var bad []string
	for pkg, imps := range imports {
		rules, ok := mayImport[pkg]
		if !ok {
			bad = append(bad, pkg+": not in the import rules (layers_test.go, docs/design.md)")
			continue
		}
		for _, imp := range imps {
			if !allowed(rules, imp) {
				bad = append(bad, pkg+" imports "+imp)
			}
		}
	}
	for pkg := range mayImport {
		if _, ok := imports[pkg]; !ok {
			bad = append(bad, pkg+": in the import rules but no such package")
		}
	}
	sort.Strings(bad)
	require.Empty(t, bad, "docs/design.md's import rules")
}

// TestLeavesImportNothingOfOurs checks the leaves through `go list -deps`:
// not even indirectly do they depend on a package of this module, so any
// layer may import them without reaching up.
func TestLeavesImportNothingOfOurs(t *testing.T) {
	module, _ := modulePackages(t)
	for pkg, rules := range mayImport {
		if rules != nil {
			continue
		}
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"/"+pkg).Output()
		require.NoError(t, err, pkg)
		for _, dep := range strings.Fields(string(out)) {
			if dep != module+"/"+pkg && strings.HasPrefix(dep, module+"/") {
				t.Errorf("leaf %s depends on %s", pkg, dep)
			}
		}
	}
}

// TestNothingBelowQualReachesUp checks with `go list -deps` that no package
// outside qual/ and cmd/ depends on qual/, except on the leaf qual/proc.
func TestNothingBelowQualReachesUp(t *testing.T) {
	module, imports := modulePackages(t)
	for pkg := range imports {
		if strings.HasPrefix(pkg, "qual") || strings.HasPrefix(pkg, "cmd/") {
			continue
		}
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"/"+pkg).Output()
		require.NoError(t, err, pkg)
		for _, dep := range strings.Fields(string(out)) {
			rel := strings.TrimPrefix(dep, module+"/")
			if (rel == "qual" || strings.HasPrefix(rel, "qual/")) && rel != "qual/proc" {
				t.Errorf("%s depends on %s: a lower layer reaches up into qual", pkg, rel)
			}
		}
	}
}
