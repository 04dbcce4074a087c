package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// runCLI runs the CLI in-process, as main does but with the given
// environment and no smoke qualification, and returns exit code, stdout
// and stderr.
func runCLI(t *testing.T, env map[string]string, args ...string) (exitCode, string, string) {
	t.Helper()
	io, out, errOut := testIO()
	f := newFactory(io, nil)
	f.Getenv = func(k string) string { return env[k] }
	code := execute(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

func repoFile(parts ...string) string {
	return filepath.Join(append([]string{"..", ".."}, parts...)...)
}

func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "conf.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("aiperf_version: 0.12.0\nout: results\nfamilies: fam.yaml\naiperf: aiperf\ntokenizer: tok\n"), 0o644))

	resolve := func(env map[string]string, args ...string) *Config {
		t.Helper()
		io, _, _ := testIO()
		f := newFactory(io, nil)
		f.Getenv = func(k string) string { return env[k] }
		root := newRootCmd(f)
		// run declares the AIPerf flags; its pipeline is replaced by a no-op.
		root.RemoveCommand(mustFind(t, root.Commands(), "run"))
		root.AddCommand(newRunCmd(f, func(*runOptions) error { return nil }))
		root.SetArgs(append([]string{"run", "--group", "g"}, args...))
		require.NoError(t, root.Execute())
		return f.Config
	}

	// defaults only (no config file in this package dir)
	c := resolve(nil)
	assert.Equal(t, "0.13.0", c.AIPerfVersion)
	assert.Equal(t, fileio.Abs("out"), c.Out, "the evidence root is absolute")

	// file beats default; file paths are relative to the file
	c = resolve(nil, "--config", cfgFile)
	assert.Equal(t, "0.12.0", c.AIPerfVersion)
	assert.Equal(t, filepath.Join(dir, "results"), c.Out)
	assert.Equal(t, filepath.Join(dir, "fam.yaml"), c.Families)
	assert.Equal(t, "aiperf", c.AIPerf, "a bare command name stays a PATH lookup")

	// environment beats file
	c = resolve(map[string]string{"TRTMC_QUAL_AIPERF_VERSION": "0.11.0", "TRTMC_QUAL_OUT": "envout"}, "--config", cfgFile)
	assert.Equal(t, "0.11.0", c.AIPerfVersion)
	assert.Equal(t, fileio.Abs("envout"), c.Out, "env paths are relative to the working directory")

	// flag beats environment
	c = resolve(map[string]string{"TRTMC_QUAL_AIPERF_VERSION": "0.11.0"}, "--config", cfgFile, "--aiperf-version", "0.10.0")
	assert.Equal(t, "0.10.0", c.AIPerfVersion)

	// TRTMC_QUAL_CONFIG names the file
	c = resolve(map[string]string{"TRTMC_QUAL_CONFIG": cfgFile})
	assert.Equal(t, "0.12.0", c.AIPerfVersion)
}

func TestConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("aiperf_versoin: 1\n"), 0o644))
	code, out, errOut := runCLI(t, nil, "version", "--config", bad)
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, `unknown key "aiperf_versoin"`)

	code, _, errOut = runCLI(t, nil, "version", "--config", filepath.Join(dir, "missing.yaml"))
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "missing.yaml")
}

func TestInventoryValidateCLI(t *testing.T) {
	fams := repoFile("families", "families.yaml")
	inv := func(name string) string { return repoFile("inventory", "testdata", name+".yaml") }

	code, out, errOut := runCLI(t, nil, "inventory", "validate", "--families", fams, inv("valid"))
	assert.Equal(t, exitOK, code, errOut)
	assert.Empty(t, out, "nothing but data on stdout")
	assert.Contains(t, errOut, "inventory ok: 1 group(s), 3 profile(s), 1 counted as models")

	code, out, _ = runCLI(t, nil, "inventory", "validate", "--families", fams, inv("syntax"))
	assert.Equal(t, exitUsage, code)
	assert.Regexp(t, `syntax\.yaml:4: yaml syntax`, out)

	code, out, errOut = runCLI(t, nil, "inventory", "validate", "--families", fams, inv("three"))
	assert.Equal(t, exitUsage, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Len(t, lines, 3)
	for _, l := range lines {
		assert.Regexp(t, `three\.yaml:\d+: profile `, l)
	}
	assert.Contains(t, errOut, "3 problem(s)")

	code, out, _ = runCLI(t, nil, "inventory", "validate", "--families", fams, "--format", "json", inv("three"))
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, out, `"valid": false`)
	assert.Contains(t, out, `"field": "profile rtdetr: exclusion.reason"`)
}

