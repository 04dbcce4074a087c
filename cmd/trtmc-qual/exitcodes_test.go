package main

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/ci"
	"github.com/trtmc-qual/trtmc-qual/qual/slurm"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/golden"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict/verdicttest"
)

// noRawControl fails when text holds a byte a terminal would act on or a
// character that hides or reorders text.
func noRawControl(t *testing.T, text string) {
	t.Helper()
	for _, r := range text {
		if r == '\n' || r == '\t' {
			continue
		}
		assert.False(t, r < 0x20 || r == 0x7f || r >= 0x200b && r <= 0x200f || r >= 0x202a && r <= 0x202e || r == 0xff0f,
			"raw %U reaches the terminal: %q", r, text)
	}
}

// Issue 13, finding 4: user mistakes were reported as harness bugs (exit 4,
// "internal error, please report it"). Each is now a usage or
// configuration error (exit 2) that names what is wrong.
func TestUserMistakesAreNotHarnessErrors(t *testing.T) {
	fams := repoFile("families", "families.yaml")
	valid := repoFile("inventory", "testdata", "valid.yaml")
	dir := t.TempDir()
	conf := filepath.Join(dir, "conf.yaml")
	require.NoError(t, os.WriteFile(conf, []byte("inventory: 5\n"), 0o644))
	notDir := filepath.Join(dir, "results.txt")
	require.NoError(t, os.WriteFile(notDir, []byte("keep me\n"), 0o644))
	fifo := filepath.Join(dir, "fifo.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	mdDir := filepath.Join(dir, "results.md")
	require.NoError(t, os.Mkdir(mdDir, 0o755))

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"missing inventory", []string{"inventory", "validate", "--families", fams, filepath.Join(dir, "nope.yaml")},
			"nope.yaml: cannot open the inventory: no such file or directory"},
		{"directory inventory", []string{"inventory", "validate", "--families", fams, dir},
			dir + ": the inventory is not a regular file (it is a directory)"},
		{"device inventory", []string{"inventory", "validate", "--families", fams, "/dev/zero"},
			"/dev/zero: the inventory is not a regular file (it is a character device)"},
		{"fifo inventory", []string{"inventory", "validate", "--families", fams, fifo},
			fifo + ": the inventory is not a regular file (it is a FIFO)"},
		{"device families", []string{"inventory", "validate", "--families", "/dev/zero", valid},
			"/dev/zero: the family configuration is not a regular file (it is a character device)"},
		{"fifo config", []string{"inventory", "validate", "--config", fifo},
			"config file " + fifo + ": the config file is not a regular file (it is a FIFO)"},
		{"inventory: 5", []string{"inventory", "validate", "--config", conf, "--families", fams},
			"config file " + conf + ": inventory: must be a string or a list of strings, got 5"},
		{"report --group ../x", []string{"report", "--from", dir, "--group", "../x"},
			`--group: "../x" is not a valid name: it starts with "."`},
		{"run --out a file", []string{"run", "--group", "vlm", "--out", notDir, "--gpus", "cpu", "--families", fams,
			"--inventory", valid, "--aiperf", "/nonexistent/aiperf"},
			"--out: " + notDir + " is not a directory (it is a regular file)"},
		{"run --group with shell", []string{"run", "--group", "$(touch PWNED)", "--families", fams, "--inventory", valid},
			`--group: "$(touch PWNED)" is not a valid name: it has "$" at byte 0`},
		{"run --only with bidi", []string{"run", "--group", "vlm", "--only", "qwen3-vl-2b,a\u202eb", "--families", fams, "--inventory", valid},
			`--only: "a\u202eb" is not a valid name: it has "\u202e" at byte 1`},
		{"inventory show with zero-width", []string{"inventory", "show", "qwen3\u200b-vl-2b", "--families", fams, "--inventory", valid},
			`ID: "qwen3\u200b-vl-2b" is not a valid name`},
		{"report --output-file a directory", []string{"report", "--from", repoFile("reports", "testdata", "evidence", "a"), "--group", "vlm", "--output-file", mdDir},
			"--output-file: " + mdDir + " is not a regular file (it is a directory)"},
		{"ci --junit a FIFO", []string{"ci", "--repo", dir, "--junit", fifo},
			"--junit: " + fifo + " is not a regular file (it is a FIFO)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{})
			var code exitCode
			var out, errOut string
			go func() {
				defer close(done)
				code, out, errOut = runCLI(t, nil, c.args...)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the command hung")
			}
			assert.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, out+errOut, c.want)
			assert.NotContains(t, errOut, "internal error")
			noRawControl(t, out+errOut)
		})
	}
	data, err := os.ReadFile(notDir)
	require.NoError(t, err)
	assert.Equal(t, "keep me\n", string(data))
}

