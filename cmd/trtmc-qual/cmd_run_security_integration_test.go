//go:build integration

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

func randomSecret(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 12)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return prefix + hex.EncodeToString(b)
}

// TestSecretsNeverReachEvidence plants secrets where a careless harness
// would record them: TRTMC_SERVE_TOKEN in the harness's environment (the
// server requires it, so AIPerf must send it, and AIPerf echoes it in its
// input_config and logs; it reaches AIPerf through its environment), the
// same token as a literal in the server's argv, and a configured secret
// variable set only in the
// family's env, passed to a correctness case that also takes it as a flag
// and prints its whole environment into its log. The row must qualify (the
// token was wired through) and no byte of either secret may appear in any
// file of the evidence, the tables, the HTML report, stdout or stderr.
func TestSecretsNeverReachEvidence(t *testing.T) {
	h := getHarness(t)
	t.Parallel()
	token := randomSecret(t, "serve-token-")
	vendor := randomSecret(t, "vendor-secret-")
	o := h.run(t, scenario{
		env: []string{"TRTMC_SERVE_TOKEN=" + token, "TRTMC_QUAL_SECRETS=TRTMC_SERVE_TOKEN,MY_VENDOR_SECRET"},
		families: func(d doc) {
			f := family(d, "ref-detect")
			setFamilyEnv(d, "ref-detect", "MY_VENDOR_SECRET", vendor)
			f["server"] = append(f["server"].([]any), "--api-key", token)
			f["correctness"] = append([]any{filepath.Join(h.fakes, "fake-check"), "env-then", "--vendor-token", vendor, "--"},
				f["correctness"].([]any)...)
		},
	}, 3*time.Minute)
	require.Equal(t, 0, o.code, "the token reached AIPerf: every request was authorised")
	assertNoOrphans(t, o)
	assertEvidenceSound(t, o.out, false)
	assertPublishable(t, o)
	r := o.result(t, "detection", "ref-detect-small")
	assert.Equal(t, verdict.VerdictQualified, r.Verdict, "reasons: %+v", r.Reasons)
	assert.Equal(t, 55, r.Requests.Matched)

	// Not one byte of either secret, anywhere.
	var files int
	require.NoError(t, filepath.WalkDir(o.out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, s := range []string{token, vendor} {
			assert.False(t, bytes.Contains(data, []byte(s)), "%s holds a secret", p)
		}
		return nil
	}))
	assert.Greater(t, files, 20, "the evidence was searched")
	for _, s := range []string{token, vendor} {
		assert.NotContains(t, o.stdout, s)
		assert.NotContains(t, o.stderr, s)
	}

	// The secrets were there to leak, and were redacted where recorded.
	dir := filepath.Join(o.out, "detection", "ref-detect-small")
	log, err := os.ReadFile(filepath.Join(dir, "correctness.log"))
	require.NoError(t, err)
	assert.Contains(t, string(log), "MY_VENDOR_SECRET=[REDACTED]")
	assert.Contains(t, string(log), "TRTMC_SERVE_TOKEN=[REDACTED]")
	assert.Contains(t, strings.Join(command(t, r, "server").Argv, " "), "--api-key [REDACTED]")
	assert.Contains(t, strings.Join(command(t, r, "correctness").Argv, " "), "--vendor-token [REDACTED]")
	aiperfArgv := strings.Join(command(t, r, "aiperf").Argv, " ")
	assert.NotContains(t, aiperfArgv, "--api-key", "the token reaches AIPerf through its environment, not its argv")
	assert.Contains(t, aiperfArgv, "--config "+filepath.Join(dir, "aiperf-config.yaml"))
	summary, err := os.ReadFile(filepath.Join(dir, "aiperf", "profile_export_aiperf.json"))
	require.NoError(t, err)
	assert.True(t, bytes.Contains(summary, []byte(`"api_key":`)), "AIPerf's input_config records the key (redacted)")
}