func TestInventoryListAndShow(t *testing.T) {
	fams := repoFile("families", "families.yaml")
	valid := repoFile("inventory", "testdata", "valid.yaml")
	code, out, _ := runCLI(t, nil, "inventory", "list", "--families", fams, "--inventory", valid)
	assert.Equal(t, exitOK, code)
	assert.Equal(t, "vlm\tqwen3-vl-2b\tnormal\tref-vlm\tQwen/Qwen3-VL-2B-Instruct\tfp16\ttp1\timplemented\ttrue\t111111111111\n"+
		"vlm\tqwen3-vl-2b-tp2\tvariant\tref-vlm\tQwen/Qwen3-VL-2B-Instruct\tfp16\ttp2\tplanned\tfalse\t\n"+
		"vlm\tdeepseek-ocr-l0\tpartial\tref-vlm\tdeepseek-ai/DeepSeek-OCR\tfp16\ttp1\texcluded: L0 smoke profile; not full-model coverage\tfalse\t\n", out)

	code, out, _ = runCLI(t, nil, "inventory", "list", "--families", fams, "--inventory", valid, "--format", "csv")
	assert.Equal(t, exitOK, code)
	assert.True(t, strings.HasPrefix(out, "group,id,kind,family,checkpoint,"))

	code, out, _ = runCLI(t, nil, "inventory", "show", "qwen3-vl-2b", "--families", fams, "--inventory", valid, "-o", "json")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, `"checkpoint": "Qwen/Qwen3-VL-2B-Instruct"`)

	code, _, errOut := runCLI(t, nil, "inventory", "show", "nope", "--families", fams, "--inventory", valid)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `no profile "nope"`)

	code, _, errOut = runCLI(t, nil, "inventory", "list", "--families", fams, "--inventory", valid, "--format", "xml")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "valid values are")
}

func TestHelpShowsExamplesAndExitCodes(t *testing.T) {
	code, out, _ := runCLI(t, nil, "--help")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "EXIT STATUS")
	assert.Contains(t, out, "130  interrupted")
	assert.Contains(t, out, "Examples:")
	// Every verb of the tree, however deep, shows an example in its help.
	io, _, _ := testIO()
	var visited []string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" || strings.HasPrefix(strings.Join(path, " "), "completion") {
				continue
			}
			verb := append(append([]string{}, path...), sub.Name())
			visited = append(visited, strings.Join(verb, " "))
			_, out, _ := runCLI(t, nil, append(verb, "--help")...)
			assert.Contains(t, out, "Examples:", strings.Join(verb, " "))
			walk(sub, verb)
		}
	}
	walk(newRootCmd(newFactory(io, nil)), nil)
	for _, verb := range []string{"version", "run", "report", "ci", "inventory validate", "inventory list", "inventory show", "inventory set",
		"inventory reconcile", "inventory drift", "doctor", "corpus init"} {
		assert.Contains(t, visited, verb)
	}
	code, out, _ = runCLI(t, nil, "completion", "bash")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "bash completion")
}

func TestVersionAndUsageErrors(t *testing.T) {
	code, out, _ := runCLI(t, nil, "version")
	assert.Equal(t, exitOK, code)
	assert.Equal(t, "trtmc-qual dev (commit unknown)\n", out)

	code, _, errOut := runCLI(t, nil, "version", "--bogus")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "unknown flag")
}

