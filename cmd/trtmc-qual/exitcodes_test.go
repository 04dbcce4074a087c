package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/golden"
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
	assert.Contains(t, out, `"x\u202e$(id)" is not a valid name`)
	noRawControl(t, out+errOut)
}