// The run's reproduce command, pasted into bash, reads back as the
// invocation whatever --out and --config hold (control and bidi
// characters included, through $'...'), and runs nothing else.
func TestReproCommandCarriesPathsVerbatim(t *testing.T) {
	cfg := &Config{File: "/conf dir/$(touch PWNED).yaml", AIPerf: "aiperf", AIPerfVersion: "0.13.0"}
	out := "/tmp/out/`touch PWNED`; x\u202e"
	line := reproCommand(&runOptions{Config: cfg, Getenv: func(string) string { return "" }, Group: "vlm", Out: out, GPUs: "0,1"})
	assert.NotContains(t, line, "\n")
	assert.NotContains(t, line, "\u202e", "no raw bidi character in the printed command")
	dir := t.TempDir()
	cmd := exec.Command("bash", "-c", `trtmc-qual() { printf '%s\0' "$@"; }; `+line)
	cmd.Dir = dir
	got, err := cmd.Output()
	require.NoError(t, err, line)
	assert.Equal(t, []string{"--config", "/conf dir/$(touch PWNED).yaml", "--aiperf", "aiperf", "--aiperf-version", "0.13.0",
		"run", "--group", "vlm", "--out", out, "--gpus", "0,1"}, strings.Split(strings.TrimSuffix(string(got), "\x00"), "\x00"))
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries, "pasting the command ran something")
}

// Issue 13, finding 3: `report` over a result.json that is a link to
// /dev/zero ran out of memory, and over a FIFO joined.jsonl it hung. Each
// is now malformed evidence at once: the row is an error naming the file
// (exit 1, the report is still printed); directories no valid id names
// are ignored with a note, their names escaped.
func TestReportRefusesEndlessEvidence(t *testing.T) {
	src := repoFile("reports", "testdata", "evidence", "a")
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, dir string)
		want  string
	}{
		{"result.json -> /dev/zero", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "result.json")
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink("/dev/zero", p))
		}, "result.json: it is not a regular file (it is a character device)"},
		{"joined.jsonl a FIFO", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "joined.jsonl")
			require.NoError(t, os.Remove(p))
			require.NoError(t, syscall.Mkfifo(p, 0o600))
		}, "joined.jsonl: changed"}, // the seal sees it first: a FIFO is no file it sealed
		{"argv.json -> /dev/urandom", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "aiperf", "argv.json")
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			_ = os.Remove(p)
			require.NoError(t, os.Symlink("/dev/urandom", p))
		}, "argv.json: it is not a regular file (it is a character device)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			golden.CopyTree(t, src, root)
			c.plant(t, filepath.Join(root, "vlm", "ref-vlm-small"))
			done := make(chan struct{})
			var code exitCode
			var out, errOut string
			go func() {
				defer close(done)
				code, out, errOut = runCLI(t, nil, "report", "--from", root, "--group", "vlm", "--format", "md")
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("report hung")
			}
			assert.Equal(t, exitFailed, code, errOut)
			assert.Contains(t, out, c.want)
			assert.Contains(t, out, "**ref-vlm-small** — error")
			assert.NotContains(t, errOut, "internal error")
		})
	}

	root := t.TempDir()
	golden.CopyTree(t, src, root)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "vlm", "x\u202e$(id)"), 0o755))
	code, out, errOut := runCLI(t, nil, "report", "--from", root, "--group", "vlm", "--format", "md")
	assert.Equal(t, exitFailed, code, errOut) // the fixture's rows are not all qualified
	assert.Contains(t, out, `"x\\u202e\$(id)" is not a valid name`, "the note is Markdown text: its \\ and $ escaped")
	noRawControl(t, out+errOut)
}