// TestUnsafeNamesRejected: inventory ids, group and family names become
// directory names. Anything that is not one safe path component is
// rejected at validation (exit 2), by `inventory validate` and by `run`,
// and nothing is written anywhere.
func TestUnsafeNamesRejected(t *testing.T) {
	h := getHarness(t)
	profile := func(d doc) doc { return group(d, "detection")["profiles"].([]any)[0].(doc) }
	renameGroup := func(name string) func(inv, fams doc) {
		return func(inv, _ doc) {
			gs := inv["groups"].(doc)
			gs[name] = gs["detection"]
			delete(gs, "detection")
		}
	}
	cases := []struct {
		name  string
		edit  func(inv, fams doc)
		group string
		want  string
	}{
		{"id-parent", func(inv, _ doc) { profile(inv)["id"] = "../../evil" }, "detection", "is not a valid name"},
		{"id-slash", func(inv, _ doc) { profile(inv)["id"] = "a/b" }, "detection", "is not a valid name"},
		{"id-dot", func(inv, _ doc) { profile(inv)["id"] = "." }, "detection", "is not a valid name"},
		{"id-empty", func(inv, _ doc) { profile(inv)["id"] = "" }, "detection", "id: missing"},
		{"id-control", func(inv, _ doc) { profile(inv)["id"] = "ref\x1b[2Jdetect" }, "detection", "is not a valid name"},
		{"id-newline", func(inv, _ doc) { profile(inv)["id"] = "ref\ndetect" }, "detection", "is not a valid name"},
		{"id-shell", func(inv, _ doc) { profile(inv)["id"] = "$(touch${IFS}PWNED)" }, "detection", `"$(touch${IFS}PWNED)" is not a valid name`},
		{"id-bidi", func(inv, _ doc) { profile(inv)["id"] = "ref\u202edetect" }, "detection", `"ref\u202edetect" is not a valid name`},
		{"group-zero-width", renameGroup("detec\u200btion"), "detec\u200btion", `"detec\u200btion" is not a valid name`},
		{"group-parent", renameGroup(".."), "..", "is not a valid name"},
		{"group-slash", renameGroup("../../escaped"), "../../escaped", "is not a valid name"},
		{"family-parent", func(inv, fams doc) {
			fs := fams["families"].(doc)
			fs["../fam"] = fs["ref-detect"]
			profile(inv)["family"] = "../fam"
		}, "detection", "is not a valid name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			cfg := t.TempDir()
			inv := loadYAML(t, filepath.Join(h.root, "inventory", "reference.yaml"))
			fams := loadYAML(t, filepath.Join(h.root, "families", "families.yaml"))
			c.edit(inv, fams)
			writeYAML(t, filepath.Join(cfg, "inventory.yaml"), inv)
			writeYAML(t, filepath.Join(cfg, "families.yaml"), fams)
			common := []string{"--inventory", filepath.Join(cfg, "inventory.yaml"), "--families", filepath.Join(cfg, "families.yaml")}

			code, stdout, stderr := runBinary(t, h, cfg, append([]string{"inventory", "validate"}, common...)...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stdout+stderr, c.want)
			noRawControl(t, stdout+stderr)

			out := filepath.Join(root, "out")
			code, _, stderr = runBinary(t, h, cfg, append([]string{"run", "--group", c.group, "--out", out, "--gpus", "cpu",
				"--aiperf", h.aiperf, "--bin-dir", h.binDir}, common...)...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, c.want)
			noRawControl(t, stderr)
			entries, err := os.ReadDir(root)
			require.NoError(t, err)
			assert.Empty(t, entries, "nothing is written, inside --out or outside it")
		})
	}
}

