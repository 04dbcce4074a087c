//go:build integration

package main

// The trust matrix (docs/reliability.md, "No green row from bad data"):
// the real bin/trtmc-qual, the real AIPerf and native runner wrapped by
// small fakes that alter their outputs between stages, inventories that
// break the qualification contract, and stored evidence tampered with
// before `report` and `report --rejudge`. No case may give a qualified row;
// each must name its cause.

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
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// trustRow is one way to feed the pipeline bad data.
type trustRow struct {
	name string
	sc   func(t *testing.T, h harness) scenario
	// verdict is the row's verdict (never qualified); codes are reason
	// codes it must carry; exit is trtmc-qual's exit status.
	verdict string
	codes   []verdict.Code
	exit    int
	check   func(t *testing.T, r verdict.Result, dir string)
}

func codesOf(r verdict.Result) []verdict.Code {
	var out []verdict.Code
	for _, x := range r.Reasons {
		out = append(out, x.Code)
	}
	return out
}

func fakeAIPerf(h harness, mode string) scenario {
	return scenario{aiperf: filepath.Join(h.fakes, "fake-aiperf"),
		env: []string{"TRTMC_FAKE_AIPERF_REAL=" + h.aiperf, "TRTMC_FAKE_AIPERF_MODE=" + mode}}
}

func fakeNative(h harness, mode string) scenario {
	return scenario{families: func(d doc) {
		f := family(d, "ref-detect")
		f["native"] = append([]any{filepath.Join(h.fakes, "fake-native"), mode, "--"}, f["native"].([]any)...)
	}}
}

func fakeCheck(h harness, mode string) scenario {
	return scenario{families: func(d doc) {
		family(d, "ref-detect")["correctness"] = []any{filepath.Join(h.fakes, "fake-check"), mode, "{correctness_out}"}
	}}
}