// kindExamples is one error of each kind of errorKinds, as a domain
// package makes it.
func kindExamples() map[string]error {
	x := errors.New("x")
	return map[string]error{
		"context.Canceled":          context.Canceled,
		"flagError":                 flagErrorf("--group is required"),
		"configError":               &configError{x},
		"inventory.Problems":        inventory.Problems{{File: "inv.yaml", Line: 3, Field: "family", Message: "unknown"}},
		"specs.ConfigError":         &specs.ConfigError{File: "groups.yaml", Problems: []string{"x"}},
		"specs.ErrUnknownGroup":     fmt.Errorf("%w %q", specs.ErrUnknownGroup, "nope"),
		"specs.ErrNotTRTMC":         fmt.Errorf("%w: /src", specs.ErrNotTRTMC),
		"gitread.ErrUnknownRef":     fmt.Errorf("%w %q", gitread.ErrUnknownRef, "nope"),
		"gitread.ErrNotRepository":  &gitread.Error{Args: []string{"rev-parse"}, Err: fmt.Errorf("%w: /src", gitread.ErrNotRepository)},
		"qual.UsageError":           &qual.UsageError{Err: x},
		"ci.UsageError":             &ci.UsageError{Err: x},
		"slurm.ActiveError":         &slurm.ActiveError{Group: "vlm", Out: "out", Tasks: []string{"1_0"}},
		"slurm.RecordError":         &slurm.RecordError{Err: x},
		"qual.SetupError":           &qual.SetupError{Err: x},
		"evidence.LockedError":      &evidence.LockedError{Dir: "out/vlm"},
		"gitread.ErrGitUnavailable": &gitread.Error{Args: []string{"rev-parse"}, Err: fmt.Errorf("%w: exec: not found", gitread.ErrGitUnavailable)},
	}
}

// Every kind of error a domain package defines gives the exit status of
// its row, however deep it is wrapped; anything else is a harness error;
// a verb's own status (withCode) and an interruption come first.
func TestEveryErrorKindHasItsCode(t *testing.T) {
	examples := kindExamples()
	seen := map[string]bool{}
	for _, k := range errorKinds() {
		assert.False(t, seen[k.name], "kind %s listed twice", k.name)
		seen[k.name] = true
		ex, ok := examples[k.name]
		if !assert.True(t, ok, "kind %s has no example in kindExamples", k.name) {
			continue
		}
		assert.True(t, k.is(ex), k.name)
		assert.Equal(t, k.code, codeFor(ex), k.name)
		assert.Equal(t, k.code, codeFor(fmt.Errorf("verb: %w", fmt.Errorf("step: %w", ex))), "%s, wrapped", k.name)
		assert.Equal(t, k.code, codeFor(errors.Join(errors.New("other"), ex)), "%s, joined", k.name)
		assert.Equal(t, k.code, codeFor(printableError{ex}), "%s, escaped for the terminal", k.name)
		assert.NotEmpty(t, k.when, k.name)
	}
	assert.Len(t, examples, len(errorKinds()), "an example for a kind errorKinds does not list")

	assert.Equal(t, exitOK, codeFor(nil))
	assert.Equal(t, exitHarness, codeFor(errors.New("boom")))
	assert.Equal(t, exitHarness, codeFor(fmt.Errorf("write: %w", os.ErrPermission)), "an I/O failure")
	assert.Equal(t, exitFailed, codeFor(withCode(exitFailed, &qual.SetupError{Err: context.Canceled})), "a verb's own status first")
	assert.Equal(t, exitInterrupted, codeFor(&qual.SetupError{Err: fmt.Errorf("aiperf --version: %w", context.Canceled)}), "then interruption")
	assert.Equal(t, exitUsage, codeFor(&flagError{&qual.SetupError{Err: errors.New("x")}}), "then a usage mistake")
}