// doctor: flags parsed into options; exit 3 when the host is not ready.
func TestDoctorFlagsAndExit(t *testing.T) {
	io, _, _ := testIO()
	f := newFactory(io, nil)
	f.Getenv = func(string) string { return "" }
	var got *doctorOptions
	root := newRootCmd(f)
	for _, c := range root.Commands() {
		if c.Name() == "doctor" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(newDoctorCmd(f, func(o *doctorOptions) error { got = o; return nil }))
	root.SetArgs([]string{"doctor", "--group", "vlm", "--repo", "/src/trtmc", "-o", "json", "--min-free-gib", "5"})
	require.NoError(t, root.Execute())
	require.NotNil(t, got)
	assert.Equal(t, []string{"vlm"}, got.Groups)
	assert.Equal(t, "/src/trtmc", got.Repo)
	assert.Equal(t, "json", got.Format)
	assert.Equal(t, 5.0, got.MinFreeGiB)

	root = newRootCmd(f)
	root.SetArgs([]string{"doctor", "-o", "yaml"})
	assert.Equal(t, exitUsage, codeFor(root.Execute()))
}

// Configuration words are trimmed and checked once, at resolution, and a
// bad one is a usage error (exit 2) that names where it came from: the
// flag, the environment variable or the config file (issue 25, item 20).
func TestConfigWordsNameTheirSource(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	require.NoError(t, os.WriteFile(file, []byte("gpus: \"cpu:0\"\n"), 0o644))
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--gpus", "cpu:0"}, `--gpus "cpu:0": want cpu:N with N a whole number from 1 to 64, got "0"`},
		{nil, []string{"--gpus", "cpu:-1"}, `--gpus "cpu:-1": want cpu:N`},
		{nil, []string{"--gpus", "cpu:2x"}, `--gpus "cpu:2x": want cpu:N`},
		{nil, []string{"--gpus", "cpu:1,cpu:2"}, `--gpus "cpu:1,cpu:2": want cpu:N`},
		{nil, []string{"--gpus", "0,cpu:2"}, `--gpus "0,cpu:2": "cpu:2" is a whole selection`},
		{nil, []string{"--gpus", "0,0"}, `--gpus "0,0": GPU 0 is named twice`},
		{map[string]string{"TRTMC_QUAL_GPUS": "cpu:0"}, nil, `TRTMC_QUAL_GPUS "cpu:0": want cpu:N`},
		{map[string]string{"TRTMC_QUAL_GPUS": "cpu:1,cpu:2"}, nil, `TRTMC_QUAL_GPUS "cpu:1,cpu:2"`},
		{nil, []string{"--config", file}, `config file ` + file + `: gpus "cpu:0": want cpu:N`},
		{map[string]string{"TRTMC_QUAL_AIPERF_VERSION": "0.13 .0"}, nil, `TRTMC_QUAL_AIPERF_VERSION "0.13 .0": not a version`},
	} {
		code, _, errOut := runCLI(t, c.env, append([]string{"run", "--group", "g", "--out", t.TempDir()}, c.args...)...)
		assert.Equal(t, exitUsage, code, "%v %v: %s", c.env, c.args, errOut)
		assert.Contains(t, errOut, c.want, "%v %v", c.env, c.args)
		if c.env == nil {
			assert.NotContains(t, errOut, "TRTMC_QUAL_GPUS")
		} else {
			assert.NotContains(t, errOut, "--gpus \"")
		}
	}

	// A stray space around a word is trimmed, not compared: AIPerf is
	// then checked against "0.13.0", never against "0.13.0 ".
	io, _, _ := testIO()
	f := newFactory(io, nil)
	f.Getenv = func(k string) string {
		return map[string]string{"TRTMC_QUAL_AIPERF_VERSION": "0.13.0 ", "TRTMC_QUAL_GPUS": " cpu:2 ", "TRTMC_QUAL_EXECUTOR": "local "}[k]
	}
	root := newRootCmd(f)
	root.RemoveCommand(mustFind(t, root.Commands(), "run"))
	root.AddCommand(newRunCmd(f, func(*runOptions) error { return nil }))
	root.SetArgs([]string{"run", "--group", "g"})
	require.NoError(t, root.Execute())
	assert.Equal(t, "0.13.0", f.Config.AIPerfVersion)
	assert.Equal(t, "cpu:2", f.Config.GPUs)
	assert.Equal(t, "local", f.Config.Executor)
	assert.Equal(t, "TRTMC_QUAL_GPUS", f.Config.Source("gpus"))
	assert.Equal(t, "out", f.Config.Source("out"), "a default is named by its key")
}