func trustRows() []trustRow {
	return []trustRow{
		{name: "aiperf/record-copy-that-is-an-http-500",
			sc:      func(t *testing.T, h harness) scenario { return fakeAIPerf(h, "dup-record-500") },
			verdict: verdict.VerdictFailed, codes: []verdict.Code{verdict.CodeDuplicate}, exit: 1,
			check: func(t *testing.T, r verdict.Result, _ string) {
				assert.Equal(t, 2, r.RequestsByPhase[verdict.PhaseMeasured].Duplicates, "the request and its copy")
			}},
		{name: "aiperf/record-copied",
			sc:      func(t *testing.T, h harness) scenario { return fakeAIPerf(h, "dup-record") },
			verdict: verdict.VerdictFailed, codes: []verdict.Code{verdict.CodeDuplicate}, exit: 1},
		{name: "aiperf/raw-export-disagrees-on-phase",
			sc:      func(t *testing.T, h harness) scenario { return fakeAIPerf(h, "raw-phase") },
			verdict: verdict.VerdictError, codes: []verdict.Code{verdict.CodeInconsistent}, exit: 1},
		{name: "aiperf/raw-record-nobody-sent",
			sc:      func(t *testing.T, h harness) scenario { return fakeAIPerf(h, "unknown-raw") },
			verdict: verdict.VerdictError, codes: []verdict.Code{verdict.CodeUnclaimedRaw}, exit: 1},
		{name: "native/answer-for-an-id-nobody-sent",
			sc:      func(t *testing.T, h harness) scenario { return fakeNative(h, "extra-answer") },
			verdict: verdict.VerdictFailed, codes: []verdict.Code{verdict.CodeUnclaimedNative}, exit: 1,
			check: func(t *testing.T, r verdict.Result, _ string) {
				assert.Equal(t, 1, r.Unclaimed.NativeAnswers)
				assert.Contains(t, r.Unclaimed.Examples, "00000000-0000-4000-8000-0000000000aa")
			}},
		{name: "native/answer-changed",
			sc:      func(t *testing.T, h harness) scenario { return fakeNative(h, "change-answer") },
			verdict: verdict.VerdictFailed, codes: []verdict.Code{verdict.CodeMismatched}, exit: 1,
			check: func(t *testing.T, r verdict.Result, dir string) {
				data, err := os.ReadFile(filepath.Join(dir, reports.MismatchesFile))
				require.NoError(t, err)
				assert.Equal(t, 1, bytes.Count(data, []byte("\n")))
				assert.Contains(t, string(data), `"confidence":0.5`, "the full native answer is kept")
				assert.Contains(t, string(data), `"http_answer":[{"index":0,"bounding_boxes"`, "the full HTTP answer is kept")
			}},
		{name: "native/answer-duplicated",
			sc:      func(t *testing.T, h harness) scenario { return fakeNative(h, "dup-answer") },
			verdict: verdict.VerdictFailed, codes: []verdict.Code{verdict.CodeDuplicate}, exit: 1},
		{name: "native/answer-dropped",
			sc:      func(t *testing.T, h harness) scenario { return fakeNative(h, "drop-answer") },
			verdict: verdict.VerdictFailed, codes: []verdict.Code{verdict.CodeMissingNative}, exit: 1},
		{name: "native/task-time-missing-from-the-declared-source",
			sc: func(t *testing.T, h harness) scenario {
				sc := fakeNative(h, "null-task-ms")
				fake := sc.families
				sc.families = func(d doc) {
					fake(d)
					family(d, "ref-detect")["task_time"] = "native"
				}
				return sc
			},
			verdict: verdict.VerdictFailed, codes: []verdict.Code{verdict.CodeLatencyIncomplete}, exit: 1,
			check: func(t *testing.T, r verdict.Result, _ string) {
				l := r.LatencyMS
				assert.Equal(t, 50, r.RequestsByPhase[verdict.PhaseMeasured].Matched, "every request matched")
				assert.Equal(t, "native", l.TaskSource)
				assert.Equal(t, 49, l.Task.Count)
				assert.Nil(t, l.Task.P50, "no Task figure over 49 beside HTTP's over 50")
				assert.NotEmpty(t, l.Task.MissingExample)
				assert.Equal(t, []verdict.Code{verdict.CodeLatencyIncomplete}, codesOf(r))
			}},
		{name: "correctness/bare-passed-true",
			sc:      func(t *testing.T, h harness) scenario { return fakeCheck(h, "bare") },
			verdict: verdict.VerdictFailed, codes: []verdict.Code{verdict.CodeCorrectnessIncomplete}, exit: 1},
		{name: "correctness/gate-without-outcome",
			sc:      func(t *testing.T, h harness) scenario { return fakeCheck(h, "no-outcome") },
			verdict: verdict.VerdictError, codes: []verdict.Code{verdict.CodeCorrectnessOutput}, exit: 1,
			check: func(t *testing.T, r verdict.Result, _ string) {
				assert.Contains(t, r.Reasons[0].Message, "gates[0].passed: is missing")
			}},
		{name: "contract/exploration-workload-1+12",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{inventory: func(d doc) {
					w := group(d, "detection")["workload"].(doc)
					w["warmup"], w["measured"] = 1, 12
				}}
			},
			verdict: verdict.VerdictFailed, codes: []verdict.Code{verdict.CodeExplorationWorkload}, exit: 1,
			check: func(t *testing.T, r verdict.Result, _ string) {
				assert.Equal(t, verdict.PurposeExploration, r.Workload.Purpose)
				assert.Equal(t, 12, r.RequestsByPhase[verdict.PhaseMeasured].Matched, "it ran, all matched, and still does not qualify")
				assert.Equal(t, []verdict.Code{verdict.CodeExplorationWorkload}, codesOf(r))
			}},
		{name: "contract/planned-profile-without-a-pin",
			sc: func(t *testing.T, h harness) scenario {
				return scenario{inventory: func(d doc) {
					for _, p := range group(d, "detection")["profiles"].([]any) {
						p.(doc)["status"] = "planned"
						delete(p.(doc)["bundle"].(doc), "sha256")
					}
				}}
			},
			verdict: verdict.VerdictFailed, codes: []verdict.Code{verdict.CodeBundleNotPinned}, exit: 1,
			check: func(t *testing.T, r verdict.Result, _ string) {
				assert.Equal(t, []verdict.Code{verdict.CodeBundleNotPinned}, codesOf(r))
			}},
		{name: "process/server-helper-started-with-setsid",
			// Issue 25, item 11: the server's argv starts a helper in a
			// session of its own; killing the group cannot reach it.
			sc: func(t *testing.T, h harness) scenario {
				return scenario{families: func(d doc) {
					f := family(d, "ref-detect")
					f["server"] = append([]any{"sh", "-c", `setsid sleep 617 & exec "$0" "$@"`}, f["server"].([]any)...)
				}}
			},
			verdict: verdict.VerdictError, codes: []verdict.Code{verdict.CodeSurvivor}, exit: 1,
			check: func(t *testing.T, r verdict.Result, _ string) {
				msg := reasonWith(t, r, verdict.CodeSurvivor).Message
				assert.Contains(t, msg, "(sleep 617; process group")
				assert.Contains(t, msg, "the server command's tree outlived it")
				matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
				for _, m := range matches {
					if data, err := os.ReadFile(m); err == nil && string(data) == "sleep\x00617\x00" {
						t.Errorf("%s: sleep 617 lives on", m)
					}
				}
			}},
		{name: "contract/aiperf-version-mismatch-allowed",
			sc: func(t *testing.T, h harness) scenario {
				sc := fakeAIPerf(h, "")
				sc.env = append(sc.env, "TRTMC_FAKE_AIPERF_VERSION=0.12.0")
				sc.args = []string{"--allow-aiperf-version-mismatch"}
				return sc
			},
			codes: []verdict.Code{verdict.CodeAIPerfVersion}, exit: 1},
	}
}

