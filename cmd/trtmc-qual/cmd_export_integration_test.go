//go:build integration

package main

// Issue 27: from real evidence to what is published. One real run (the
// real AIPerf against the reference server) under a directory with a
// user-like name, reused for every check: the published reports hold no
// path, host or user name of the run; the evidence pack re-judged in a
// fresh directory, the original removed, gives the original's verdicts,
// figures and report; planted host name, user name, private IP and token
// refuse the pack, each named with its file and line; a row whose
// evidence changed and an existing pack are refused, nothing written.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// cli runs bin/trtmc-qual with args (and extra environment) and returns
// its exit status, stdout and stderr.
func (h harness) cli(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.qual, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err, "stderr: %s", stderr.String())
	}
	return code, stdout.String(), stderr.String()
}

// wordRe matches s as a word (not inside a longer name).
func wordRe(s string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_-])` + regexp.QuoteMeta(s) + `([^A-Za-z0-9_-]|$)`)
}

// figures are what a re-judge derives for a row.
type figures struct {
	Verdict  string
	Requests verdict.Counts
	ByPhase  map[string]verdict.Counts
	Latency  verdict.Latency
	Images   *float64
	Boxes    *int
	Correct  *verdict.Correctness
}

func figuresOf(t *testing.T, stdout string) map[string]figures {
	t.Helper()
	var g groupJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &g))
	out := map[string]figures{}
	for _, r := range g.Rows {
		if r.Result != nil {
			res := r.Result
			out[r.Profile] = figures{res.Verdict, res.Requests, res.RequestsByPhase, res.LatencyMS, res.ImagesPerSec, res.Boxes, res.Correctness}
		}
	}
	return out
}

func TestPublishFromRealEvidence(t *testing.T) {
	h := getHarness(t)
	base := t.TempDir()
	out := filepath.Join(base, "home", "alice", "qual-out")
	o := h.run(t, scenario{out: out}, 4*time.Minute)
	require.Equal(t, 0, o.code, "the run qualifies; stderr:\n%s", o.stderr)
	assertNoOrphans(t, o)
	host, err := os.Hostname()
	require.NoError(t, err)
	// The test's configuration and the shared binaries live in temporary
	// directories: named roots, as a release engineer names a private
	// inventory's directory.
	roots := []string{"--root", "QUAL_CONFIG=" + o.config, "--root", "QUAL_TOOLS=" + filepath.Dir(h.binDir)}
	private := []string{out, base, o.config, filepath.Dir(h.binDir), "alice", "/tmp/"}

	res := o.result(t, "detection", "ref-detect-small")
	var recorded []string
	for _, r := range res.Provenance.Roots {
		recorded = append(recorded, r.Name)
	}
	assert.Contains(t, recorded, publish.RootOut, "run records its roots")

	// 1. Published formats of the original: no path, host or user name.
	code, md, errOut := h.cli(t, nil, append([]string{"report", "--from", out, "--group", "detection", "-o", "md"}, roots...)...)
	require.Equal(t, 0, code, errOut)
	for _, format := range []string{"md", "html", "summary"} {
		_, text, _ := h.cli(t, nil, append([]string{"report", "--from", out, "--group", "detection", "-o", format}, roots...)...)
		for _, p := range private {
			assert.NotContains(t, text, p, format)
		}
		assert.False(t, wordRe(host).MatchString(text), "%s names the host %q", format, host)
	}
	assert.Contains(t, md, `--out "$OUT"`)
	assert.Contains(t, md, `--inventory "$QUAL_CONFIG/inventory.yaml"`)
	stored, err := os.ReadFile(filepath.Join(out, "detection", "results.md"))
	require.NoError(t, err)
	for _, p := range private {
		assert.NotContains(t, string(stored), p, "results.md written by run")
	}

	// The original re-judged: the figures and the report the pack must give.
	code, origJSON, errOut := h.cli(t, nil, "report", "--from", out, "--group", "detection", "--rejudge", "-o", "json")
	require.Equal(t, 0, code, errOut)
	_, origMD, _ := h.cli(t, nil, append([]string{"report", "--from", out, "--group", "detection", "--rejudge", "-o", "md"}, roots...)...)

	// 2. The pack, by default: logs left out.
	packDir := t.TempDir()
	pack := filepath.Join(packDir, "detection-evidence.tar.gz")
	code, _, errOut = h.cli(t, nil, append([]string{"export", "--from", out, "--group", "detection", "--output-file", pack}, roots...)...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "trtmc-qual report --from DIR/detection-evidence --group detection --rejudge")

	// Extracted elsewhere with tar itself, the original gone.
	fresh := filepath.Join(t.TempDir(), "elsewhere")
	require.NoError(t, os.MkdirAll(fresh, 0o755))
	tarOut, err := exec.Command("tar", "xzf", pack, "-C", fresh).CombinedOutput()
	require.NoError(t, err, "%s", tarOut)
	hidden := out + ".away"
	require.NoError(t, os.Rename(out, hidden))
	extracted := filepath.Join(fresh, "detection-evidence")
	err = filepath.WalkDir(extracted, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, s := range private {
			assert.NotContains(t, string(data), s, p)
		}
		assert.False(t, wordRe(host).Match(data) && !strings.Contains(p, "aiperf"), "%s names the host", p)
		assert.NotContains(t, p, "server.log", "logs are left out by default")
		return nil
	})
	require.NoError(t, err)
	validateEvidence(t, loadSchemas(t), extracted)
	code, packJSON, errOut := h.cli(t, nil, "report", "--from", extracted, "--group", "detection", "--rejudge", "-o", "json")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "re-judged 1 result(s)")
	assert.Equal(t, figuresOf(t, origJSON), figuresOf(t, packJSON), "the same verdicts and figures")
	_, packMD, _ := h.cli(t, nil, "report", "--from", extracted, "--group", "detection", "--rejudge", "-o", "md")
	assert.Equal(t, origMD, packMD, "the pack's report is the original's")
	require.NoError(t, os.Rename(hidden, out))

	// 3. Planted: a user name, the host name and a private IP in a file the
	// join reads (published byte for byte), a token in a log; the row
	// sealed again as if the run had written them. Each is found, named
	// with its file and line; nothing is written.
	dir := filepath.Join(out, "detection", "ref-detect-small")
	const token = "tok-7f3a9c2e5b81d4"
	editLines(t, filepath.Join(dir, "server_records.jsonl"), func(l []string) []string {
		l[2] = strings.Replace(l[2], `{`, `{"note":"served by `+host+` for alice via 10.11.12.13",`, 1)
		return l
	})
	f, err := os.OpenFile(filepath.Join(dir, "server.log"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"event":"auth","header":"Bearer ` + token + `"}` + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	// Not sealed again yet: the row's evidence changed since its seal.
	leaky := filepath.Join(packDir, "leaky.tar.gz")
	code, _, errOut = h.cli(t, nil, append([]string{"export", "--from", out, "--group", "detection", "--output-file", leaky}, roots...)...)
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, errOut, "row ref-detect-small (")
	assert.Contains(t, errOut, "server_records.jsonl: changed")
	_, err = os.Stat(leaky)
	assert.ErrorIs(t, err, os.ErrNotExist)

	m, mf := evidence.ReadManifest(dir)
	require.Nil(t, mf)
	require.NoError(t, evidence.Seal(dir, m.Info))
	code, _, errOut = h.cli(t, []string{"TRTMC_SERVE_TOKEN=" + token},
		append([]string{"export", "--from", out, "--group", "detection", "--output-file", leaky, "--logs", "full"}, roots...)...)
	assert.Equal(t, 1, code, errOut)
	for _, want := range []string{
		"detection/ref-detect-small/server_records.jsonl:3: host name \"" + host + "\"",
		"detection/ref-detect-small/server_records.jsonl:3: user name \"alice\"",
		"detection/ref-detect-small/server_records.jsonl:3: IP address \"10.11.12.13\"",
		"detection/ref-detect-small/server.log:",
		"secret (the value of a configured secret variable",
		"nothing was written",
	} {
		assert.Contains(t, errOut, want)
	}
	assert.NotContains(t, errOut, token, "a secret is never shown")
	_, err = os.Stat(leaky)
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing written")
	entries, _ := os.ReadDir(packDir)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), ".tmp-")
	}

	// An existing pack is never overwritten.
	before, err := os.ReadFile(pack)
	require.NoError(t, err)
	code, _, errOut = h.cli(t, nil, append([]string{"export", "--from", out, "--group", "detection", "--output-file", pack}, roots...)...)
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "already exists")
	after, _ := os.ReadFile(pack)
	assert.Equal(t, before, after)
}
