package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/scripts/benchtools/synth"
)

// No green row, third pass (issue 25): hostile changes to a good sealed
// row's evidence — derived files, seals, links, FIFOs, baselines — through
// the verbs users run. Each case breaks the input on purpose; neither
// `report` nor `report --rejudge` may show the row green, and both exit 1
// (never 0, never 4). docs/reliability.md lists them ("No green row, third
// pass").

// goodRow writes a sealed synthetic row of 5 + 50 requests that qualifies
// under root/vlm/<profile>, with HTTP and Task p50 figures p50 ms.
func goodRow(t *testing.T, root, profile string, p50 float64) string {
	t.Helper()
	dir := filepath.Join(root, "vlm", profile)
	exp, err := synth.Write(dir, synth.Config{Requests: 55, Seed: 7, NoFaults: true, ImageMin: 16, ImageMax: 32})
	require.NoError(t, err)
	require.NoError(t, synth.Seal(dir, "vlm", profile, exp))
	setP50(t, dir, p50)
	require.NoError(t, evidence.Seal(dir, map[string]any{"harness_version": "synth"}))
	return dir
}

// timedRow is goodRow with a joined.jsonl of 5 warmup and 50 measured
// matched requests whose Task times spread evenly over ±20 % of p50 (HTTP
// 1 ms more), sealed: the per-request times --baseline compares.
func timedRow(t *testing.T, root, profile string, p50 float64) string {
	t.Helper()
	dir := goodRow(t, root, profile, p50)
	var b bytes.Buffer
	for i := range 55 {
		phase, task := verdict.PhaseWarmup, p50
		if i >= 5 {
			phase, task = verdict.PhaseMeasured, p50*(0.8+0.4*float64(i-5)/49)
		}
		http := task + 1
		line, err := json.Marshal(verdict.JoinedLine{RequestID: fmt.Sprintf("req-%04d", i+1), EntryID: "e", Phase: phase,
			HTTPMS: &http, TaskMS: &task, Status: verdict.JoinMatched, StartNS: int64(i) * 20e6})
		require.NoError(t, err)
		b.Write(append(line, '\n'))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, reports.JoinedFile), b.Bytes(), 0o644))
	require.NoError(t, evidence.Seal(dir, map[string]any{"harness_version": "synth"}))
	return dir
}

// setP50 edits result.json's HTTP and Task p50 (and leaves the seal alone).
func setP50(t *testing.T, dir string, p50 float64) {
	t.Helper()
	path := filepath.Join(dir, reports.ResultFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var r verdict.Result
	require.NoError(t, json.Unmarshal(data, &r))
	v, p95 := p50, p50*2
	r.LatencyMS.Set = "measured_matched"
	r.LatencyMS.HTTP = verdict.Percentiles{P50: &v, P95: &p95, Count: 50}
	r.LatencyMS.Task = verdict.Percentiles{P50: &v, P95: &p95, Count: 50}
	require.NoError(t, fileio.WriteJSON(path, &r))
}

func editFile(t *testing.T, path string, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.Contains(data, []byte(old)), "%s holds %q", path, old)
	require.NoError(t, os.WriteFile(path, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644))
}

// garbleNative changes one native answer of a row.
func garbleNative(t *testing.T, dir string) {
	t.Helper()
	editFile(t, filepath.Join(dir, "native_answers.jsonl"), `"confidence":0.`, `"confidence":1.5`)
}

type hostileCase struct {
	name string
	// edit breaks the row root/vlm/p (dir) on purpose.
	edit func(t *testing.T, root, dir string)
	// codes the row must carry, in report and in report --rejudge.
	codes []verdict.Code
}

