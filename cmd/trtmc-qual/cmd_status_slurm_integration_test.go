//go:build integration

package main

// No green row through a real Slurm (issue 25, items 2, 3 and 16): the
// local cluster of scripts/slurm-local.sh, the real bin/trtmc-qual in
// every task.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual/slurm"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/evidence"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

func TestSlurmNoGreenRowFromBadEvidence(t *testing.T) {
	requireSlurm(t)
	h := getHarness(t)
	dir := slurmConfig(t, h, slurmSetup{})

	// Item 2: a detached submission qualifies; its task's evidence is then
	// changed. status, like report, says error (exit 1), never qualified.
	out := filepath.Join(t.TempDir(), "out")
	o := runQual(t, h, dir, out, nil, time.Minute, "run", "--group", "detection", "--only", "ref-detect-small",
		"--out", out, "--executor", "slurm", "--detach")
	require.Equal(t, 0, o.code, o.stderr)
	o = runQual(t, h, dir, out, nil, 4*time.Minute, "status", "--out", out, "--wait")
	require.Equal(t, 0, o.code, o.stderr)
	require.Regexp(t, `ref-detect-small\s+\d+_0\s+COMPLETED\s+node\d\s+qualified`, o.stdout)
	row := filepath.Join(out, "detection", "ref-detect-small")
	pristine := filepath.Join(t.TempDir(), "pristine")
	require.NoError(t, os.CopyFS(pristine, os.DirFS(row)))
	require.NoError(t, os.Remove(filepath.Join(row, "native_answers.jsonl")))
	require.NoError(t, os.Remove(filepath.Join(row, "joined.jsonl")))
	require.NoError(t, os.Truncate(filepath.Join(row, "aiperf", "profile_export.jsonl"), 100))
	o = runQual(t, h, dir, out, nil, time.Minute, "status", "--out", out)
	assert.Equal(t, int(exitFailed), o.code, o.stderr)
	assert.Regexp(t, `ref-detect-small\s+\d+_0\s+COMPLETED\s+node\d\s+error`, o.stdout)
	assert.Contains(t, reasonWith(t, o.result(t, "detection", "ref-detect-small"), slurm.CodeTaskEnded).Message,
		"left no row that can be trusted (evidence_changed")
	o = runQual(t, h, dir, out, nil, time.Minute, "report", "--from", out, "--group", "detection", "-o", "tsv")
	assert.Equal(t, int(exitFailed), o.code, "report agrees with status")

	// Item 3: a task whose job id repeats an earlier submission's (another
	// cluster on the same root, a reset slurmctld) fails before writing
	// anything. The earlier submission's row of that very job id is there;
	// it is not this task's, so the row is an error and exit 1.
	fail := filepath.Join(t.TempDir(), "trtmc-qual-that-fails")
	require.NoError(t, os.WriteFile(fail, []byte("#!/bin/sh\nsleep 4\nexit 1\n"), 0o755))
	dir2 := slurmConfig(t, h, slurmSetup{block: "  trtmc_qual: " + fail + "\n"})
	out2 := filepath.Join(t.TempDir(), "out")
	p, marker := startQual(t, h, dir2, nil, "run", "--group", "detection", "--only", "ref-detect-small", "--out", out2, "--executor", "slurm", "-o", "tsv")
	line := p.waitLine(t, "submitted Slurm array job", time.Minute)
	job := regexp.MustCompile(`array job (\d+)`).FindStringSubmatch(line)[1]
	planted := filepath.Join(out2, "detection", "ref-detect-small")
	require.NoError(t, os.CopyFS(planted, os.DirFS(pristine)))
	data, err := os.ReadFile(filepath.Join(planted, reports.ResultFile))
	require.NoError(t, err)
	var r verdict.Result
	require.NoError(t, json.Unmarshal(data, &r))
	require.NotNil(t, r.Provenance.Slurm)
	require.NotEmpty(t, r.Provenance.Slurm.Submission)
	r.Provenance.Slurm.JobID, r.Provenance.Slurm.ArrayJobID = job+"_0", job
	require.NoError(t, fileio.WriteJSON(filepath.Join(planted, reports.ResultFile), &r))
	require.NoError(t, evidence.Seal(planted, map[string]any{"planted": true}))
	o = finish(t, p, out2, marker, 3*time.Minute)
	assert.Equal(t, int(exitFailed), o.code, "never 0 from another submission's row")
	assert.NotContains(t, o.stderr, "-> qualified")
	got := o.result(t, "detection", "ref-detect-small")
	assert.Equal(t, verdict.VerdictError, got.Verdict)
	msg := reasonWith(t, got, slurm.CodeTaskEnded).Message
	assert.Contains(t, msg, fmt.Sprintf("Slurm job %s_0 ended FAILED (NonZeroExitCode, exit code 1:0)", job))
	assert.Contains(t, msg, "of another submission")
	aside, _ := filepath.Glob(filepath.Join(out2, "detection", "ref-detect-small.*"))
	assert.Len(t, aside, 1, "the foreign row is set aside")

	// Item 16: Ctrl-C while every task is still queued. The driver cancels
	// each task by id; Slurm then keeps the array as one record with
	// ArrayTaskId=4294967294. The rows say not-run, never slurm_task_lost.
	dir3 := slurmConfig(t, h, slurmSetup{block: "  sbatch_args: [\"--begin=now+3600\"]\n"})
	out3 := filepath.Join(t.TempDir(), "out")
	p, marker = startQual(t, h, dir3, nil, "run", "--group", "detection", "--out", out3, "--executor", "slurm", "-o", "tsv")
	p.waitLine(t, "ref-detect-small: PENDING", time.Minute)
	p.waitLine(t, "ref-detect-small-fp16: PENDING", time.Minute)
	p.signal(t, syscall.SIGINT)
	o = finish(t, p, out3, marker, 3*time.Minute)
	assert.Equal(t, int(exitInterrupted), o.code)
	for _, id := range []string{"ref-detect-small", "ref-detect-small-fp16"} {
		r := o.result(t, "detection", id)
		assert.Equal(t, verdict.VerdictNotRun, r.Verdict, "%s: %+v", id, r.Reasons)
		assert.Contains(t, reasonWith(t, r, slurm.CodeNotStarted).Message, "never started")
		assert.NotContains(t, codesOf(r), slurm.CodeLost)
	}
	squeueEmpty(t, recordedJobs(t, out3, "detection")...)
}
