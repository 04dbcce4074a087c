//go:build integration

package main

import (
	"encoding/xml"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/junit"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// matrixRow is one row of the fault matrix in docs/reliability.md: a
// scenario, the verdict and exit status it must produce, the reason (stage,
// code, words of the message), and what else its evidence must show.
type matrixRow struct {
	name    string
	sc      func(t *testing.T, h harness) scenario
	exit    int
	verdict string // "" when the run stops before any row
	stage   string
	code    verdict.Code
	msg     []string
	check   func(t *testing.T, o outcome, r verdict.Result, dir string)
}

// TestReliabilityMatrix breaks things on purpose, through the real
// bin/trtmc-qual, the real trtmc-refserver and the real AIPerf, and checks
// each row of the matrix and the invariants of every row: no child outlives
// the run, no torn evidence, every request accounted for.
func TestReliabilityMatrix(t *testing.T) {
	h := getHarness(t)
	for _, row := range matrixRows() {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			o := h.run(t, row.sc(t, h), 3*time.Minute)
			assert.Equal(t, row.exit, o.code, "exit status")
			assertNoOrphans(t, o)
			assertEvidenceSound(t, o.out, false)
			assertPublishable(t, o)
			if row.verdict == "" {
				if row.check != nil {
					row.check(t, o, verdict.Result{}, "")
				}
				return
			}
			r := o.result(t, "detection", "ref-detect-small")
			dir := filepath.Join(o.out, "detection", "ref-detect-small")
			t.Logf("exit %d, verdict %s, reasons %+v", o.code, r.Verdict, r.Reasons)
			assert.Equal(t, row.verdict, r.Verdict, "reasons: %+v", r.Reasons)
			assertAccounted(t, r)
			if row.code != "" {
				rs := reasonWith(t, r, row.code)
				assert.Equal(t, row.stage, rs.Stage, "stage of reason %s", row.code)
				for _, m := range row.msg {
					assert.Contains(t, rs.Message, m, "reason %s", row.code)
				}
			}
			if row.check != nil {
				row.check(t, o, r, dir)
			}
		})
	}
}