func hostileCases() []hostileCase {
	return []hostileCase{
		{"issue 25 #1: native answers garbled, result.json renamed result.rejudged.json", func(t *testing.T, root, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "native_answers.jsonl"), []byte("garbage\n"), 0o644))
			require.NoError(t, os.Rename(filepath.Join(dir, reports.ResultFile), filepath.Join(dir, reports.RejudgedFile)))
		}, []verdict.Code{verdict.CodeResultMissing}},
		{"a forged result.rejudged.json (qualified) beside a changed native answer", func(t *testing.T, root, dir string) {
			data, err := os.ReadFile(filepath.Join(dir, reports.ResultFile))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, reports.RejudgedFile), data, 0o644))
			garbleNative(t, dir)
		}, []verdict.Code{verdict.CodeEvidenceChanged}},
		{"result.rejudged.json a link to /dev/zero, a native answer changed", func(t *testing.T, root, dir string) {
			require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, reports.RejudgedFile)))
			garbleNative(t, dir)
		}, []verdict.Code{verdict.CodeEvidenceChanged}},
		{"result.json a link to another profile's good result.json", func(t *testing.T, root, dir string) {
			other := goodRow(t, root+"-other", "p", 5)
			require.NoError(t, os.Remove(filepath.Join(dir, reports.ResultFile)))
			require.NoError(t, os.Symlink(filepath.Join(other, reports.ResultFile), filepath.Join(dir, reports.ResultFile)))
			editFile(t, filepath.Join(other, reports.ResultFile), `"checkpoint": "synth/p"`, `"checkpoint": "synth/q"`)
		}, []verdict.Code{verdict.CodeEvidenceChanged}},
		{"the row copied from another group", func(t *testing.T, root, dir string) {
			editFile(t, filepath.Join(dir, reports.ResultFile), `"group": "vlm"`, `"group": "detection"`)
			require.NoError(t, evidence.Seal(dir, nil))
		}, []verdict.Code{verdict.CodeEvidenceMalformed}},
		{"aiperf/ swapped for a link to a copy of itself", func(t *testing.T, root, dir string) {
			cp := filepath.Join(t.TempDir(), "aiperf")
			require.NoError(t, os.CopyFS(cp, os.DirFS(filepath.Join(dir, "aiperf"))))
			require.NoError(t, os.RemoveAll(filepath.Join(dir, "aiperf")))
			require.NoError(t, os.Symlink(cp, filepath.Join(dir, "aiperf")))
		}, []verdict.Code{verdict.CodeEvidenceChanged}},
		{"manifest.json a FIFO", func(t *testing.T, root, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, evidence.ManifestFile)))
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, evidence.ManifestFile), 0o644))
		}, []verdict.Code{verdict.CodeEvidenceChanged}},
		{"native_answers.jsonl a FIFO", func(t *testing.T, root, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "native_answers.jsonl")))
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "native_answers.jsonl"), 0o644))
		}, []verdict.Code{verdict.CodeEvidenceChanged}},
		{"a stage's problem in result.json under a stored verdict of qualified, resealed", func(t *testing.T, root, dir string) {
			// The verdict and reasons stored are never read: Judge derives
			// them from the facts, and a stage's problem is one a rejudge
			// cannot re-derive, so it keeps it.
			editFile(t, filepath.Join(dir, reports.ResultFile), `"problems": []`,
				`"problems": [{"stage": "aiperf", "code": "server_died", "message": "the server exited during the AIPerf run"}]`)
			require.NoError(t, evidence.Seal(dir, nil))
		}, []verdict.Code{verdict.CodeServerDied}},
	}
}

// TestNoGreenRowThirdPass runs every hostile case through report and
// report --rejudge.
func TestNoGreenRowThirdPass(t *testing.T) {
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "out")
			dir := goodRow(t, root, "p", 5)
			tc.edit(t, root, dir)
			for _, args := range [][]string{{}, {"--rejudge"}} {
				code, out, errOut := runCLI(t, nil, append([]string{"report", "--from", root, "--group", "vlm", "--format", "json"}, args...)...)
				assert.Equal(t, exitFailed, code, "%v: exit 1, never 0 or 4; stderr:\n%s", args, errOut)
				var rep reports.GroupReport
				require.NoError(t, json.Unmarshal([]byte(out), &rep), "%v: %s", args, errOut)
				require.Len(t, rep.Rows, 1)
				r := rep.Rows[0].Result
				require.NotNil(t, r)
				assert.NotEqual(t, verdict.VerdictQualified, r.Verdict, "%v", args)
				var codes []verdict.Code
				for _, x := range r.Reasons {
					codes = append(codes, x.Code)
				}
				for _, c := range tc.codes {
					assert.Contains(t, codes, c, "%v: %+v", args, r.Reasons)
				}
			}
		})
	}
}

// A clean synthetic row qualifies through both: the cases above fail for
// what they change, not for the fixture.
func TestNoGreenRowThirdPassControl(t *testing.T) {
	root := filepath.Join(t.TempDir(), "out")
	goodRow(t, root, "p", 5)
	for _, args := range [][]string{{}, {"--rejudge"}} {
		code, _, errOut := runCLI(t, nil, append([]string{"report", "--from", root, "--group", "vlm", "--format", "json"}, args...)...)
		assert.Equal(t, exitOK, code, "%v: %s", args, errOut)
	}
}

