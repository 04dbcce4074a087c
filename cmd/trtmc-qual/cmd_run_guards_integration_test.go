//go:build integration

package main

// Issue 13: the adversarial cases, end to end through the real binary and
// the real AIPerf. Each case here used to end green, hang, or destroy
// evidence; docs/reliability.md lists them with their outcomes.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Finding 2: a second run into the same --out and group used to set aside
// the first run's live checkpoint directory; both failed. Now the second
// stops at once (exit 3), names the first (pid, command), and the first
// qualifies with all its evidence in place.
func TestSecondRunIntoTheSameOutIsRefused(t *testing.T) {
	h := getHarness(t)
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	var second outcome
	var firstPid int
	first := h.run(t, scenario{out: out, fault: "slow-ms=60", during: func(t *testing.T, p *running) {
		firstPid = p.cmd.Process.Pid
		p.waitLine(t, "stage aiperf", 2*time.Minute)
		second = h.run(t, scenario{out: out}, time.Minute)
	}}, 4*time.Minute)

	assert.Equal(t, 3, second.code, second.stderr)
	assert.Contains(t, second.stderr, filepath.Join(out, "detection")+" is in use by another trtmc-qual run: pid "+strconv.Itoa(firstPid)+" on ")
	assert.Contains(t, second.stderr, "run --group detection --out "+out)
	assertNoOrphans(t, second)

	assert.Equal(t, 0, first.code, first.stderr)
	assertNoOrphans(t, first)
	assertEvidenceSound(t, out, false)
	r := first.result(t, "detection", "ref-detect-small")
	assert.Equal(t, verdict.VerdictQualified, r.Verdict, "reasons: %+v", r.Reasons)
	assert.Equal(t, 55, r.Requests.Matched)
	entries, err := os.ReadDir(filepath.Join(out, "detection"))
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), "ref-detect-small.", "nothing was set aside")
	}
	recs, err := os.ReadFile(filepath.Join(out, "detection", "ref-detect-small", "server_records.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, 55, strings.Count(string(recs), "\n"), "the live records are whole")
}

// Finding 7: the loopback rule covered only --host. A family whose argv
// binds the server to 0.0.0.0 qualified with exit 0. Now the listen check
// after readiness breaks the row, naming the address, and nothing is
// measured on it.
func TestFamilyBindingBeyondLoopbackBreaksTheRow(t *testing.T) {
	h := getHarness(t)
	t.Parallel()
	o := h.run(t, scenario{families: func(d doc) {
		f := family(d, "ref-detect")
		argv := f["server"].([]any)
		for i, a := range argv {
			if a == "{host}" {
				argv[i] = "0.0.0.0"
			}
		}
		f["server"] = append(argv, "--allow-non-loopback") // trtmc-refserver's own guard, passed by the family
	}}, 2*time.Minute)
	assert.Equal(t, 1, o.code, "a broken row, not a setup failure")
	assertNoOrphans(t, o)
	r := o.result(t, "detection", "ref-detect-small")
	assert.Equal(t, verdict.VerdictError, r.Verdict)
	rs := reasonWith(t, r, "listen_off_loopback")
	assert.Equal(t, "server", rs.Stage)
	// Go serves 0.0.0.0 from one dual-stack socket, which the kernel lists as [::].
	assert.Regexp(t, `listens on (0\.0\.0\.0|\[::\]):\d+ \(every interface\), off loopback`, rs.Message)
	assert.Equal(t, "skipped", stageStatus(r, "aiperf"), "nothing is measured on a public address")
	assert.NoDirExists(t, filepath.Join(o.out, "detection", "ref-detect-small", "aiperf"))
	require.Len(t, r.Provenance.ServerListen, 1)
	assert.Regexp(t, `^(0\.0\.0\.0|\[::\]):\d+$`, r.Provenance.ServerListen[0])

	// By default the server binds loopback, and the record says so.
	o = h.run(t, scenario{families: func(d doc) {
		family(d, "ref-detect")["correctness"] = []any{"{bin}/trtmc-refserver", "check", "--bundle", "{bundle}",
			"--corpus", "/nonexistent/corpus", "--out", "{correctness_out}"}
	}}, 2*time.Minute)
	r = o.result(t, "detection", "ref-detect-small")
	assert.Equal(t, "ok", stageStatus(r, "server"))
	require.NotEmpty(t, r.Provenance.ServerListen)
	for _, a := range r.Provenance.ServerListen {
		assert.True(t, strings.HasPrefix(a, "127.0.0.1:"), a)
	}
}

// Finding 5: a secret holding " or \ leaked in its JSON-escaped form when
// a child printed it as JSON; URL-encoded and base64 forms leaked too. A
// correctness case prints the secret five ways; none of those lines
// survives anywhere in the evidence, stdout or stderr.
func TestSecretPrintedEncodedNeverReachesEvidence(t *testing.T) {
	h := getHarness(t)
	t.Parallel()
	secret := randomSecret(t, `vendor"sec\ret/é `)
	o := h.run(t, scenario{
		env: []string{"TRTMC_QUAL_SECRETS=TRTMC_SERVE_TOKEN,MY_VENDOR_SECRET"},
		families: func(d doc) {
			f := family(d, "ref-detect")
			setFamilyEnv(d, "ref-detect", "MY_VENDOR_SECRET", secret)
			f["correctness"] = append([]any{filepath.Join(h.fakes, "fake-check"), "encoded-env-then", "MY_VENDOR_SECRET", "--"},
				f["correctness"].([]any)...)
		},
	}, 3*time.Minute)
	require.Equal(t, 0, o.code, o.stderr)
	r := o.result(t, "detection", "ref-detect-small")
	assert.Equal(t, verdict.VerdictQualified, r.Verdict)

	// What the child printed, computed independently by the same encoders.
	cmd := exec.Command(filepath.Join(h.fakes, "fake-check"), "encoded-env-then", "S", "--", "true")
	cmd.Env = append(os.Environ(), "S="+secret)
	printed, err := cmd.CombinedOutput()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(printed)), "\n")
	require.Len(t, lines, 5)
	log, err := os.ReadFile(filepath.Join(o.out, "detection", "ref-detect-small", "correctness.log"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, strings.Count(string(log), "[REDACTED]"), 5, "the child did print it:\n%s", log)
	require.NoError(t, filepath.WalkDir(o.out, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, l := range lines {
			assert.NotContains(t, string(data), l, "%s holds a line that carries the secret", p)
		}
		assert.NotContains(t, string(data), secret, p)
		return nil
	}))
	for _, l := range lines {
		assert.NotContains(t, o.stdout+o.stderr, l)
	}
}

