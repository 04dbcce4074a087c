//go:build integration

package qual_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// env is what every end-to-end test needs: the repository, a freshly built
// trtmc-refserver, the project's AIPerf and tokenizer.
type e2eEnv struct {
	root, bin, aiperf, tokenizer string
}

func setup(t *testing.T) e2eEnv {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	e := e2eEnv{root: root, aiperf: os.Getenv("TRTMC_QUAL_AIPERF"), tokenizer: os.Getenv("TRTMC_QUAL_TOKENIZER")}
	if e.aiperf == "" {
		e.aiperf = filepath.Join(root, ".venv", "bin", "aiperf")
	}
	if e.tokenizer == "" {
		e.tokenizer = filepath.Join(root, ".venv", "tokenizer")
	}
	if _, err := os.Stat(e.aiperf); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("AIPerf is not installed at %s (run make setup): CI never skips this tier", e.aiperf)
		}
		t.Skipf("AIPerf not installed at %s (run make setup)", e.aiperf)
	}
	e.bin = t.TempDir()
	build := exec.Command("go", "build", "-o", e.bin, "./cmd/trtmc-refserver")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build trtmc-refserver: %s", out)
	return e
}

// options builds qual.Options over the shipped reference inventory, with
// bundles and corpora prepared in a shared temporary directory.
func (e e2eEnv) options(t *testing.T, group, out string, fault string) qual.Options {
	t.Helper()
	fams, err := families.Load(filepath.Join(e.root, "families", "families.yaml"))
	require.NoError(t, err)
	if fault != "" {
		for _, f := range fams.Families {
			f.Env = map[string]string{"TRTMC_REFSERVER_FAULT": fault}
		}
	}
	inv, err := inventory.Load([]string{filepath.Join(e.root, "inventory", "reference.yaml")}, fams.Has)
	require.NoError(t, err)
	// Build bundles and corpora under the test's own directory, not the repo's out/.
	refDir := filepath.Join(out, "ref")
	for _, g := range inv.Groups {
		g.Workload.Dataset.Corpus = filepath.Join(refDir, "corpora", g.Name)
		for _, p := range g.Profiles {
			p.Bundle.Path = filepath.Join(refDir, "bundles", filepath.Base(p.Bundle.Path))
		}
	}
	var log bytes.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("harness log:\n%s", log.String())
		}
	})
	return qual.Options{
		Inventory: inv, Families: fams, Registry: families.DefaultRegistry(), Group: group, Out: out,
		BinDir: e.bin, AIPerf: qual.AIPerfOptions{Bin: e.aiperf, Version: "0.13.0", Tokenizer: e.tokenizer},
		Runner: proc.OS{}, Log: &syncWriter{w: &log},
		Provenance: qual.ProvenanceOptions{HarnessVersion: "test", HarnessCommit: "test", Command: "trtmc-qual run --group " + group},
	}
}

func readResult(t *testing.T, out, group, id string) verdict.Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, group, id, "result.json"))
	require.NoError(t, err)
	var r verdict.Result
	require.NoError(t, json.Unmarshal(data, &r))
	return r
}

// TestReferenceGroupsQualify is the demo path end to end: both groups of
// the reference inventory, real AIPerf, real servers.
func TestReferenceGroupsQualify(t *testing.T) {
	e := setup(t)
	for _, group := range []string{"vlm", "detection"} {
		t.Run(group, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			res, err := qual.Run(ctx, e.options(t, group, out, ""))
			require.NoError(t, err)
			counted := 0
			for _, r := range res.Results {
				if r.Verdict == verdict.VerdictExcluded {
					assert.NotEmpty(t, r.Exclusion)
					continue
				}
				assert.Equal(t, verdict.VerdictQualified, r.Verdict, "%s: %+v", r.Profile, r.Reasons)
				assert.Equal(t, 5, r.RequestsByPhase["warmup"].Matched, r.Profile)
				assert.Equal(t, 50, r.RequestsByPhase["measured"].Matched, r.Profile)
				assert.Equal(t, 55, r.Requests.Matched, r.Profile)
				assert.Zero(t, r.Requests.Errored+r.Requests.MissingJoins()+r.Requests.Duplicates+r.Requests.Mismatched)
				require.NotNil(t, r.LatencyMS.HTTP.P50)
				require.NotNil(t, r.LatencyMS.Task.P95)
				assert.Equal(t, 50, r.LatencyMS.Task.Count)
				require.NotNil(t, r.ImagesPerSec)
				assert.Greater(t, *r.ImagesPerSec, 0.0)
				require.NotNil(t, r.Correctness)
				assert.True(t, r.Correctness.Passed)
				assert.Equal(t, "0.13.0", r.Provenance.AIPerfVersion)
				assert.Len(t, r.Provenance.BundleSHA256, 64)
				// The whole pip freeze is kept beside its digest, and the Go toolchain.
				require.Equal(t, "pip_freeze.txt", r.Provenance.PipFreezeFile)
				freeze, err := os.ReadFile(filepath.Join(out, group, r.Profile, r.Provenance.PipFreezeFile))
				require.NoError(t, err)
				assert.Contains(t, string(freeze), "aiperf==0.13.0\n")
				assert.Equal(t, fmt.Sprintf("%x", sha256.Sum256(freeze)), r.Provenance.PipFreezeSHA256)
				assert.Equal(t, runtime.Version(), r.Provenance.GoVersion)
				assertIdentityAndProvenance(t, *r, filepath.Join(out, group, r.Profile), e)
				if r.Kind == "normal" {
					counted++
				}
				for _, f := range []string{"joined.jsonl", "manifest.json", "server.log", "server_records.jsonl",
					"correctness.json", "native_answers.jsonl", "aiperf/profile_export_aiperf.json", "aiperf/argv.json"} {
					assert.FileExists(t, filepath.Join(out, group, r.Profile, f))
				}
			}
			assert.Equal(t, 1, counted)
			// The group tables were written and equal what `report` renders.
			md, err := os.ReadFile(filepath.Join(out, group, "results.md"))
			require.NoError(t, err)
			rep, err := reports.Load([]string{out}, group)
			require.NoError(t, err)
			rep.Publisher = publish.Publisher{} // as the run's group tables are published
			var buf bytes.Buffer
			require.NoError(t, reports.Render(&buf, rep, "md"))
			assert.Equal(t, string(md), buf.String())
		})
	}
}