// --baseline compares only rows whose evidence holds its seal (issue 25,
// item 10): a baseline p50 edited down would print "+20000% ▲", one edited
// up would hide a real regression; a current row changed likewise.
func TestBaselineNeverComparesChangedEvidence(t *testing.T) {
	for _, c := range []struct {
		name       string
		edit       func(t *testing.T, oldDir, curDir string)
		wantReason string
	}{
		{"baseline p50 edited to 0.01 ms", func(t *testing.T, oldDir, _ string) { setP50(t, oldDir, 0.01) }, "the baseline row's evidence does not hold its seal"},
		{"baseline p50 edited up to hide a regression", func(t *testing.T, oldDir, _ string) { setP50(t, oldDir, 500) }, "the baseline row's evidence does not hold its seal"},
		{"baseline row without result.json", func(t *testing.T, oldDir, _ string) {
			require.NoError(t, os.Remove(filepath.Join(oldDir, reports.ResultFile)))
		}, "the baseline row's evidence does not hold its seal (result_missing"},
		{"current row's p50 edited", func(t *testing.T, _, curDir string) { setP50(t, curDir, 1) }, "the current row's evidence does not hold its seal"},
	} {
		t.Run(c.name, func(t *testing.T) {
			oldRoot, curRoot := filepath.Join(t.TempDir(), "old"), filepath.Join(t.TempDir(), "cur")
			oldDir, curDir := timedRow(t, oldRoot, "p", 10), timedRow(t, curRoot, "p", 20)
			// Untouched, the pair is compared: +100 % is a regression.
			code, out, _ := runCLI(t, nil, "report", "--from", curRoot, "--baseline", oldRoot, "--group", "vlm", "--format", "md")
			require.Equal(t, exitOK, code)
			require.Contains(t, out, "20.00 (+100% ▲)")

			c.edit(t, oldDir, curDir)
			_, out, errOut := runCLI(t, nil, "report", "--from", curRoot, "--baseline", oldRoot, "--group", "vlm", "--format", "json")
			var rep reports.GroupReport
			require.NoError(t, json.Unmarshal([]byte(out), &rep), errOut)
			require.NotNil(t, rep.Baseline)
			assert.Equal(t, 0, rep.Baseline.Compared)
			assert.Equal(t, 0, rep.Baseline.Regressions)
			assert.Equal(t, 1, rep.Baseline.NotCompared)
			require.NotNil(t, rep.Rows[0].Baseline)
			assert.Equal(t, reports.BaselineNotCompared, rep.Rows[0].Baseline.Decision)
			assert.Nil(t, rep.Rows[0].Baseline.HTTPP50)
			assert.Nil(t, rep.Rows[0].Baseline.TaskP50)
			assert.Contains(t, strings.Join(rep.Notes, "\n"), "baseline: p not compared: "+c.wantReason)
			_, md, _ := runCLI(t, nil, "report", "--from", curRoot, "--baseline", oldRoot, "--group", "vlm", "--format", "md")
			assert.NotContains(t, md, "% ▲)", "no regression mark")
			assert.Contains(t, md, "0 rows compared — 0 regressed, 0 improved, 0 no change, 0 inconclusive; 1 not compared")
			assert.Contains(t, md, "- **p** — not compared: "+c.wantReason)
		})
	}
}

// --baseline compares only like with like: an fp16 row against an fp32
// baseline of the same profile id, however much slower, is not comparable,
// and the report names the fields with both values.
func TestBaselineNotComparableCLI(t *testing.T) {
	oldRoot, curRoot := filepath.Join(t.TempDir(), "old"), filepath.Join(t.TempDir(), "cur")
	timedRow(t, oldRoot, "p", 10)
	curDir := timedRow(t, curRoot, "p", 30)
	path := filepath.Join(curDir, reports.ResultFile)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var r verdict.Result
	require.NoError(t, json.Unmarshal(data, &r))
	r.Precision, r.Provenance.BundleSHA256 = "fp16", strings.Repeat("cd", 32)
	require.NoError(t, fileio.WriteJSON(path, &r))
	require.NoError(t, evidence.Seal(curDir, map[string]any{"harness_version": "synth"}))

	_, out, errOut := runCLI(t, nil, "report", "--from", curRoot, "--baseline", oldRoot, "--group", "vlm", "--format", "md")
	assert.NotContains(t, out, "% ▲)", errOut)
	assert.Contains(t, out, "0 rows compared — 0 regressed, 0 improved, 0 no change, 0 inconclusive; 1 not comparable")
	assert.Contains(t, out, `- **p** — not comparable: bundle: "`+strings.Repeat("ab", 32)+`" in the baseline, "`+strings.Repeat("cd", 32)+`" now; precision: "fp32" in the baseline, "fp16" now`)
	_, out, _ = runCLI(t, nil, "report", "--from", curRoot, "--baseline", oldRoot, "--group", "vlm", "--format", "json")
	var rep reports.GroupReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.NotNil(t, rep.Rows[0].Baseline)
	assert.Equal(t, reports.BaselineNotComparable, rep.Rows[0].Baseline.Decision)
	assert.Equal(t, []reports.Difference{
		{Field: "bundle", Baseline: strings.Repeat("ab", 32), Current: strings.Repeat("cd", 32)},
		{Field: "precision", Baseline: "fp32", Current: "fp16"},
	}, rep.Rows[0].Baseline.NotComparable)
	assert.Equal(t, 1, rep.Baseline.NotComparable)
}

// A row whose evidence does not hold its seal shows no figure (they come
// from files that changed): every measurement cell is missing.
func TestChangedEvidenceShowsNoFigure(t *testing.T) {
	root := filepath.Join(t.TempDir(), "out")
	dir := goodRow(t, root, "p", 5)
	setP50(t, dir, 0.5)
	code, out, _ := runCLI(t, nil, "report", "--from", root, "--group", "vlm", "--format", "md")
	assert.Equal(t, exitFailed, code)
	assert.NotContains(t, out, "0.50 / 1.00", "the changed figure is not shown")
	assert.Contains(t, out, "evidence_changed")
}