// TestNoGreenFromBadData runs each trust row through the real pipeline.
func TestNoGreenFromBadData(t *testing.T) {
	h := getHarness(t)
	for _, row := range trustRows() {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			o := h.run(t, row.sc(t, h), 3*time.Minute)
			assertNoOrphans(t, o)
			assertEvidenceSound(t, o.out, false)
			assertPublishable(t, o)
			r := o.result(t, "detection", "ref-detect-small")
			dir := filepath.Join(o.out, "detection", "ref-detect-small")
			t.Logf("exit %d, verdict %s, reasons %+v", o.code, r.Verdict, r.Reasons)
			assert.NotEqual(t, verdict.VerdictQualified, r.Verdict)
			if row.verdict != "" {
				assert.Equal(t, row.verdict, r.Verdict)
			}
			assert.Equal(t, row.exit, o.code, "exit status")
			for _, c := range row.codes {
				assert.Contains(t, codesOf(r), c)
			}
			for _, x := range r.Reasons {
				assert.Equal(t, verdict.ClassOf(x.Code), x.Class, "reason %s", x.Code)
				assert.NotEmpty(t, x.Message)
			}
			assertAccounted(t, r)
			if row.check != nil {
				row.check(t, r, dir)
			}
			// The stored row is what plain report and rejudge say too.
			for _, rejudge := range []bool{false, true} {
				// Judged by the run's own family configuration, as a
				// rejudge must be (the scenario may change a criterion).
				rep, code := h.report(t, o.out, rejudge, filepath.Join(o.config, "families.yaml"))
				assert.Equal(t, 1, code, "report (rejudge %v) exit status", rejudge)
				got := rep.row(t, "ref-detect-small")
				assert.NotEqual(t, verdict.VerdictQualified, got.Verdict, "report (rejudge %v)", rejudge)
				for _, c := range row.codes {
					if c != verdict.CodeCorrectnessOutput { // a stage's problem is kept, not re-derived
						assert.Contains(t, codesOf(got), c, "report (rejudge %v)", rejudge)
					}
				}
			}
		})
	}
}

// groupJSON is `report --format json`.
type groupJSON struct {
	Rows []struct {
		Profile string          `json:"profile"`
		Verdict string          `json:"verdict"`
		Result  *verdict.Result `json:"result"`
	} `json:"rows"`
}

func (g groupJSON) row(t *testing.T, id string) verdict.Result {
	t.Helper()
	for _, r := range g.Rows {
		if r.Profile == id {
			require.NotNil(t, r.Result, "row %s has a result", id)
			return *r.Result
		}
	}
	t.Fatalf("no row %s", id)
	return verdict.Result{}
}

// report runs bin/trtmc-qual report (--rejudge) over out's detection
// group; a rejudge judges by families ("": the shipped configuration).
func (h harness) report(t *testing.T, out string, rejudge bool, families string) (groupJSON, int) {
	t.Helper()
	args := []string{"report", "--from", out, "--group", "detection", "--format", "json"}
	if rejudge {
		args = append(args, "--rejudge")
	}
	if families != "" {
		args = append(args, "--families", families)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.qual, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	var g groupJSON
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &g), "stdout %q, stderr %q", stdout.String(), stderr.String())
	return g, code
}

