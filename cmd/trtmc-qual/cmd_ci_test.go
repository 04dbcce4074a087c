package main

import (
	"context"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/qual/ci"
)

type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Skipped  int `xml:"skipped,attr"`
	Suites   []struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
			} `xml:"error"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) (junitDoc, map[string]string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc junitDoc
	require.NoError(t, xml.Unmarshal(data, &doc))
	require.Len(t, doc.Suites, 1)
	states := map[string]string{}
	for _, c := range doc.Suites[0].Cases {
		switch {
		case c.Failure != nil:
			states[c.Name] = "failed: " + c.Failure.Message
		case c.Error != nil:
			states[c.Name] = "error(" + c.Error.Type + "): " + c.Error.Message
		case c.Skipped != nil:
			states[c.Name] = "skipped: " + c.Skipped.Message
		default:
			states[c.Name] = "passed"
		}
	}
	return doc, states
}

func TestCICLI(t *testing.T) {
	fx := newSpecsFixture(t)
	// A clean inventory: detection agrees with the base once det-large is
	// planned (appended by reconcile --write).
	code, _, errOut := runCLI(t, nil, fx.args("inventory", "reconcile", "--repo", fx.Repo, "--group", "detection", "--write")...)
	require.Equal(t, exitFailed, code, errOut)

	tests := []struct {
		name    string
		args    []string
		code    exitCode
		steps   map[string]string
		order   []string
		summary []string
	}{
		{
			name: "everything checked, head drifts",
			args: []string{"--head", "feature"},
			code: exitFailed,
			order: []string{"validate-inventory", "validate-families", "reconcile-detection", "reconcile-vlm",
				"drift-detection", "drift-vlm", "smoke-detection", "smoke-vlm"},
			steps: map[string]string{
				"validate-inventory":  "passed",
				"validate-families":   "passed",
				"reconcile-detection": "passed",
				"reconcile-vlm":       "failed: vlm @ " + fx.Base[:7] + ": 4 normal (1 ok, 1 missing, 1 drift, 1 excluded), 3 variants, 2 partials, 2 stale, 1 unlisted, 2 invalid; 7 need action",
				"drift-detection":     "failed: detection: 1 file differs between main @ " + fx.Base[:7] + " and feature @ " + fx.Head[:7] + " (1 manifest)",
				"drift-vlm":           "failed: vlm: 7 files differ between main @ " + fx.Base[:7] + " and feature @ " + fx.Head[:7] + " (3 manifest, 1 model_toml, 2 reference, 1 threshold)",
				"smoke-detection":     "skipped: not asked (--smoke)",
				"smoke-vlm":           "skipped: not asked (--smoke)",
			},
			summary: []string{"## trtmc-qual ci: ❌ checks failed (exit 1)", "| `drift-vlm` | ❌ failed |",
				"<details open><summary><code>reconcile-vlm</code>: ❌ failed</summary>",
				"| `legacy-vl` | legacyvl | `example/Legacy-VL` | normal |"},
		},
		{
			name:  "clean group, no drift",
			args:  []string{"--group", "detection"},
			code:  exitOK,
			order: []string{"validate-inventory", "validate-families", "reconcile-detection", "drift-detection", "smoke-detection"},
			steps: map[string]string{
				"reconcile-detection": "passed",
				"drift-detection":     "passed",
			},
			summary: []string{"## trtmc-qual ci: ✅ all checks passed", "| `reconcile-detection` | ✅ passed | detection @ " + fx.Base[:7] + ": 2 normal (2 ok)"},
		},
		{
			name: "unknown base is a usage error",
			args: []string{"--base", "nope", "--group", "detection"},
			code: exitUsage,
			steps: map[string]string{
				"reconcile-detection": `error(configuration-error): unknown ref "nope" in $TRTMC_REPO`, // published: the checkout is a named root
				"drift-detection":     `error(configuration-error): base nope: unknown ref "nope" in $TRTMC_REPO`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			junit, summary := filepath.Join(dir, "ci", "junit.xml"), filepath.Join(dir, "ci", "summary.md")
			args := fx.args(append([]string{"ci", "--repo", fx.Repo, "--junit", junit, "--summary", summary}, tt.args...)...)
			code, out, errOut := runCLI(t, nil, args...)
			assert.Equal(t, tt.code, code, errOut)
			doc, states := readJUnit(t, junit)
			if tt.order != nil {
				var names []string
				for _, c := range doc.Suites[0].Cases {
					names = append(names, c.Name)
				}
				assert.Equal(t, tt.order, names)
			}
			for name, want := range tt.steps {
				assert.Equal(t, want, states[name], name)
			}
			md, err := os.ReadFile(summary)
			require.NoError(t, err)
			assert.Equal(t, string(md), out, "stdout is the summary")
			for _, s := range tt.summary {
				assert.Contains(t, string(md), s)
			}
			assert.Contains(t, errOut, "ci: validate-inventory: passed")
		})
	}
}

func TestCISmokeNeedsWiring(t *testing.T) {
	fx := newSpecsFixture(t)
	code, out, errOut := runCLI(t, nil, fx.args("ci", "--repo", fx.Repo, "--smoke")...)
	assert.Equal(t, exitSetup, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "--smoke: this build has no smoke qualification wired in")
}

func TestCIFlagsReachOptions(t *testing.T) {
	io, _, _ := testIO()
	f := newFactory(io, newInterrupts(io.ErrOut))
	f.Getenv = func(string) string { return "" }
	var got *ciOptions
	smoke := func(context.Context, string) (bool, string, error) { return true, "", nil }
	cmd := newCICmd(f, smoke, func(o *ciOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--repo", "r", "--base", "b", "--head", "h", "-g", "vlm,detection", "--smoke", "--smoke-group", "vlm",
		"--junit", "j.xml", "--summary", "s.md", "-o", "json"})
	f.Config = &Config{SpecGroups: "g.yaml", Inventory: []string{"i.yaml"}, Families: "f.yaml"}
	require.NoError(t, cmd.ExecuteContext(context.Background()))
	require.NotNil(t, got)
	assert.Equal(t, "r", got.Repo)
	assert.Equal(t, "b", got.Base)
	assert.Equal(t, "h", got.Head)
	assert.Equal(t, []string{"vlm", "detection"}, got.Groups)
	assert.True(t, got.RunSmoke)
	assert.Equal(t, noticeChildren, f.Interrupts.notice, "ci --smoke runs children: the first signal says it stops them")
	assert.Equal(t, []string{"vlm"}, got.SmokeGroups)
	assert.Equal(t, "j.xml", got.JUnit)
	assert.Equal(t, "s.md", got.Summary)
	assert.Equal(t, "json", got.Format)
	assert.Equal(t, "g.yaml", got.SpecGroups)
	assert.Equal(t, []string{"i.yaml"}, got.Inventory)
	assert.NotNil(t, got.Smoke)
}

func TestRunCISteps(t *testing.T) {
	fx := newSpecsFixture(t)
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := func() *ciOptions {
		io, _, _ := testIO()
		return &ciOptions{IO: io, Repo: fx.Repo, Base: "main", Head: "main", Groups: []string{"detection"},
			Format: "md", Inventory: []string{fx.Inventory}, Families: fx.Families, NewGit: gitCLI,
			Now: func() time.Time { clock = clock.Add(time.Millisecond); return clock }}
	}
	states := func(t *testing.T, opts *ciOptions) (exitCode, map[string]string) {
		t.Helper()
		dir := t.TempDir()
		opts.JUnit = filepath.Join(dir, "junit.xml")
		err := runCI(context.Background(), opts)
		_, st := readJUnit(t, opts.JUnit)
		return codeFor(err), st
	}

	t.Run("smoke passes, fails, breaks", func(t *testing.T) {
		opts := base()
		opts.RunSmoke = true
		opts.SmokeGroups = []string{"vlm", "detection", "ref"}
		var asked []string
		opts.Smoke = func(_ context.Context, g string) (bool, string, error) {
			asked = append(asked, g)
			switch g {
			case "vlm":
				return true, "vlm: 1 qualified", nil
			case "detection":
				return false, "detection: 1 failed", nil
			}
			return false, "", withCode(exitSetup, errors.New("aiperf not found"))
		}
		code, st := states(t, opts)
		assert.Equal(t, exitSetup, code, "the largest step code")
		assert.Equal(t, []string{"vlm", "detection", "ref"}, asked)
		assert.Equal(t, "passed", st["smoke-vlm"])
		assert.Equal(t, "failed: detection: 1 failed", st["smoke-detection"])
		assert.Equal(t, "error(setup-error): aiperf not found", st["smoke-ref"])
	})
	t.Run("invalid inventory skips reconcile", func(t *testing.T) {
		opts := base()
		bad := filepath.Join(t.TempDir(), "inv.yaml")
		require.NoError(t, os.WriteFile(bad, []byte("schema: trtmc-qual/inventory/v1\ngroups:\n  detection:\n    profiles: [{id: x}]\n"), 0o644))
		opts.Inventory = []string{bad}
		code, st := states(t, opts)
		assert.Equal(t, exitUsage, code)
		assert.True(t, strings.HasPrefix(st["validate-inventory"], "error(configuration-error): "), st["validate-inventory"])
		assert.Equal(t, "skipped: the inventory is invalid (see validate-inventory)", st["reconcile-detection"])
		assert.Equal(t, "passed", st["drift-detection"], "drift does not need the inventory")
	})
	t.Run("no git", func(t *testing.T) {
		opts := base()
		opts.NewGit = func(repo string) gitread.Repo { return gitread.CLI{Repo: repo, Bin: filepath.Join(t.TempDir(), "git")} }
		code, st := states(t, opts)
		assert.Equal(t, exitSetup, code)
		assert.True(t, strings.HasPrefix(st["reconcile-detection"], "error(setup-error): "), st["reconcile-detection"])
	})
	t.Run("bad spec-groups and families", func(t *testing.T) {
		opts := base()
		opts.SpecGroups = fx.Inventory
		opts.Families = filepath.Join(t.TempDir(), "missing.yaml")
		code, st := states(t, opts)
		assert.Equal(t, exitUsage, code)
		assert.True(t, strings.HasPrefix(st["spec-groups"], "error(configuration-error): spec groups "), st["spec-groups"])
		assert.True(t, strings.HasPrefix(st["validate-families"], "error(configuration-error): "), st["validate-families"])
		assert.True(t, strings.HasPrefix(st["reconcile-detection"], "error(configuration-error): "))
	})
	t.Run("interrupted", func(t *testing.T) {
		opts := base()
		opts.RunSmoke = true
		ctx, cancel := context.WithCancel(context.Background())
		opts.Smoke = func(context.Context, string) (bool, string, error) { cancel(); return false, "", context.Canceled }
		opts.JUnit = filepath.Join(t.TempDir(), "junit.xml")
		err := runCI(ctx, opts)
		assert.Equal(t, exitInterrupted, codeFor(err))
		_, st := readJUnit(t, opts.JUnit)
		assert.True(t, strings.HasPrefix(st["reconcile-detection"], "failed: detection @ "), "the report of what ran is still written")
		assert.NotContains(t, st, "smoke-detection")
	})
}

// TestCICodesAreTheTable: the codes qual/ci's steps ask for are the
// exit-code table's.
func TestCICodesAreTheTable(t *testing.T) {
	assert.Equal(t, int(exitFailed), ci.CodeFailed)
	assert.Equal(t, int(exitUsage), ci.CodeUsage)
	assert.Equal(t, exitUsage, codeFor(&ci.UsageError{Err: errors.New("x")}))
}