func matrixRows() []matrixRow {
	return []matrixRow{
		// Server faults.
		{
			name: "server/startup-fail",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{fault: "startup-fail", args: []string{"--junit", filepath.Join(t.TempDir(), "junit.xml")}}
			},
			exit: 3, verdict: verdict.VerdictError, stage: "server", code: "server_exit",
			msg: []string{"exited with status 1", "startup_failed"},
			check: func(t *testing.T, o outcome, r verdict.Result, dir string) {
				assert.NoDirExists(t, filepath.Join(dir, "aiperf"), "nothing is measured against a server that never started")
				assert.Equal(t, "skipped", stageStatus(r, "aiperf"))
				assert.Contains(t, o.stderr, "setup failed for ref-detect-small")
				c := junitCaseOf(t, o, "ref-detect-small")
				require.NotNil(t, c.Error, "a row that broke is a JUnit error")
				assert.Contains(t, c.Error.Message, "server/server_exit: ")
				assert.Contains(t, c.Error.Message, "exited with status 1")
			},
		},
		{
			name: "server/startup-delay-within-deadline",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{fault: "startup-delay=2", families: func(d doc) { setTimeout(d, "ref-detect", "startup", "30s") },
					args: []string{"--junit", filepath.Join(t.TempDir(), "junit.xml")}}
			},
			exit: 0, verdict: verdict.VerdictQualified,
			check: func(t *testing.T, o outcome, r verdict.Result, dir string) {
				c := junitCaseOf(t, o, "ref-detect-small")
				assert.True(t, c.Failure == nil && c.Error == nil && c.Skipped == nil, "the qualified row passes")
				assert.Equal(t, 55, r.Requests.Matched)
				for _, s := range r.Stages {
					if s.Name == "server" {
						assert.GreaterOrEqual(t, s.DurationMS, 2000.0, "the server stage waited for the slow start")
					}
				}
			},
		},
		{
			name: "server/never-ready",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{fault: "never-ready", families: func(d doc) { setTimeout(d, "ref-detect", "startup", "2s") }}
			},
			exit: 3, verdict: verdict.VerdictError, stage: "server", code: "server_not_ready",
			msg: []string{"not ready after 2", "503"},
			check: func(t *testing.T, o outcome, r verdict.Result, dir string) {
				c := command(t, r, "server")
				assert.NotEmpty(t, c.Argv)
			},
		},
		{
			name: "server/hang-request-timeout",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{fault: "hang-after=52",
					families:  func(d doc) { setTimeout(d, "ref-detect", "stop", "2s") },
					inventory: func(d doc) { group(d, "detection")["workload"].(doc)["request_timeout_s"] = 2 }}
			},
			exit: 1, verdict: verdict.VerdictFailed, stage: "join", code: "errored",
			msg: []string{"measured: 3 of 50 requests: failed at the client", "TimeoutError"},
			check: func(t *testing.T, o outcome, r verdict.Result, dir string) {
				assert.Equal(t, 3, r.Requests.Errored)
				assert.Equal(t, 52, r.Requests.Matched)
			},
		},
		{
			// The same hang with AIPerf's request timeout longer than the
			// stage deadline: the deadline stops AIPerf (SIGINT, then
			// SIGKILL after its grace) and the exports are not trusted.
			name: "server/hang-aiperf-deadline",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{fault: "hang-after=5",
					families: func(d doc) {
						setTimeout(d, "ref-detect", "aiperf", "6s")
						setTimeout(d, "ref-detect", "stop", "2s")
					}}
			},
			exit: 1, verdict: verdict.VerdictError, stage: "aiperf", code: "aiperf_incomplete",
			msg: []string{"deadline_exceeded", "deadline 6s passed"},
			check: func(t *testing.T, o outcome, r verdict.Result, dir string) {
				assert.Equal(t, "error", stageStatus(r, "aiperf"))
			},
		},
		{
			name: "server/http-500/aiperf-exits-0-with-failed-requests",
			sc:   func(t *testing.T, h harness) scenario { return scenario{fault: "http-500-every=10"} },
			exit: 1, verdict: verdict.VerdictFailed, stage: "join", code: "errored",
			msg: []string{"measured: 5 of 50 requests: failed at the client", "Internal Server Error (500)", "injected fault"},
			check: func(t *testing.T, o outcome, r verdict.Result, dir string) {
				assert.Equal(t, 0, command(t, r, "aiperf").ExitCode, "AIPerf itself exits 0")
				assert.Equal(t, 5, r.Requests.Errored)
				assert.Equal(t, 50, r.Requests.Matched)
			},
		},
		{
			name: "server/ignore-sigterm",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{fault: "ignore-sigterm", families: func(d doc) { setTimeout(d, "ref-detect", "stop", "2s") }}
			},
			exit: 0, verdict: verdict.VerdictQualified,
			check: func(t *testing.T, o outcome, r verdict.Result, dir string) {
				c := command(t, r, "server")
				assert.Equal(t, "killed", c.Signal, "the server was SIGKILLed after the grace period")
				assert.Contains(t, o.stderr, "server ignored SIGTERM; killed after the grace period")
				assert.Equal(t, 55, r.Requests.Matched)
			},
		},
		{
			// A stale server (or anything else) holds the port the family
			// binds and answers 200 on every path, readiness included: the
			// harness must not measure the impostor.
			name: "server/port-already-taken",
			sc: func(t *testing.T, h harness) scenario {
				port := impostor(t)
				return scenario{families: func(d doc) {
					f := family(d, "ref-detect")
					argv := f["server"].([]any)
					for i := range argv {
						if argv[i] == "{port}" {
							argv[i] = port
						}
					}
					f["readiness"] = "http://{host}:" + port + "/health/ready"
				}}
			},
			exit: 3, verdict: verdict.VerdictError, stage: "server", code: "port_in_use",
			msg: []string{"already in use"},
			check: func(t *testing.T, o outcome, r verdict.Result, dir string) {
				assert.NoDirExists(t, filepath.Join(dir, "aiperf"), "nothing is measured against the impostor")
			},
		},

		// AIPerf faults.
		func() matrixRow {
			var earlier map[string]string
			return matrixRow{
				name: "aiperf/not-installed",
				sc: func(t *testing.T, h harness) scenario {
					out := filepath.Join(t.TempDir(), "out")
					earlier = seedEarlierRun(t, out)
					return scenario{aiperf: "/nonexistent/bin/aiperf", out: out, args: []string{"--junit", filepath.Join(t.TempDir(), "junit.xml")}}
				},
				exit: 3,
				check: func(t *testing.T, o outcome, _ verdict.Result, _ string) {
					assert.Contains(t, o.stderr, "aiperf setup: run /nonexistent/bin/aiperf --version")
					c := junitCaseOf(t, o, "run")
					require.NotNil(t, c.Error, "a run that could not start is one JUnit error")
					assert.Equal(t, "exit-3", c.Error.Type)
					assert.Contains(t, c.Error.Message, "/nonexistent/bin/aiperf")
					assert.Equal(t, earlier, treeContents(t, o.out), "a run that cannot start leaves earlier evidence untouched")
				},
			}
		}(),
		func() matrixRow {
			var earlier map[string]string
			return matrixRow{
				name: "aiperf/wrong-version",
				sc: func(t *testing.T, h harness) scenario {
					out := filepath.Join(t.TempDir(), "out")
					earlier = seedEarlierRun(t, out)
					return scenario{aiperf: filepath.Join(h.fakes, "fake-aiperf"), env: []string{"TRTMC_FAKE_AIPERF_VERSION=0.12.0"}, out: out}
				},
				exit: 3,
				check: func(t *testing.T, o outcome, _ verdict.Result, _ string) {
					assert.Contains(t, o.stderr, "--version is 0.12.0, want 0.13.0")
					assert.Equal(t, earlier, treeContents(t, o.out), "a run that cannot start leaves earlier evidence untouched")
				},
			}
		}(),
		{
			name: "aiperf/killed-mid-run",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{fault: "hang-after=5", aiperf: filepath.Join(h.fakes, "fake-aiperf"),
					env:      []string{"TRTMC_FAKE_AIPERF_REAL=" + h.aiperf, "TRTMC_FAKE_AIPERF_MODE=kill-after=6"},
					families: func(d doc) { setTimeout(d, "ref-detect", "stop", "2s") }}
			},
			exit: 1, verdict: verdict.VerdictError, stage: "aiperf", code: "aiperf_incomplete",
			msg: []string{"aiperf was killed by a signal (killed)"},
		},
		{
			name: "aiperf/truncated-records",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{aiperf: filepath.Join(h.fakes, "fake-aiperf"),
					env: []string{"TRTMC_FAKE_AIPERF_REAL=" + h.aiperf, "TRTMC_FAKE_AIPERF_MODE=truncate-records"}}
			},
			exit: 1, verdict: verdict.VerdictError, stage: "aiperf", code: "aiperf_incomplete",
			msg: []string{"records_invalid", "profile_export.jsonl"},
		},
		{
			name: "aiperf/unmerged-raw-records",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{aiperf: filepath.Join(h.fakes, "fake-aiperf"),
					env: []string{"TRTMC_FAKE_AIPERF_REAL=" + h.aiperf, "TRTMC_FAKE_AIPERF_MODE=unmerge-raw"}}
			},
			exit: 1, verdict: verdict.VerdictError, stage: "aiperf", code: "aiperf_incomplete",
			msg: []string{"raw_unmerged"},
		},

		// The family's correctness case.
		{
			name: "correctness/fails",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{families: func(d doc) {
					family(d, "ref-detect")["correctness"] = []any{filepath.Join(h.fakes, "fake-check"), "fail", "{correctness_out}"}
				}}
			},
			exit: 1, verdict: verdict.VerdictFailed, stage: "correctness", code: "correctness_failed",
			msg: []string{"map_50_95 0.125 ≥ 0.500 does not hold"},
			check: func(t *testing.T, o outcome, r verdict.Result, dir string) {
				assert.Equal(t, 55, r.Requests.Matched, "a failed correctness case does not stop the measurement")
			},
		},
		{
			name: "correctness/crashes",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{families: func(d doc) {
					family(d, "ref-detect")["correctness"] = []any{"{bin}/trtmc-refserver", "check", "--bundle", "{bundle}",
						"--corpus", "/nonexistent/corpus", "--out", "{correctness_out}"}
				}}
			},
			exit: 1, verdict: verdict.VerdictError, stage: "correctness", code: "correctness_crashed",
			msg: []string{"exited with status 2", "/nonexistent/corpus"},
		},
		{
			name: "correctness/hangs",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{families: func(d doc) {
					family(d, "ref-detect")["correctness"] = []any{filepath.Join(h.fakes, "fake-check"), "hang"}
					setTimeout(d, "ref-detect", "correctness", "2s")
				}}
			},
			exit: 1, verdict: verdict.VerdictError, stage: "correctness", code: "correctness_crashed",
			msg: []string{"did not finish within 2s"},
			check: func(t *testing.T, o outcome, r verdict.Result, dir string) {
				log, err := os.ReadFile(filepath.Join(dir, "correctness.log"))
				require.NoError(t, err)
				assert.Contains(t, string(log), "fake-check: hanging")
			},
		},
	}
}