// tamper is one change to a qualified row's stored evidence.
type tamper struct {
	name string
	edit func(t *testing.T, dir string)
	// codes the rejudged row must carry (evidence_changed always).
	codes []verdict.Code
	// msg is a word of the reasons (a file, line, field named).
	msg string
	// always is the code both report and rejudge must carry
	// (evidence_changed when empty).
	always verdict.Code
}

func editLines(t *testing.T, path string, fn func([]string) []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(fn(lines), "\n")+"\n"), 0o644))
}

func tampers() []tamper {
	return []tamper{
		{"records export: a line deleted", func(t *testing.T, dir string) {
			editLines(t, filepath.Join(dir, "aiperf", "profile_export.jsonl"), func(l []string) []string { return append(l[:20], l[21:]...) })
		}, []verdict.Code{verdict.CodeShortCount, verdict.CodeUnclaimedRaw, verdict.CodeUnclaimedServerRecords}, "profile_export.jsonl: changed", ""},
		{"native answer changed", func(t *testing.T, dir string) {
			editLines(t, filepath.Join(dir, "native_answers.jsonl"), func(l []string) []string {
				l[30] = strings.Replace(l[30], `"confidence":0.`, `"confidence":0.0`, 1)
				return l
			})
		}, []verdict.Code{verdict.CodeMismatched}, "native_answers.jsonl: changed", ""},
		{"server record deleted", func(t *testing.T, dir string) {
			editLines(t, filepath.Join(dir, "server_records.jsonl"), func(l []string) []string { return l[:len(l)-1] })
		}, []verdict.Code{verdict.CodeMissingServerRec}, "server_records.jsonl: changed", ""},
		{"dataset line deleted", func(t *testing.T, dir string) {
			editLines(t, filepath.Join(dir, "dataset.jsonl"), func(l []string) []string { return l[1:] })
		}, []verdict.Code{verdict.CodeUnknownConversation}, "dataset.jsonl: changed", ""},
		{"joined.jsonl deleted", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "joined.jsonl")))
		}, nil, "joined.jsonl: missing", ""},
		{"joined.jsonl truncated mid-line", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "joined.jsonl")
			st, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(p, st.Size()-30))
		}, nil, "joined.jsonl", ""},
		{"raw export truncated mid-line", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "aiperf", "profile_export_raw.jsonl")
			st, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(p, st.Size()-40))
		}, []verdict.Code{verdict.CodeEvidenceMalformed}, "profile_export_raw.jsonl:55: last line has no newline", ""},
		{"dataset deleted", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "dataset.jsonl")))
		}, []verdict.Code{verdict.CodeEvidenceMalformed}, "dataset.jsonl: no such file", ""},
		{"correctness gate value lowered", func(t *testing.T, dir string) {
			editLines(t, filepath.Join(dir, "correctness.json"), func(l []string) []string {
				s := strings.Join(l, "\n")
				i := strings.Index(s, `"value":`)
				require.GreaterOrEqual(t, i, 0)
				j := i + len(`"value":`)
				k := j + strings.IndexAny(s[j:], ",}")
				return []string{s[:j] + "0.01" + s[k:]}
			})
		}, []verdict.Code{verdict.CodeCorrectnessInconsist, verdict.CodeCorrectnessFailed}, "correctness.json: changed", ""},
		{"stored counts edited", func(t *testing.T, dir string) {
			editLines(t, filepath.Join(dir, "result.json"), func(l []string) []string {
				s := strings.Join(l, "\n")
				s = strings.Replace(s, `"matched": 50`, `"matched": 49`, 1)
				s = strings.Replace(s, `"mismatched": 0`, `"mismatched": 1`, 1)
				return []string{s}
			})
		}, nil, "result.json: changed", ""},
		{"manifest deleted", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "manifest.json")))
		}, nil, "manifest.json: missing", ""},
		{"AIPerf summary deleted", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "aiperf", "profile_export_aiperf.json")))
		}, []verdict.Code{verdict.CodeEvidenceMalformed}, "profile_export_aiperf.json", ""},
		{"a file added", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("looks fine to me\n"), 0o644))
		}, nil, "notes.txt: added", ""},
		// Issue 25, item 1, on a real run's evidence: the rejudge skipped a
		// directory without result.json and the loader trusted the file the
		// seal does not cover.
		{"native answers garbled, result.json renamed result.rejudged.json", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "native_answers.jsonl"), []byte("garbage\n"), 0o644))
			require.NoError(t, os.Rename(filepath.Join(dir, "result.json"), filepath.Join(dir, reports.RejudgedFile)))
		}, nil, "has no result.json", verdict.CodeResultMissing},
		{"a forged result.rejudged.json beside a changed native answer", func(t *testing.T, dir string) {
			data, err := os.ReadFile(filepath.Join(dir, "result.json"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, reports.RejudgedFile), data, 0o644))
			editLines(t, filepath.Join(dir, "native_answers.jsonl"), func(l []string) []string {
				l[30] = strings.Replace(l[30], `"confidence":0.`, `"confidence":0.0`, 1)
				return l
			})
		}, []verdict.Code{verdict.CodeMismatched}, "native_answers.jsonl: changed", ""},
		// More of issue 25's own hostile cases, on a real run's evidence.
		{"aiperf/ swapped for a link to an identical copy", func(t *testing.T, dir string) {
			cp := filepath.Join(t.TempDir(), "aiperf")
			require.NoError(t, os.CopyFS(cp, os.DirFS(filepath.Join(dir, "aiperf"))))
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "aiperf")))
			require.NoError(t, os.Symlink(cp, filepath.Join(dir, "aiperf")))
		}, nil, "aiperf: added", ""},
		{"correctness.json a link to an identical copy", func(t *testing.T, dir string) {
			cp := filepath.Join(t.TempDir(), "correctness.json")
			data, err := os.ReadFile(filepath.Join(dir, "correctness.json"))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(cp, data, 0o644))
			require.NoError(t, os.Remove(filepath.Join(dir, "correctness.json")))
			require.NoError(t, os.Symlink(cp, filepath.Join(dir, "correctness.json")))
		}, nil, "correctness.json: changed", ""},
		{"native_answers.jsonl a FIFO", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "native_answers.jsonl")))
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "native_answers.jsonl"), 0o644))
		}, []verdict.Code{verdict.CodeEvidenceMalformed}, "native_answers.jsonl", ""},
		{"the profile's directory a link to a good copy elsewhere", func(t *testing.T, dir string) {
			cp := filepath.Join(t.TempDir(), "copy")
			require.NoError(t, os.CopyFS(cp, os.DirFS(dir)))
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, os.Symlink(cp, dir))
		}, nil, "is a symbolic link, not an evidence directory", verdict.CodeEvidenceMalformed},
		// Item 18: records without their id are malformed, never a count.
		{"server records stripped of request_id", func(t *testing.T, dir string) {
			editLines(t, filepath.Join(dir, "server_records.jsonl"), func(l []string) []string {
				for i := range l {
					l[i] = regexp.MustCompile(`"request_id":"[^"]*",?`).ReplaceAllString(l[i], "")
				}
				return l
			})
		}, []verdict.Code{verdict.CodeEvidenceMalformed}, "server_records.jsonl:1: request_id: missing", ""},
	}
}