// The exit statuses are the documented ones, each once, in order; every
// kind's status is one of them; `--help` prints the table, the README's
// "Exit status" is its Markdown and docs/design.md lists the kinds.
func TestHelpIsTheExitStatusTable(t *testing.T) {
	var codes []exitCode
	for _, s := range exitStatuses() {
		codes = append(codes, s.code)
		assert.NotEmpty(t, s.help, s.code)
		assert.NotEmpty(t, s.doc, s.code)
		assert.True(t, strings.HasPrefix(s.doc, strings.SplitN(s.help, " (", 2)[0]), "%d: the README's meaning starts as --help's", s.code)
	}
	assert.Equal(t, []exitCode{exitOK, exitFailed, exitUsage, exitSetup, exitHarness, exitInterrupted}, codes)
	for _, k := range errorKinds() {
		assert.Contains(t, codes, k.code, k.name)
	}

	code, out, _ := runCLI(t, nil, "--help")
	require.Equal(t, exitOK, code)
	var lines []string
	for _, s := range exitStatuses() {
		lines = append(lines, fmt.Sprintf("  %-4d %s", s.code, s.help))
	}
	assert.Contains(t, out, "EXIT STATUS\n"+strings.Join(lines, "\n")+"\n", "trtmc-qual --help")
	assert.Contains(t, out, "\n  130  interrupted\n")

	readme, err := os.ReadFile(repoFile("README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "### Exit status\n\n"+exitStatusMarkdown(),
		"README.md's \"Exit status\" must be exitStatusMarkdown() verbatim; it is:\n%s", exitStatusMarkdown())
	design, err := os.ReadFile(repoFile("docs", "design.md"))
	require.NoError(t, err)
	assert.Contains(t, string(design), errorKindsMarkdown(),
		"docs/design.md must carry errorKindsMarkdown() verbatim; it is:\n%s", errorKindsMarkdown())
}

// What a verb's help says about its exit status uses the table's codes
// only.
func TestVerbExitStatusesAreInTheTable(t *testing.T) {
	known := map[string]bool{}
	for _, s := range exitStatuses() {
		known[strconv.Itoa(int(s.code))] = true
	}
	io, _, _ := testIO()
	root := newRootCmd(newFactory(io, nil))
	usageTree(root)
	number := regexp.MustCompile(`\b\d+\b`)
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, para := range strings.Split(c.Long, "\n\n") {
			if !strings.HasPrefix(para, "Exit status:") && !strings.HasPrefix(para, "EXIT STATUS") {
				continue
			}
			n++
			for _, w := range number.FindAllString(para, -1) {
				assert.True(t, known[w], "%s --help: exit status %s is not in exitStatuses():\n%s", c.CommandPath(), w, para)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	assert.GreaterOrEqual(t, n, 10, "the root and the verbs document their exit status")
}

// cobra's own command-line errors are usage errors through typed checks
// (usageArgs, unknownVerb), never by their text: the exit status and the
// message of each are what they were when cobra's messages were matched.
func TestCommandLineErrorsAreUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code exitCode
		want string
	}{
		{[]string{"bogus"}, exitUsage, `unknown command "bogus" for "trtmc-qual"`},
		{[]string{"rnu"}, exitUsage, "Did you mean this?\n\trun"},
		{[]string{"run", "x"}, exitUsage, `unknown command "x" for "trtmc-qual run"`},
		{[]string{"version", "x"}, exitUsage, `unknown command "x" for "trtmc-qual version"`},
		{[]string{"inventory", "list", "x"}, exitUsage, `unknown command "x" for "trtmc-qual inventory list"`},
		{[]string{"inventory", "show"}, exitUsage, "accepts 1 arg(s), received 0"},
		{[]string{"inventory", "show", "a", "b"}, exitUsage, "accepts 1 arg(s), received 2"},
		{[]string{"corpus", "init"}, exitUsage, "accepts 1 arg(s), received 0"},
		{[]string{"adapter", "native", "x"}, exitUsage, `unknown command "x"`},
		{[]string{"completion", "bash", "x"}, exitUsage, `unknown command "x" for "trtmc-qual completion bash"`},
		{[]string{"__complete"}, exitUsage, "requires at least 1 arg(s)"},
		{[]string{"run", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{[]string{"run", "-Z"}, exitUsage, "unknown shorthand flag: 'Z' in -Z"},
		{[]string{"run", "--group"}, exitUsage, "flag needs an argument: --group"},
		{[]string{"--bogus"}, exitUsage, "unknown flag: --bogus"},
		// A group verb without its subcommand prints its help; a word that
		// is none of its subcommands is a usage error (cobra would print
		// the help and exit 0).
		{[]string{"inventory"}, exitOK, ""},
		{[]string{"inventory", "bogus"}, exitUsage, `unknown command "bogus" for "trtmc-qual inventory"`},
		{[]string{"inventory", "lsit"}, exitUsage, "Did you mean this?\n\tlist"},
		{[]string{"adapter", "bogus"}, exitUsage, `unknown command "bogus" for "trtmc-qual adapter"`},
		{[]string{"completion"}, exitOK, ""},
		{[]string{"completion", "bogus"}, exitUsage, `unknown command "bogus" for "trtmc-qual completion"`},
		{[]string{"help", "bogus"}, exitOK, ""},
		{[]string{"--config", "c.yaml", "bogus"}, exitUsage, `unknown command "bogus" for "trtmc-qual"`},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, nil, c.args...)
			assert.Equal(t, c.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			assert.Contains(t, errOut, c.want)
			assert.NotContains(t, errOut, "internal error")
			if c.code == exitUsage {
				assert.Contains(t, errOut, "run with --help for usage")
			}
		})
	}
	code, out, _ := runCLI(t, nil, "help", "bogus")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "Unknown help topic [`bogus`]", "cobra's help still finds no verb")
	_, out, _ = runCLI(t, nil, "--help")
	assert.Contains(t, out, "Usage:\n  trtmc-qual [command]\n\n", "the root runs nothing")
	// No verb at all: the help, on stdout, before any configuration is read.
	io, stdout, stderr := testIO()
	f := newFactory(io, nil)
	f.Getenv = func(k string) string { return map[string]string{"TRTMC_QUAL_CONFIG": "/nonexistent/c.yaml"}[k] }
	assert.Equal(t, exitOK, execute(context.Background(), f, []string{}))
	assert.Contains(t, stdout.String(), "EXIT STATUS")
	assert.Empty(t, stderr.String())
}