// impostor listens on a loopback port and answers 200 to everything, like a
// stale server from an earlier run; it returns the port.
func impostor(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":"ready"}`))
	}), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// seedEarlierRun writes the evidence of an earlier run of the detection
// group under out and returns the tree's contents.
func seedEarlierRun(t *testing.T, out string) map[string]string {
	t.Helper()
	dir := filepath.Join(out, "detection", "ref-detect-small")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, data := range map[string]string{
		filepath.Join(out, "detection", reports.InventoryFile): `[{"id":"ref-detect-small","note":"the earlier run's inventory"}]` + "\n",
		filepath.Join(dir, reports.ResultFile):                 `{"schema":"trtmc-qual/result/v1","note":"the earlier run's result"}` + "\n",
		filepath.Join(dir, "manifest.json"):                    `{"note":"the earlier run's manifest"}` + "\n",
	} {
		require.NoError(t, os.WriteFile(name, []byte(data), 0o644))
	}
	return treeContents(t, out)
}

// treeContents maps every file under root to its contents.
func treeContents(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		files[p] = string(data)
		return err
	}))
	return files
}

// junitCaseOf reads the --junit file of the scenario and returns the test
// case named name.
func junitCaseOf(t *testing.T, o outcome, name string) junit.DocCase {
	t.Helper()
	i := slices.Index(o.args, "--junit")
	require.GreaterOrEqual(t, i, 0, "the scenario passed --junit")
	data, err := os.ReadFile(o.args[i+1])
	require.NoError(t, err)
	var doc junit.Document
	require.NoError(t, xml.Unmarshal(data, &doc))
	require.Len(t, doc.Suites, 1)
	for _, c := range doc.Suites[0].Cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no test case %q in %s", name, data)
	return junit.DocCase{}
}