// TestTamperedEvidenceIsNeverGreen changes a qualified row's evidence one
// way at a time: plain report and report --rejudge both refuse it (exit 1,
// never 4), naming the cause; the untouched copy still qualifies.
func TestTamperedEvidenceIsNeverGreen(t *testing.T) {
	h := getHarness(t)
	o := h.run(t, scenario{}, 3*time.Minute)
	require.Equal(t, 0, o.code, "the untouched run qualifies")
	good := o.result(t, "detection", "ref-detect-small")
	require.Equal(t, verdict.VerdictQualified, good.Verdict)

	control := filepath.Join(t.TempDir(), "out")
	require.NoError(t, os.CopyFS(control, os.DirFS(o.out)))
	for _, rejudge := range []bool{false, true} {
		rep, code := h.report(t, control, rejudge, "")
		assert.Equal(t, 0, code, "untouched evidence, rejudge %v", rejudge)
		r := rep.row(t, "ref-detect-small")
		assert.Equal(t, verdict.VerdictQualified, r.Verdict, "%+v", r.Reasons)
		assert.Equal(t, good.RequestsByPhase, r.RequestsByPhase, "re-derived counts equal the run's")
		assert.Equal(t, good.LatencyMS, r.LatencyMS, "re-derived latency equals the run's")
	}

	for _, tc := range tampers() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out")
			require.NoError(t, os.CopyFS(out, os.DirFS(o.out)))
			dir := filepath.Join(out, "detection", "ref-detect-small")
			tc.edit(t, dir)
			for _, rejudge := range []bool{false, true} {
				rep, code := h.report(t, out, rejudge, "")
				assert.Equal(t, 1, code, "rejudge %v: exit 1, never 4", rejudge)
				r := rep.row(t, "ref-detect-small")
				assert.Equal(t, verdict.VerdictError, r.Verdict, "rejudge %v: %+v", rejudge, r.Reasons)
				codes := codesOf(r)
				always := tc.always
				if always == "" {
					always = verdict.CodeEvidenceChanged
				}
				assert.Contains(t, codes, always, "rejudge %v", rejudge)
				var msgs []string
				for _, x := range r.Reasons {
					msgs = append(msgs, x.Message)
				}
				if !rejudge {
					continue
				}
				if rejudge {
					data, err := os.ReadFile(filepath.Join(dir, reports.RejudgedFile))
					if err == nil && strings.Contains(string(data), `"verdict": "qualified"`) {
						assert.NotEqual(t, verdict.VerdictQualified, r.Verdict, "a qualified result.rejudged.json is never read back")
					}
				}
				for _, c := range tc.codes {
					assert.Contains(t, codes, c, "rejudge re-derives: %+v", r.Reasons)
				}
				assert.Contains(t, strings.Join(msgs, "\n"), tc.msg)
			}
			before, err := os.ReadFile(filepath.Join(dir, "result.json"))
			if err == nil {
				var r verdict.Result
				assert.NoError(t, json.Unmarshal(before, &r), "result.json is never rewritten")
			}
		})
	}
}