// assertIdentityAndProvenance: a qualified row proves every request's
// identity by the server's X-Request-ID echo in AIPerf's trace, splits its
// HTTP time, and keeps the provenance TRTMC's text_profile.py keeps.
func assertIdentityAndProvenance(t *testing.T, r verdict.Result, dir string, e e2eEnv) {
	t.Helper()
	for _, phase := range []string{verdict.PhaseWarmup, verdict.PhaseMeasured} {
		c := r.RequestsByPhase[phase]
		assert.Equal(t, c.Matched, c.EchoProven, "%s: every %s request's echo proven", r.Profile, phase)
	}
	lines, err := verdict.ReadJoined(filepath.Join(dir, "joined.jsonl"))
	require.NoError(t, err)
	require.Len(t, lines, 55)
	for _, l := range lines {
		assert.Equal(t, verdict.EchoMatch, l.Echo, l.RequestID)
		require.NotNil(t, l.SendingMS, l.RequestID)
		require.NotNil(t, l.ClientMS, l.RequestID)
		assert.InDelta(t, *l.HTTPMS, *l.ClientMS+*l.SendingMS+*l.WaitingMS+*l.ReceivingMS, 1e-3, l.RequestID)
		assert.GreaterOrEqual(t, *l.ClientMS, -1e-3, "AIPerf's request_latency holds the exchange: %s", l.RequestID)
	}
	s := r.LatencyMS.HTTPSplit
	require.NotNil(t, s)
	assert.Equal(t, 50, s.Count)
	require.NotNil(t, s.HTTPMean)
	assert.InDelta(t, *s.HTTPMean, *s.Client.Mean+*s.Sending.Mean+*s.Waiting.Mean+*s.Receiving.Mean, 1e-3)
	argv, err := os.ReadFile(filepath.Join(dir, "aiperf", "argv.json"))
	require.NoError(t, err)
	assert.Contains(t, string(argv), `"--export-http-trace"`)

	p := r.Provenance
	require.NotNil(t, p.AIPerfDist)
	assert.Empty(t, p.AIPerfDist.Error)
	assert.Equal(t, "0.13.0", p.AIPerfDist.Version)
	assert.Len(t, p.AIPerfDist.RecordSHA256, 64)
	require.Len(t, p.BundleChecks, 2)
	for _, c := range p.BundleChecks {
		assert.Equal(t, p.BundleSHA256, c.SHA256, c.After)
	}
	require.NotNil(t, p.ServerLoaded)
	require.Empty(t, p.ServerLoaded.Error)
	ref, err := filepath.EvalSymlinks(filepath.Join(e.bin, "trtmc-refserver"))
	require.NoError(t, err)
	sum, err := fileio.FileSHA256(context.Background(), ref)
	require.NoError(t, err)
	assert.Contains(t, p.ServerLoaded.Executables, verdict.FileIdentity{Path: ref, SHA256: sum}, "the server binary that served, digested")
	assert.FileExists(t, filepath.Join(dir, verdict.LoadedFile))
}

