package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The import rules of docs/design.md ("Packages"; TestDesignMapIsTheImportRules),
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
	"inventory/endpoint":       nil,                                // the AIPerf endpoint types as plug-ins, registered once each
	"families/proc":            {"reports/text"},                   // child processes, the subreaper and its sweep
	"families/trtmc/trtmctest": nil,                                // tests only: the strict fake TRTMC programs

	// The reference target (trtmc-refserver and the GPU family): a program
	// of its own, importing nothing of the harness but the shared leaves;
	// its own leaves first.
	"families/reference-target/imaging":      nil,             // image decoding and drawing
	"families/reference-target/internal/rng": nil,             // its deterministic random numbers
	"families/reference-target/bundle":       referenceTarget, // bundle files
	"families/reference-target/check":        referenceTarget, // the correctness case
	"families/reference-target/corpus":       referenceTarget, // corpus generation
	"families/reference-target/detect":       referenceTarget, // the tiny detector
	"families/reference-target/native":       referenceTarget, // the native runner
	"families/reference-target/server":       referenceTarget, // the HTTP server (trtmc-server's contract)
	"families/reference-target/task":         referenceTarget, // the Task both paths call
	"families/reference-target/vlm":          referenceTarget, // the tiny VLM
	"cmd/trtmc-refserver":                    referenceTarget, // its wiring

	// Configuration.
	"inventory": {"reports/fileio", "reports/text", "reports/verdict", "inventory/endpoint"}, // the inventory: schema, loading, validation
	"families":  {"reports/fileio", "reports/verdict", "inventory/endpoint"},                 // family configuration; its semantics are verdict.Semantics

	// The verdict: the row model, the reason codes and Judge.
	"reports/verdict": {"reports/fileio", "reports/text"}, // the row model, reason codes and classes, Judge

	// The row model, the specs and what compares the inventory with them.
	"reports":                     {"reports/verdict", "reports/evidence", "reports/fileio", "reports/junit", "reports/markdown", "reports/stats", "reports/text"}, // the one row model, Judge, renderers, --baseline
	"reports/publish":             {"reports", "reports/verdict", "reports/evidence", "reports/fileio", "reports/text"},                                            // publication: roots, the Scrubber, the public report, the leak scanner
	"reports/verdict/verdicttest": {"reports/verdict"},                                                                                                             // tests only: row fixtures that Judge gives a chosen verdict
	"reports/publish/export":      {"reports", "reports/publish", "reports/verdict", "reports/evidence", "reports/fileio", "reports/text"},                         // the public evidence pack
	"inventory/specs":             {"inventory", "inventory/specs/gitread", "reports/fileio", "reports/junit", "reports/text"},                                     // TRTMC's manifests at a commit
	"inventory/specs/specstest":   {"inventory/specs", "inventory/specs/gitread", "reports/golden"},                                                                // tests only: fixture TRTMC repositories
	"inventory/reconcile":         {"inventory", "inventory/specs", "reports/fileio", "reports/markdown", "reports/text"},                                          // the inventory against the specs
	"inventory/drift":             {"inventory/specs", "inventory/specs/gitread", "reports/fileio", "reports/markdown", "reports/text"},                            // the specs between two commits
	"families/trtmc":              {"families", "inventory/specs/...", "reports/fileio", "reports/text", "families/proc"},                                          // the adapters to real TRTMC

	// The pipeline and what runs it.
	"qual/aiperf":     {"families/proc", "reports/fileio", "inventory/endpoint"},                                                                                                                                                                            // the AIPerf 0.13.0 driver
	"qual/streamjoin": {"qual/aiperf", "reports/stats", "reports/evidence", "reports/fileio", "reports/text", "families", "reports", "reports/verdict", "inventory/endpoint"},                                                                               // the one join
	"qual":            {"qual/aiperf", "families/proc", "qual/streamjoin", "reports/evidence", "reports/fileio", "reports/text", "inventory", "inventory/specs/gitread", "families", "reports", "reports/publish", "reports/verdict", "inventory/endpoint"}, // the pipeline, scheduling, rejudge
	"qual/slurm":      {"qual", "families/proc", "reports/fileio", "reports/text", "inventory", "families", "reports", "reports/verdict"},                                                                                                                   // the Slurm executor
	"qual/doctor":     {"qual", "qual/aiperf", "families/proc", "reports/fileio", "reports/text", "inventory", "inventory/specs/gitread", "families", "families/trtmc", "reports", "reports/verdict", "inventory/endpoint"},                                 // host checks
	"qual/ci":         {"inventory", "inventory/specs", "inventory/specs/gitread", "inventory/reconcile", "inventory/drift", "families", "reports/junit", "reports/markdown", "reports/text"},                                                               // the premerge job

	// Tests only: the test double of proc.Runner.
	"families/proc/proctest": {"families/proc"}, // FakeRunner, FakeProcess

	// Tools (make bench), not product: nothing of the product imports them.
	"scripts/benchtools/synth":                {"inventory", "reports/evidence", "reports/fileio", "reports", "reports/verdict", "inventory/endpoint"}, // synthetic sealed evidence
	"scripts/benchtools/gen-aiperf-artifacts": {"scripts/benchtools/synth"},                                                                            // its command
	"scripts/benchtools/noise":                {"reports", "reports/verdict", "reports/fileio", "reports/stats"},                                       // timing noise and the baseline rule's false and true calls
	"scripts/benchtools/baseline-noise":       {"reports", "reports/verdict", "reports/stats", "scripts/benchtools/noise"},                             // its command (make bench parts 5 and 6)

	// The wiring.
	"cmd/trtmc-qual": {"inventory/...", "families", "families/proc", "families/trtmc", "qual/...", "reports/..."},
}