// Every positional-argument validator of the tree, ours and cobra's,
// reports a usage error.
func TestEveryArgsValidatorIsAUsageError(t *testing.T) {
	io, _, _ := testIO()
	root := newRootCmd(newFactory(io, nil))
	usageTree(root)
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Args != nil {
			for _, args := range [][]string{nil, {"a"}, {"a", "b", "c"}} {
				err := c.Args(c, args)
				if err == nil || errors.Is(err, pflag.ErrHelp) {
					continue
				}
				n++
				var fe *flagError
				assert.ErrorAs(t, err, &fe, "%s %q", c.CommandPath(), args)
				assert.Equal(t, exitUsage, codeFor(err), "%s %q", c.CommandPath(), args)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	assert.Greater(t, n, 20)
}

// No domain package decides an exit number: an error type of ours outside
// cmd/ has no ExitCode method (the kinds are mapped in errorKinds).
func TestNoDomainErrorHasAnExitCode(t *testing.T) {
	root := repoFile()
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (rel == "cmd" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "ExitCode" {
				continue
			}
			recv := types.ExprString(fn.Recv.List[0].Type)
			if errorTypes(t, fset, filepath.Dir(path))[strings.TrimPrefix(recv, "*")] {
				t.Errorf("%s: %s.ExitCode: an error kind names its exit status; map it in cmd/trtmc-qual/exitcodes.go instead", rel, recv)
			}
		}
		files++
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, files, 100, "the module's Go files were read")
}

// errorTypes are the names of the types of dir's package that have an
// Error method.
func errorTypes(t *testing.T, fset *token.FileSet, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv != nil && fn.Name.Name == "Error" {
				out[strings.TrimPrefix(types.ExprString(fn.Recv.List[0].Type), "*")] = true
			}
		}
	}
	return out
}

// The Slurm executor keeps the row of a task that ended with one of
// rowExitStatuses: they are the statuses `run` ends with after writing its
// rows, whatever reason a row carries (an interrupted run exits 130 from
// its context and its rows never stand as they are).
func TestRowExitStatuses(t *testing.T) {
	stands := map[exitCode]bool{}
	for _, c := range rowExitStatuses() {
		stands[exitCode(c)] = true
	}
	got := map[exitCode]bool{}
	ok := &verdict.Result{Profile: "ok"}
	verdicttest.Qualified(ok)
	verdict.Judge(ok)
	got[codeFor(runVerdictError([]*verdict.Result{ok}))] = true
	for _, ci := range verdict.Codes() {
		if ci.Class == verdict.ClassInterrupted {
			continue
		}
		r := &verdict.Result{Profile: string(ci.Code)}
		verdicttest.Qualified(r)
		r.Problems = []verdict.Problem{{Stage: "x", Code: ci.Code, Message: "x"}}
		verdict.Judge(r)
		code := codeFor(runVerdictError([]*verdict.Result{ok, r}))
		got[code] = true
		assert.True(t, stands[code], "%s: run exits %d, which the Slurm executor does not keep", ci.Code, code)
	}
	assert.Equal(t, map[exitCode]bool{exitOK: true, exitFailed: true, exitSetup: true}, got)
	assert.Len(t, stands, len(got), "rowExitStatuses holds a status run never ends with after writing rows")
}