// TestFaultsAreNeverGreen runs the reference detection checkpoint against
// faults of the server and checks verdicts and reasons.
func TestFaultsAreNeverGreen(t *testing.T) {
	e := setup(t)
	cases := []struct {
		fault, verdict string
		code           verdict.Code
		check          func(t *testing.T, r verdict.Result, dir string)
	}{
		{"wrong-answer-every=10", verdict.VerdictFailed, "mismatched", func(t *testing.T, r verdict.Result, dir string) {
			assert.Greater(t, r.Requests.Mismatched, 0)
			data, err := os.ReadFile(filepath.Join(dir, "mismatches.jsonl"))
			require.NoError(t, err)
			assert.Contains(t, string(data), `"diff":`)
			assert.Contains(t, string(data), `"native_answer":[`, "the full native answer is kept")
			assert.Contains(t, string(data), `"http_answer":[`, "the full HTTP answer is kept")
			// The page the run wrote shows both answers of each mismatch,
			// read back from the sealed file, the moved box marked.
			page, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "results.html"))
			require.NoError(t, err)
			assert.Equal(t, min(r.Requests.Mismatched, 20), strings.Count(string(page), `<div class="answers">`))
			assert.NotContains(t, string(page), "mismatch-note", "the sealed mismatches.jsonl is read")
			assert.Contains(t, string(page), "<del>")
			assert.Contains(t, string(page), "<ins>")
		}},
		{"crash-after=20", verdict.VerdictError, "server_died", func(t *testing.T, r verdict.Result, _ string) {
			assert.Contains(t, r.Reasons[0].Message, "exited with status 3")
			// A broken row still accounts for every request the client sent.
			assert.Equal(t, 20, r.Requests.Matched)
			assert.Equal(t, 35, r.Requests.Errored)
		}},
		{"drop-record-every=7", verdict.VerdictFailed, "missing_server_record", func(t *testing.T, r verdict.Result, _ string) {
			assert.Equal(t, 55/7, r.Requests.MissingServerRecord)
		}},
		// The server's answer to every 3rd request carries no X-Request-ID:
		// AIPerf's HTTP trace shows it, and each is a join failure of its
		// own, warmup (request 3) counted apart from measured (6, 9 ... 54).
		{"no-echo-every=3", verdict.VerdictFailed, "echo_missing", func(t *testing.T, r verdict.Result, dir string) {
			assert.Equal(t, 1, r.RequestsByPhase[verdict.PhaseWarmup].EchoMissing)
			assert.Equal(t, 4, r.RequestsByPhase[verdict.PhaseWarmup].EchoProven)
			assert.Equal(t, 17, r.RequestsByPhase[verdict.PhaseMeasured].EchoMissing)
			assert.Equal(t, 33, r.RequestsByPhase[verdict.PhaseMeasured].Matched)
			assertEchoes(t, dir, verdict.JoinEchoMissing, verdict.EchoMissing, 18)
		}},
		{"wrong-echo-every=4", verdict.VerdictFailed, "echo_mismatched", func(t *testing.T, r verdict.Result, dir string) {
			assert.Equal(t, 1, r.RequestsByPhase[verdict.PhaseWarmup].EchoMismatched)
			assert.Equal(t, 12, r.RequestsByPhase[verdict.PhaseMeasured].EchoMismatched)
			assertEchoes(t, dir, verdict.JoinEchoMismatched, verdict.EchoDiffers, 13)
		}},
	}
	for _, c := range cases {
		t.Run(c.fault, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			opts := e.options(t, "detection", out, c.fault)
			opts.Only = []string{"ref-detect-small"}
			children := watchChildren(t, &opts)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			res, err := qual.Run(ctx, opts)
			require.NoError(t, err)
			require.Len(t, res.Results, 1)
			r := readResult(t, out, "detection", "ref-detect-small")
			assert.Equal(t, c.verdict, r.Verdict)
			var codes []verdict.Code
			for _, reason := range r.Reasons {
				codes = append(codes, reason.Code)
			}
			assert.Contains(t, codes, c.code, "reasons: %+v", r.Reasons)
			assertAccounted(t, r)
			children.assertGone(t)
			c.check(t, r, filepath.Join(out, "detection", "ref-detect-small"))
		})
	}
}

// assertEchoes checks joined.jsonl: n requests have the status and echo
// given, each with its problem; every other one's echo matched.
func assertEchoes(t *testing.T, dir, status, echo string, n int) {
	t.Helper()
	lines, err := verdict.ReadJoined(filepath.Join(dir, "joined.jsonl"))
	require.NoError(t, err)
	got := 0
	for _, l := range lines {
		if l.Status == status {
			got++
			assert.Equal(t, echo, l.Echo, l.RequestID)
			assert.Contains(t, l.Problem, "X-Request-ID", l.RequestID)
			continue
		}
		assert.Equal(t, verdict.EchoMatch, l.Echo, l.RequestID)
	}
	assert.Equal(t, n, got)
}

// syncWriter lets parallel checkpoints log into one buffer.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