// TestArgvReachesChildVerbatim: commands come from the family
// configuration as argv lists and never pass through a shell. Values full
// of shell metacharacters reach the child one argument each, unchanged, and
// nothing they would do in a shell happens.
func TestArgvReachesChildVerbatim(t *testing.T) {
	h := getHarness(t)
	t.Parallel()
	nasty := []string{
		"$(touch PWNED-subst)", "`touch PWNED-backtick`", "; touch PWNED-semicolon", "| touch PWNED-pipe",
		"&& touch PWNED-and", "> PWNED-redirect", "$HOME", "${PATH}", "*", "~", "'single' \"double\" \\back",
		"two words", "new\nline", "", "--flag=value with spaces", "#comment", "!history",
	}
	record := filepath.Join(t.TempDir(), "argv.bin")
	missing := filepath.Join(t.TempDir(), "corpus")
	argv := []any{filepath.Join(h.fakes, "argv-record"), record, "{corpus}"}
	for _, a := range nasty {
		argv = append(argv, a)
	}
	o := h.run(t, scenario{
		families:  func(d doc) { family(d, "ref-detect")["prepare"].(doc)["corpus"] = argv },
		inventory: func(d doc) { group(d, "detection")["workload"].(doc)["dataset"].(doc)["corpus"] = missing },
	}, 2*time.Minute)
	assert.Equal(t, 3, o.code, "a prepare command that fails is a setup failure (class setup)")
	assertNoOrphans(t, o)
	data, err := os.ReadFile(record)
	require.NoError(t, err)
	got := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	assert.Equal(t, append([]string{missing}, nasty...), got, "every argument arrived verbatim")
	r := o.result(t, "detection", "ref-detect-small")
	assert.Equal(t, verdict.VerdictError, r.Verdict)
	rs := reasonWith(t, r, "prepare_failed")
	assert.Equal(t, "preflight", rs.Stage)
	assert.Contains(t, rs.Message, "exited with status 3")
	assert.Equal(t, append([]string{filepath.Join(h.fakes, "argv-record"), record, missing}, nasty...),
		command(t, r, "prepare-corpus").Argv, "the recorded argv is the argv run")
	for _, dir := range []string{o.config, filepath.Dir(record), o.out, h.root} {
		matches, _ := filepath.Glob(filepath.Join(dir, "PWNED*"))
		assert.Empty(t, matches, "a shell ran something in %s", dir)
	}
}

// TestNonLoopbackBind: servers bind to loopback by default; --host beyond
// loopback is refused (exit 2) unless --allow-non-loopback is given, and
// then the server really is told to bind there.
func TestNonLoopbackBind(t *testing.T) {
	h := getHarness(t)
	t.Parallel()
	for _, host := range []string{"0.0.0.0", "127.example.com", "::"} {
		o := h.run(t, scenario{args: []string{"--host", host}}, time.Minute)
		assert.Equal(t, 2, o.code, host)
		assert.Contains(t, o.stderr, "is not a loopback address", host)
		assert.NoDirExists(t, o.out, "nothing is written")
	}

	// Allowed explicitly: the server binds 0.0.0.0. The correctness case
	// breaks at once, so nothing is measured on a public address.
	// (trtmc-refserver has the same guard, so the family's argv allows it too.)
	o := h.run(t, scenario{args: []string{"--host", "0.0.0.0", "--allow-non-loopback"},
		families: func(d doc) {
			f := family(d, "ref-detect")
			f["server"] = append(f["server"].([]any), "--allow-non-loopback")
			f["correctness"] = []any{"{bin}/trtmc-refserver", "check", "--bundle", "{bundle}",
				"--corpus", "/nonexistent/corpus", "--out", "{correctness_out}"}
		}}, 2*time.Minute)
	assert.Equal(t, 1, o.code)
	assertNoOrphans(t, o)
	r := o.result(t, "detection", "ref-detect-small")
	assert.Equal(t, "ok", stageStatus(r, "server"), "the server started and was ready")
	assert.Contains(t, strings.Join(command(t, r, "server").Argv, " "), "--host 0.0.0.0")
	log, err := os.ReadFile(filepath.Join(o.out, "detection", "ref-detect-small", "server.log"))
	require.NoError(t, err)
	assert.Contains(t, string(log), `"host":"0.0.0.0"`)

	// By default: loopback.
	o = h.run(t, scenario{families: func(d doc) {
		family(d, "ref-detect")["correctness"] = []any{"{bin}/trtmc-refserver", "check", "--bundle", "{bundle}",
			"--corpus", "/nonexistent/corpus", "--out", "{correctness_out}"}
	}}, 2*time.Minute)
	r = o.result(t, "detection", "ref-detect-small")
	assert.Contains(t, strings.Join(command(t, r, "server").Argv, " "), "--host 127.0.0.1")
}

// runBinary runs bin/trtmc-qual with args in dir and returns its exit
// status and output.
func runBinary(t *testing.T, h harness, dir string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.qual, args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		require.NoError(t, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}