// TestReproduceCommandReproduces runs the recorded "reproduce" command of a
// row, pasted into a shell elsewhere: it carries every flag and setting
// that shaped the run (paths absolute, shell-quoted, the serve token taken
// from the caller's environment, never written), and reproduces the row.
func TestReproduceCommandReproduces(t *testing.T) {
	h := getHarness(t)
	out := filepath.Join(t.TempDir(), "out dir with 'quotes' and spaces")
	const token = "s3cret-token-for-reproduce"
	o := h.run(t, scenario{out: out, env: []string{"TRTMC_SERVE_TOKEN=" + token}}, 3*time.Minute)
	require.Equal(t, 0, o.code)
	r := o.result(t, "detection", "ref-detect-small")
	require.Equal(t, verdict.VerdictQualified, r.Verdict)
	cmd := r.Command
	t.Logf("reproduce: %s", cmd)
	for _, want := range []string{"--inventory " + filepath.Join(o.config, "inventory.yaml"),
		"--families " + filepath.Join(o.config, "families.yaml"), "--aiperf " + h.aiperf, "--aiperf-version 0.13.0",
		"--tokenizer " + h.tokenizer, "--bin-dir " + h.binDir, "--gpus cpu", "--only ref-detect-small",
		`TRTMC_SERVE_TOKEN="$TRTMC_SERVE_TOKEN"`, `'` + strings.ReplaceAll(out, `'`, `'\''`) + `'`} {
		assert.Contains(t, cmd, want)
	}
	assert.NotContains(t, cmd, token)

	// Paste it: a shell elsewhere, trtmc-qual on PATH.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", cmd)
	sh.Dir = t.TempDir()
	sh.Env = append(cleanEnv(), "PATH="+h.binDir+":"+os.Getenv("PATH"), "TRTMC_SERVE_TOKEN="+token)
	sh.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	combined, err := sh.CombinedOutput()
	require.NoError(t, err, "the reproduce command ran: %s", combined)
	again := o.result(t, "detection", "ref-detect-small")
	assert.Equal(t, verdict.VerdictQualified, again.Verdict)
	assert.Equal(t, r.RunKey, again.RunKey, "the same inputs")
	assert.Equal(t, cmd, again.Command, "the reproduced row reproduces itself")
	assert.NotEqual(t, r.StartedAt, again.StartedAt, "it really ran again")
}
