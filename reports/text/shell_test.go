package text

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostileArgs are arguments a shell would run, expand, split or hide.
var hostileArgs = []string{
	"trtmc-qual", "run", "--group", "vlm",
	"$(touch${IFS}PWNED-subst)", "a;touch PWNED-semi", "a`touch PWNED-tick`b", "*", "~", "$HOME", "${PATH}",
	"two words", "new\nline", "tab\there", "", "'single'", `"double"`, `back\slash`, "#comment", "!bang",
	"a|b", "a&b", "<in", ">out", "=x", "-", "--flag=v w",
	"evil\u202etxt", "zero\u200bwidth", "nb\u00a0sp", "\x1b[2Jclear", "caf\u00e9", "bad\xffutf8", "\x00nul-free?",
}

// Issue 13, finding 1: the reproduce command was printed unquoted, so
// pasting it ran whatever an argument held. ShellJoin's output, read
// back by a real shell, is exactly the argv, and nothing runs.
func TestShellQuoteRoundTripsThroughBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	dir := t.TempDir()
	var argv []string
	for _, a := range hostileArgs {
		if !strings.ContainsRune(a, 0) { // argv cannot hold NUL
			argv = append(argv, a)
		}
	}
	line := ShellJoin(argv)
	assert.NotContains(t, line, "\n", "one line")
	for _, r := range line {
		assert.False(t, r < 0x20 || r == 0x7f || r == '\u202e' || r == '\u200b' || r == '\u00a0', "raw %U in %q", r, line)
	}
	cmd := exec.Command(bash, "-c", `printf '%s\0' `+line)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	require.NoError(t, cmd.Run())
	got := strings.Split(strings.TrimSuffix(out.String(), "\x00"), "\x00")
	assert.Equal(t, argv, got)
	matches, _ := filepath.Glob(filepath.Join(dir, "PWNED*"))
	assert.Empty(t, matches, "pasting the command ran something")
}

// Without control or invisible characters the plain single-quote form is
// used, which every POSIX sh (dash too) reads back.
func TestShellQuotePlainFormInSh(t *testing.T) {
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	var argv []string
	for _, a := range hostileArgs {
		if ShellQuote(a) == "" || strings.HasPrefix(ShellQuote(a), "$'") {
			continue
		}
		argv = append(argv, a)
	}
	require.Greater(t, len(argv), 20)
	dir := t.TempDir()
	cmd := exec.Command(sh, "-c", `printf '%s\0' `+ShellJoin(argv))
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, argv, strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"))
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries)
}

func TestShellQuoteForms(t *testing.T) {
	for in, want := range map[string]string{
		"ref-vlm-small": "ref-vlm-small", "/a/b.c:1,2+3@4%5": "/a/b.c:1,2+3@4%5", "": "''",
		"a b": "'a b'", "it's": `'it'\''s'`, "$(id)": "'$(id)'", "caf\u00e9": "'caf\u00e9'",
		"a\u202eb": `$'a\xe2\x80\xaeb'`, "x\ny": `$'x\ny'`, "q'\x1b": `$'q\'\x1b'`, "\xff": `$'\xff'`,
	} {
		assert.Equal(t, want, ShellQuote(in), "%q", in)
	}
	assert.Equal(t, "'A=b' c=d", ShellJoin([]string{"A=b", "c=d"}), "a first word NAME=VALUE is no assignment")
}

// TestShellSplitReadsBackShellJoin: whatever ShellJoin writes, ShellSplit
// reads back as the same argv (the public reproduce commands are rebuilt
// word by word from the stored line).
func TestShellSplitReadsBackShellJoin(t *testing.T) {
	for _, argv := range [][]string{
		{"trtmc-qual", "run", "--group", "vlm"},
		{"a b", "it's", "$(touch x)", "`x`", "", "x\u202ey\x1b[2J", "tab\there", "new\nline", "back\\slash", "NAME=v"},
		{"--flag=/a b/c", "'", "\"", "\\'"},
		hostileArgs,
	} {
		got, ok := ShellSplit(ShellJoin(argv))
		require.True(t, ok, "%q", ShellJoin(argv))
		assert.Equal(t, argv, got)
	}
	got, ok := ShellSplit(`TRTMC_SERVE_TOKEN="$TRTMC_SERVE_TOKEN" trtmc-qual --out "$OUT"/x "$HARNESS/a b" \$y`)
	require.True(t, ok)
	assert.Equal(t, []string{"TRTMC_SERVE_TOKEN=$TRTMC_SERVE_TOKEN", "trtmc-qual", "--out", "$OUT/x", "$HARNESS/a b", "$y"}, got)
	for _, bad := range []string{"a; b", "a | b", "a > f", "'open", `"open`, "$(x)", `"$(x)"`, "a `b`", "$'\\q'"} {
		_, ok := ShellSplit(bad)
		assert.False(t, ok, bad)
	}
}

// FuzzShellSplit: ShellSplit reads back every argv ShellJoin writes.
func FuzzShellSplit(f *testing.F) {
	f.Add("trtmc-qual\x00run\x00--out\x00a b/$(x)")
	f.Add("NAME=v\x00'\x00\\\x00\n\x00")
	f.Fuzz(func(t *testing.T, joined string) {
		argv := strings.Split(joined, "\x00")
		got, ok := ShellSplit(ShellJoin(argv))
		if !ok {
			t.Fatalf("ShellSplit refused ShellJoin(%q) = %q", argv, ShellJoin(argv))
		}
		if len(got) != len(argv) {
			t.Fatalf("%q -> %q -> %q", argv, ShellJoin(argv), got)
		}
		for i := range argv {
			if got[i] != argv[i] {
				t.Fatalf("%q -> %q -> %q", argv, ShellJoin(argv), got)
			}
		}
	})
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":             "''",
		"plain-1.0/x":  "plain-1.0/x",
		"a b":          "'a b'",
		"it's":         `'it'\''s'`,
		"$HOME":        "'$HOME'",
		"--gpus=0,1":   "--gpus=0,1",
		"a\nb":         `$'a\nb'`, // control characters as $'...' escapes (one visible line)
		"[REDACTED]":   "'[REDACTED]'",
		`"$(rm -rf)"`:  `'"$(rm -rf)"'`,
		"tab\there":    `$'tab\there'`,
		"semi;colon":   "'semi;colon'",
		"glob*":        "'glob*'",
		"~/tilde":      "'~/tilde'",
		"back`tick`":   "'back`tick`'",
		"amp&persand":  "'amp&persand'",
		"pipe|d":       "'pipe|d'",
		"paren(s)":     "'paren(s)'",
		"redirect>out": "'redirect>out'",
	} {
		assert.Equal(t, want, ShellQuote(in), "%q", in)
	}
	assert.Equal(t, "trtmc-qual run --out '/tmp/a b'", ShellJoin([]string{"trtmc-qual", "run", "--out", "/tmp/a b"}))
}