// referenceTarget is what a package of the reference target may import: itself
// and the shared leaves.
var referenceTarget = []string{"families/reference-target/...", "reports/fileio", "reports/text"}

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
// outside qual/ and cmd/ depends on qual/, not even indirectly.
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
			if rel == "qual" || strings.HasPrefix(rel, "qual/") {
				t.Errorf("%s depends on %s: a lower layer reaches up into qual", pkg, rel)
			}
		}
	}
}

// floors are the top-level folders as floors of the house, bottom up: a
// package imports only from its own floor or one below (the tools under
// scripts/ stand beside the product and may import any of it).
var floors = map[string]int{"reports": 1, "schemas": 1, "inventory": 2, "families": 3, "qual": 4, "cmd": 5, "scripts": 6}

// pendingUp are the arrows known to run up, each with the work that
// removes it; the test fails when one is gone, so the list cannot go stale.
var pendingUp = map[[2]string]string{}

func floorOf(t *testing.T, pkg string) (string, int) {
	t.Helper()
	top, _, _ := strings.Cut(pkg, "/")
	f, ok := floors[top]
	require.True(t, ok, "%s: top-level folder %q has no floor in layers_test.go", pkg, top)
	return top, f
}

// TestEveryArrowPointsDown checks that no direct import runs from a
// top-level folder up to a higher one.
func TestEveryArrowPointsDown(t *testing.T) {
	_, imports := modulePackages(t)
	seen := map[[2]string]bool{}
	for pkg, imps := range imports {
		from, ff := floorOf(t, pkg)
		for _, imp := range imps {
			to, ft := floorOf(t, imp)
			if ft <= ff {
				continue
			}
			arrow := [2]string{from, to}
			seen[arrow] = true
			if _, ok := pendingUp[arrow]; !ok {
				t.Errorf("%s imports %s: an arrow from floor %s up to %s", pkg, imp, from, to)
			}
		}
	}
	for arrow, why := range pendingUp {
		if !seen[arrow] {
			t.Errorf("%s → %s no longer runs up (%s): drop it from pendingUp", arrow[0], arrow[1], why)
		}
	}
}

// designMap reads docs/design.md's table of packages ("## Packages"): each
// line's package (a "/..." one covers a folder) with what it may import,
// the backquoted paths of the last column ("a/{b,c}" is a/b and a/c) and
// the word "leaves" for the two shared leaves.
func designMap(t *testing.T) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile(repoFile("docs", "design.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n## Packages\n")
	require.True(t, ok, "docs/design.md has a \"## Packages\" section")
	section, _, _ = strings.Cut(section, "\n## ")
	code := regexp.MustCompile("`([^`]+)`")
	leaves := regexp.MustCompile(`\bleaves\b`)
	rows := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		require.Len(t, cells, 3, "docs/design.md: a package line has three cells: %s", line)
		pkg := code.FindStringSubmatch(cells[0])
		require.NotNil(t, pkg, "docs/design.md: %s", line)
		_, dup := rows[pkg[1]]
		require.False(t, dup, "docs/design.md: %s has two lines", pkg[1])
		rules := []string{}
		for _, m := range code.FindAllStringSubmatch(cells[2], -1) {
			rules = append(rules, expandBraces(m[1])...)
		}
		if leaves.MatchString(code.ReplaceAllString(cells[2], "")) {
			rules = append(rules, "reports/fileio", "reports/text")
		}
		rows[pkg[1]] = rules
	}
	require.NotEmpty(t, rows)
	return rows
}

// expandBraces expands one "{a,b}" group: "reports/{verdict,evidence}" is
// reports/verdict and reports/evidence.
func expandBraces(s string) []string {
	pre, rest, ok := strings.Cut(s, "{")
	if !ok {
		return []string{s}
	}
	alts, post, _ := strings.Cut(rest, "}")
	var out []string
	for _, a := range strings.Split(alts, ",") {
		out = append(out, pre+a+post)
	}
	return out
}

// TestDesignMapIsTheImportRules: docs/design.md's table of packages is
// mayImport: a line for every package (a "/..." line for a folder whose
// packages may import together what it says), and what each may import,
// the same set.
func TestDesignMapIsTheImportRules(t *testing.T) {
	rows := designMap(t)
	set := func(rules []string) []string {
		out := append([]string{}, rules...)
		sort.Strings(out)
		return slices.Compact(out)
	}
	covered := map[string][]string{} // design line -> union of its packages' rules
	for pkg, rules := range mayImport {
		line := pkg
		if _, ok := rows[pkg]; !ok {
			line = ""
			for r := range rows {
				if base, ok := strings.CutSuffix(r, "/..."); ok && (pkg == base || strings.HasPrefix(pkg, base+"/")) {
					line = r
				}
			}
		}
		if line == "" {
			t.Errorf("%s: no line in docs/design.md's table of packages", pkg)
			continue
		}
		covered[line] = append(covered[line], rules...)
	}
	for line, rules := range rows {
		got, ok := covered[line]
		if !ok {
			t.Errorf("docs/design.md: %s is no package of layers_test.go's mayImport", line)
			continue
		}
		assert.Equal(t, set(got), set(rules), "docs/design.md: what %s may import (layers_test.go's mayImport)", line)
	}
}