// exitStatusMarkdown is the README's "Exit status" table.
func exitStatusMarkdown() string {
	var b strings.Builder
	b.WriteString("| code | meaning |\n|---|---|\n")
	for _, s := range exitStatuses() {
		fmt.Fprintf(&b, "| %d | %s |\n", s.code, s.doc)
	}
	return b.String()
}

// errorKindsMarkdown is docs/design.md's table of error kinds.
func errorKindsMarkdown() string {
	var b strings.Builder
	b.WriteString("| error kind | exit | when |\n|---|---|---|\n")
	for _, k := range errorKinds() {
		fmt.Fprintf(&b, "| `%s` | %d | %s |\n", k.name, k.code, k.when)
	}
	return b.String()
}

// Issue 36: every verb's --help states its exit statuses, as exitHelp
// renders them from the table: a paragraph "Exit status: ..." that names
// the statuses every verb can end with (2, 4) and only the table's codes.
func TestEveryVerbStatesItsExitStatuses(t *testing.T) {
	numbered := regexp.MustCompile(`(?:^Exit status: |, )(\d+) `)
	var verbs []string
	walkVerbs(t, func(c *cobra.Command) {
		if !c.Runnable() || c.HasSubCommands() || c.Hidden || c.Parent() == nil || c.Parent().Hidden {
			return
		}
		verbs = append(verbs, c.CommandPath())
		var para string
		for _, p := range strings.Split(c.Long, "\n\n") {
			if strings.HasPrefix(p, "Exit status: ") {
				para = p
			}
		}
		if !assert.NotEmpty(t, para, "%s --help states no exit status", c.CommandPath()) {
			return
		}
		assert.Equal(t, wrapWords(para, 80), para, "%s: rendered by exitHelp", c.CommandPath())
		var codes []string
		for _, m := range numbered.FindAllStringSubmatch(strings.ReplaceAll(para, "\n", " "), -1) {
			codes = append(codes, m[1])
		}
		for _, must := range everyVerbExits {
			assert.Contains(t, codes, strconv.Itoa(int(must)), "%s: every verb can end with %d", c.CommandPath(), must)
		}
	})
	for _, v := range []string{"trtmc-qual run", "trtmc-qual corpus init", "trtmc-qual inventory list", "trtmc-qual inventory show",
		"trtmc-qual inventory set", "trtmc-qual version"} {
		assert.Contains(t, verbs, v)
	}
	_, out, _ := runCLI(t, nil, "run", "--help")
	for _, code := range []string{"0", "1", "2", "3", "4", "130"} {
		assert.Regexp(t, `(Exit status: |, )`+code+` `, strings.ReplaceAll(out, "\n", " "), "run --help states %s", code)
	}
}

func TestExitHelp(t *testing.T) {
	assert.Equal(t, "Exit status: 0 done, 2 configuration, inventory or usage error, 4 harness error\n(a bug, an I/O failure).",
		exitHelp(exitOutcome{exitOK, "done"}), "the statuses of every verb are added in the table's words")
	assert.Equal(t, "Exit status: 0 done, 2 bad input, 3 busy, 4 harness error (a bug, an I/O\nfailure).",
		exitHelp(exitOutcome{exitSetup, "busy"}, exitOutcome{exitUsage, "bad input"}, exitOutcome{exitOK, "done"}), "in the order of the codes, wrapped at 80")
	for _, line := range strings.Split(exitHelp(exitOutcome{exitOK, strings.Repeat("word ", 60)}), "\n") {
		assert.LessOrEqual(t, len(line), 80)
	}
}