// Findings 1 and 3, end to end: a bundle path of /dev/zero used to be
// hashed forever (and the first Ctrl-C did not stop it); now the row
// breaks at once naming it. The run's --out holds shell syntax and a
// space: the reproduce command of results.md, pasted into bash with $OUT
// set to it, is the run's invocation and runs nothing else.
func TestEndlessBundleAndQuotedReproduce(t *testing.T) {
	h := getHarness(t)
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out $(touch PWNED-out) `touch PWNED-tick`")
	start := time.Now()
	o := h.run(t, scenario{out: out, inventory: func(d doc) {
		p := group(d, "detection")["profiles"].([]any)[0].(doc)
		p["bundle"].(doc)["path"] = "/dev/zero"
	}}, time.Minute)
	assert.Less(t, time.Since(start), 45*time.Second)
	assert.Equal(t, 3, o.code, "an unreadable bundle is a setup error: %s", o.stderr)
	r := o.result(t, "detection", "ref-detect-small")
	rs := reasonWith(t, r, verdict.CodeBundleUnreadable)
	assert.Contains(t, rs.Message, "/dev/zero is not a regular file (it is a character device)")

	md, err := os.ReadFile(filepath.Join(out, "detection", "results.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)### ref-detect-small\n\n(`{3,})sh\n(.*?)\n`{3,}\n").FindSubmatch(md)
	require.NotNil(t, m, "%s", md)
	scratch := t.TempDir()
	paste := exec.Command("bash", "-c", `trtmc-qual() { printf '%s\0' "$@"; }; `+string(m[2]))
	paste.Dir = scratch
	// Published text writes the evidence root as "$OUT" (issue 27): with
	// OUT set to it, the command is the run's; the shell syntax in the
	// value is never evaluated.
	assert.Contains(t, string(m[2]), `--out "$OUT"`)
	paste.Env = append(os.Environ(), "OUT="+out)
	got, err := paste.Output()
	require.NoError(t, err)
	argv := strings.Split(strings.TrimSuffix(string(got), "\x00"), "\x00")
	at := slices.Index(argv, "--out")
	require.True(t, at >= 0 && at+1 < len(argv), "%q", argv)
	assert.Equal(t, out, argv[at+1], "the --out path reads back verbatim")
	assert.Equal(t, []string{"--only", "ref-detect-small"}, argv[len(argv)-2:])
	assert.Contains(t, argv, "run")
	for _, dir := range []string{scratch, o.config, filepath.Dir(out)} {
		matches, _ := filepath.Glob(filepath.Join(dir, "PWNED*"))
		assert.Empty(t, matches, "pasting the command ran something in %s", dir)
	}
}
