//go:build integration

package main

// The Slurm executor through a real Slurm: the single-host cluster of
// scripts/slurm-local.sh (slurmctld, two slurmd nodes with fake GPUs),
// which scripts/test.sh starts before and stops after the tests. Every
// task runs the real bin/trtmc-qual, the real AIPerf and the reference
// server on its node. Under CI=true a missing cluster is a failure.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual/slurm"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// requireSlurm returns once the local cluster answers; without one the
// test fails under CI=true and is skipped otherwise.
func requireSlurm(t *testing.T) {
	t.Helper()
	why := ""
	if os.Getenv("SLURM_CONF") == "" {
		why = "SLURM_CONF is not set"
	} else if out, err := exec.Command("scontrol", "ping").CombinedOutput(); err != nil || !strings.Contains(string(out), "UP") {
		why = fmt.Sprintf("scontrol ping: %v %s", err, out)
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no Slurm cluster (%s): scripts/test.sh starts one with scripts/slurm-local.sh; CI never skips this tier", why)
	}
	t.Skipf("no Slurm cluster (%s): run eval \"$(scripts/slurm-local.sh start)\" first", why)
}

var (
	vlmOnce sync.Once
	vlmErr  error
)

// slurmSetup edits the per-test configuration.
type slurmSetup struct {
	// block is added to the config file's slurm: block (indented).
	block     string
	inventory func(doc)
	families  func(doc)
}

// slurmConfig writes a trtmc-qual.yaml for both reference groups, inputs
// prepared, with a slurm block, and returns its directory.
func slurmConfig(t *testing.T, h harness, setup slurmSetup) string {
	t.Helper()
	vlmOnce.Do(func() {
		for _, argv := range [][]string{
			{"make-bundle", "--family", "ref-vlm", "--precision", "fp32", "--out", filepath.Join(h.ref, "bundles", "ref-vlm-fp32.bundle")},
			{"make-bundle", "--family", "ref-vlm", "--precision", "fp16", "--out", filepath.Join(h.ref, "bundles", "ref-vlm-fp16.bundle")},
			{"corpus", "--family", "ref-vlm", "--out", filepath.Join(h.ref, "corpora", "ref-vlm"), "--count", "24"},
		} {
			if out, err := exec.Command(h.refserver, argv...).CombinedOutput(); err != nil {
				vlmErr = fmt.Errorf("trtmc-refserver %s: %v\n%s", strings.Join(argv, " "), err, out)
				return
			}
		}
	})
	require.NoError(t, vlmErr)
	dir := t.TempDir()
	inv := loadYAML(t, filepath.Join(h.root, "inventory", "reference.yaml"))
	for name, corpus := range map[string]string{"vlm": "ref-vlm", "detection": "ref-detect"} {
		g := group(inv, name)
		g["workload"].(doc)["dataset"].(doc)["corpus"] = filepath.Join(h.ref, "corpora", corpus)
		for _, p := range g["profiles"].([]any) {
			b := p.(doc)["bundle"].(doc)
			b["path"] = filepath.Join(h.ref, "bundles", filepath.Base(b["path"].(string)))
		}
	}
	if setup.inventory != nil {
		setup.inventory(inv)
	}
	writeYAML(t, filepath.Join(dir, "inventory.yaml"), inv)
	fams := loadYAML(t, filepath.Join(h.root, "families", "families.yaml"))
	if setup.families != nil {
		setup.families(fams)
	}
	writeYAML(t, filepath.Join(dir, "families.yaml"), fams)
	cfg := fmt.Sprintf("inventory: [inventory.yaml]\nfamilies: families.yaml\naiperf: %s\ntokenizer: %s\nbin_dir: %s\nslurm:\n  poll_interval: 1s\n%s",
		h.aiperf, h.tokenizer, h.binDir, setup.block)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trtmc-qual.yaml"), []byte(cfg), 0o644))
	return dir
}

// startQual starts bin/trtmc-qual in dir (whose trtmc-qual.yaml configures
// it) in a session of its own, with the reliability marker set.
func startQual(t *testing.T, h harness, dir string, env []string, args ...string) (*running, string) {
	t.Helper()
	marker := fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "_"), os.Getpid(), time.Now().UnixNano())
	cmd := exec.Command(h.qual, args...)
	cmd.Dir = dir
	cmd.Env = append(append(cleanEnv(), markerEnv+"="+marker), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	p := &running{cmd: cmd, lines: make(chan string, 4096), done: make(chan struct{})}
	cmd.Stdout = &p.stdout
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return p, marker
}

// finish drains stderr and waits (at most timeout) for trtmc-qual.
func finish(t *testing.T, p *running, out, marker string, timeout time.Duration) outcome {
	t.Helper()
	timer := time.AfterFunc(timeout, func() { _ = p.cmd.Process.Kill() })
	defer timer.Stop()
	for range p.lines {
	}
	err := p.cmd.Wait()
	o := outcome{stdout: p.stdout.String(), stderr: p.stderrString(), out: out, marker: marker, session: p.cmd.Process.Pid}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		o.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			o.signal = ws.Signal().String()
		}
	default:
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("trtmc-qual exit %d %s\nstdout:\n%s\nstderr:\n%s", o.code, o.signal, o.stdout, o.stderr)
		}
	})
	return o
}

func runQual(t *testing.T, h harness, dir, out string, env []string, timeout time.Duration, args ...string) outcome {
	t.Helper()
	p, marker := startQual(t, h, dir, env, args...)
	return finish(t, p, out, marker, timeout)
}

// taskRE finds a task's id in a progress line: "slurm 31_0 ref-vlm-small: RUNNING on node1".
func taskID(t *testing.T, line, profile string) string {
	t.Helper()
	m := regexp.MustCompile(`slurm (\d+_\d+) ` + regexp.QuoteMeta(profile) + `:`).FindStringSubmatch(line)
	require.NotNil(t, m, "no task id in %q", line)
	return m[1]
}

// squeueEmpty asserts Slurm has nothing of these array jobs queued or running.
func squeueEmpty(t *testing.T, jobIDs ...string) {
	t.Helper()
	out, err := exec.Command("squeue", "-h", "-o", "%i %T", "-j", strings.Join(jobIDs, ",")).CombinedOutput()
	if err != nil && strings.Contains(string(out), "Invalid job id") {
		return
	}
	require.NoError(t, err, "%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)), "still queued or running")
}

func recordedJobs(t *testing.T, out, group string) []string {
	t.Helper()
	rec, err := slurm.ReadRecord(out, group)
	require.NoError(t, err)
	require.NotNil(t, rec)
	var ids []string
	for _, a := range rec.Arrays {
		ids = append(ids, a.JobID)
	}
	return ids
}

// The reference groups through Slurm give the rows a local run gives, each
// measured in its own array task on GPUs no concurrent task shares.
func TestSlurmReferenceGroupsMatchLocal(t *testing.T) {
	requireSlurm(t)
	h := getHarness(t)
	dir := slurmConfig(t, h, slurmSetup{})
	local, viaSlurm := filepath.Join(t.TempDir(), "local"), filepath.Join(t.TempDir(), "slurm")
	groups := []string{"vlm", "detection"}
	outcomes := make([]outcome, 2*len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Add(2)
		go func() {
			defer wg.Done()
			outcomes[2*i] = runQual(t, h, dir, local, nil, 5*time.Minute, "run", "--group", g, "--out", local, "--gpus", "cpu:2", "-o", "tsv")
		}()
		go func() {
			defer wg.Done()
			outcomes[2*i+1] = runQual(t, h, dir, viaSlurm, nil, 5*time.Minute, "run", "--group", g, "--out", viaSlurm, "--executor", "slurm", "-o", "tsv")
		}()
	}
	wg.Wait()
	for i, o := range outcomes {
		require.Equal(t, 0, o.code, "run %d: stderr:\n%s", i, o.stderr)
	}
	var slurmRows []verdict.Result
	for i, g := range groups {
		lo, so := outcomes[2*i], outcomes[2*i+1]
		assert.NotEmpty(t, lo.stdout)
		assert.NotEmpty(t, so.stdout, "the Slurm driver prints the group table too")
		assert.Contains(t, so.stderr, "submitted Slurm array job")
		lr, err := reports.Load([]string{local}, g)
		require.NoError(t, err)
		sr, err := reports.Load([]string{viaSlurm}, g)
		require.NoError(t, err)
		assert.Equal(t, lr.Coverage, sr.Coverage)
		require.Len(t, sr.Rows, len(lr.Rows))
		for k := range lr.Rows {
			l, s := lr.Rows[k].Result, sr.Rows[k].Result
			require.NotNil(t, s, sr.Rows[k].Profile)
			assert.Equal(t, l.Verdict, s.Verdict, s.Profile)
			if s.Verdict == verdict.VerdictExcluded {
				assert.Nil(t, s.Provenance.Slurm, "an excluded profile is never submitted")
				continue
			}
			assert.Equal(t, verdict.VerdictQualified, s.Verdict, "%s: %+v", s.Profile, s.Reasons)
			assert.Equal(t, l.RunKey, s.RunKey, "%s: same inputs, same run key", s.Profile)
			assert.Equal(t, l.Requests, s.Requests, s.Profile)
			assert.Equal(t, l.RequestsByPhase, s.RequestsByPhase, s.Profile)
			assert.Equal(t, l.Correctness, s.Correctness, s.Profile)
			assert.Equal(t, l.Provenance.BundleSHA256, s.Provenance.BundleSHA256)
			assert.Equal(t, l.Provenance.DatasetSHA256, s.Provenance.DatasetSHA256)
			assert.Nil(t, l.Provenance.Slurm)
			require.NotNil(t, s.Provenance.Slurm, s.Profile)
			assert.Regexp(t, `^\d+_\d+$`, s.Provenance.Slurm.JobID)
			assert.Contains(t, []string{"node1", "node2"}, s.Provenance.Slurm.Node)
			assert.NotEmpty(t, s.Provenance.Slurm.GPUs)
			slurmRows = append(slurmRows, *s)
		}
		assert.FileExists(t, filepath.Join(viaSlurm, g, "results.md"))
		squeueEmpty(t, recordedJobs(t, viaSlurm, g)...)
	}
	assertEvidenceSound(t, viaSlurm, false)

	// Concurrent tasks on one node never share a GPU.
	overlapping := 0
	for i := range slurmRows {
		for j := i + 1; j < len(slurmRows); j++ {
			a, b := slurmRows[i], slurmRows[j]
			if a.Provenance.Slurm.Node != b.Provenance.Slurm.Node || !a.StartedAt.Before(b.EndedAt) || !b.StartedAt.Before(a.EndedAt) {
				continue
			}
			overlapping++
			ga, gb := strings.Split(a.Provenance.Slurm.GPUs, ","), strings.Split(b.Provenance.Slurm.GPUs, ",")
			for _, x := range ga {
				assert.NotContains(t, gb, x, "%s (%s) and %s (%s) ran at once on %s with GPU %s", a.Profile, a.Provenance.Slurm.JobID,
					b.Profile, b.Provenance.Slurm.JobID, a.Provenance.Slurm.Node, x)
			}
		}
	}
	assert.Positive(t, overlapping, "no two tasks ran at once on one node: the GPU check proved nothing")
}

// A task killed with scancel becomes an error row naming its job and
// state; the other task's row stands.
func TestSlurmScancelledTaskIsAnErrorRow(t *testing.T) {
	requireSlurm(t)
	h := getHarness(t)
	dir := slurmConfig(t, h, slurmSetup{})
	out := filepath.Join(t.TempDir(), "out")
	p, marker := startQual(t, h, dir, nil, "run", "--group", "detection", "--out", out, "--executor", "slurm", "-o", "tsv")
	id := taskID(t, p.waitLine(t, "ref-detect-small: RUNNING on", 2*time.Minute), "ref-detect-small")
	// Let the task's pipeline get going before killing it.
	p.waitLine(t, "ref-detect-small-fp16: RUNNING on", time.Minute)
	cmd := exec.Command("scancel", id)
	outb, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", outb)
	o := finish(t, p, out, marker, 4*time.Minute)
	assert.Equal(t, int(exitFailed), o.code)

	r := o.result(t, "detection", "ref-detect-small")
	assert.Equal(t, verdict.VerdictError, r.Verdict)
	reason := reasonWith(t, r, slurm.CodeTaskEnded)
	assert.Equal(t, slurm.StageSlurm, reason.Stage)
	assert.Contains(t, reason.Message, "Slurm job "+id+" ended CANCELLED")
	require.NotNil(t, r.Provenance.Slurm)
	assert.Equal(t, "CANCELLED", r.Provenance.Slurm.State)
	assert.Equal(t, verdict.VerdictQualified, o.result(t, "detection", "ref-detect-small-fp16").Verdict)
	assert.Contains(t, o.stdout, "error")
	squeueEmpty(t, recordedJobs(t, out, "detection")...)
	assertNoOrphans(t, o)
	assertEvidenceSound(t, out, false)
}

// Ctrl-C on the driver cancels every task: nothing stays queued or
// running, the running task's row is interrupted and the queued one's
// not-run, exit 130.
func TestSlurmDriverCtrlCCancelsTheJob(t *testing.T) {
	requireSlurm(t)
	h := getHarness(t)
	dir := slurmConfig(t, h, slurmSetup{block: "  max_parallel: 1\n"})
	out := filepath.Join(t.TempDir(), "out")
	p, marker := startQual(t, h, dir, nil, "run", "--group", "vlm", "--out", out, "--executor", "slurm", "-o", "tsv")
	p.waitLine(t, "ref-vlm-small: RUNNING on", 2*time.Minute)
	p.signal(t, syscall.SIGINT)
	o := finish(t, p, out, marker, 4*time.Minute)
	assert.Equal(t, int(exitInterrupted), o.code)
	assert.Contains(t, o.stderr, "interrupted: cancelling 2 task(s)")

	squeueEmpty(t, recordedJobs(t, out, "vlm")...)
	running := o.result(t, "vlm", "ref-vlm-small")
	assert.Equal(t, verdict.VerdictInterrupted, running.Verdict)
	assert.Contains(t, reasonWith(t, running, slurm.CodeInterrupted).Message, "cancelled Slurm job")
	queued := o.result(t, "vlm", "ref-vlm-small-fp16")
	assert.Equal(t, verdict.VerdictNotRun, queued.Verdict)
	assert.Contains(t, reasonWith(t, queued, slurm.CodeNotStarted).Message, "never started")
	rep, err := reports.Load([]string{out}, "vlm")
	require.NoError(t, err)
	assert.False(t, rep.Coverage.OK)
	assertNoOrphans(t, o)
	assertEvidenceSound(t, out, false)
}

// A driver killed with -9 leaves its tasks running; --resume adopts the
// live one, resubmits only the profile left without a finished row, and
// every row qualifies.
func TestSlurmResumeAfterKilledDriver(t *testing.T) {
	requireSlurm(t)
	h := getHarness(t)
	// The server starts slowly, so the first task is still running when the
	// second driver looks.
	dir := slurmConfig(t, h, slurmSetup{block: "  max_parallel: 1\n",
		families: func(d doc) { setFamilyEnv(d, "ref-detect", "TRTMC_REFSERVER_FAULT", "startup-delay=10") }})
	out := filepath.Join(t.TempDir(), "out")
	p, marker := startQual(t, h, dir, nil, "run", "--group", "detection", "--out", out, "--executor", "slurm", "-o", "tsv")
	line := p.waitLine(t, "ref-detect-small: RUNNING on", 2*time.Minute)
	first := taskID(t, line, "ref-detect-small")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	_ = finish(t, p, out, marker, time.Minute)
	// The queued task is lost too (cancelled before it started).
	arrayID, _, _ := strings.Cut(first, "_")
	outb, err := exec.Command("scancel", arrayID+"_1").CombinedOutput()
	require.NoError(t, err, "%s", outb)

	// Without --resume a second run refuses to start over the live task.
	o := runQual(t, h, dir, out, nil, time.Minute, "run", "--group", "detection", "--out", out, "--executor", "slurm")
	assert.Equal(t, int(exitUsage), o.code)
	assert.Contains(t, o.stderr, "still has 1 task(s) queued or running ("+first+")")

	o = runQual(t, h, dir, out, nil, 4*time.Minute, "run", "--group", "detection", "--out", out, "--executor", "slurm", "--resume", "-o", "tsv")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, "resume: ref-detect-small: adopting Slurm task "+first)
	rec, err := slurm.ReadRecord(out, "detection")
	require.NoError(t, err)
	require.Len(t, rec.Tasks, 2)
	assert.True(t, rec.Tasks[0].Adopted)
	assert.Equal(t, first, rec.Tasks[0].ID())
	require.Len(t, rec.Arrays, 1, "only the lost profile was submitted again")
	assert.Equal(t, []string{"ref-detect-small-fp16"}, rec.Arrays[0].Profiles)
	for _, id := range []string{"ref-detect-small", "ref-detect-small-fp16"} {
		r := o.result(t, "detection", id)
		assert.Equal(t, verdict.VerdictQualified, r.Verdict, "%s: %+v", id, r.Reasons)
	}
	assert.Equal(t, first, o.result(t, "detection", "ref-detect-small").Provenance.Slurm.JobID)
	squeueEmpty(t, arrayID, rec.Arrays[0].JobID)
	assertNoOrphans(t, o)
	assertEvidenceSound(t, out, false)
}

// A cluster that rejects the job is a setup error with Slurm's own words,
// and nothing is left queued.
func TestSlurmRejectedSubmission(t *testing.T) {
	requireSlurm(t)
	h := getHarness(t)
	for _, c := range []struct {
		name  string
		setup slurmSetup
		want  string
	}{
		{"bad partition", slurmSetup{block: "  partition: no-such-partition\n"}, "Invalid partition name specified"},
		{"more GPUs than any node has", slurmSetup{inventory: func(d doc) {
			group(d, "detection")["profiles"].([]any)[0].(doc)["parallelism"] = doc{"tp": 8}
		}}, "Requested node configuration is not available"},
		{"no such feature", slurmSetup{block: "  constraints: {cpu: gb300}\n"}, "Invalid feature specification"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := slurmConfig(t, h, c.setup)
			out := filepath.Join(t.TempDir(), "out")
			before, _ := exec.Command("squeue", "-h", "-o", "%i").Output()
			o := runQual(t, h, dir, out, nil, time.Minute, "run", "--group", "detection", "--out", out, "--executor", "slurm")
			assert.Equal(t, int(exitSetup), o.code)
			assert.Contains(t, o.stderr, "Slurm rejected the submission of group detection")
			assert.Contains(t, o.stderr, c.want)
			after, _ := exec.Command("squeue", "-h", "-o", "%i").Output()
			assert.Equal(t, sortedLines(before), sortedLines(after), "nothing new queued")
		})
	}
}

// --detach prints the job id and returns; status --wait collects the rows
// and writes the tables a driver would have.
func TestSlurmDetachThenStatus(t *testing.T) {
	requireSlurm(t)
	h := getHarness(t)
	dir := slurmConfig(t, h, slurmSetup{})
	out := filepath.Join(t.TempDir(), "out")
	o := runQual(t, h, dir, out, nil, time.Minute, "run", "--group", "detection", "--out", out, "--executor", "slurm", "--detach")
	require.Equal(t, 0, o.code, o.stderr)
	ids := strings.Fields(o.stdout)
	require.Len(t, ids, 1, "the job id on stdout: %q", o.stdout)
	assert.Regexp(t, `^\d+$`, ids[0])
	assert.NoFileExists(t, filepath.Join(out, "detection", "results.md"))

	o = runQual(t, h, dir, out, nil, 4*time.Minute, "status", "--out", out, "--wait")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, ids[0]+"_0")
	assert.Regexp(t, `detection\s+ref-detect-small\s+\d+_0\s+COMPLETED\s+node\d\s+qualified`, o.stdout)
	assert.FileExists(t, filepath.Join(out, "detection", "results.md"))
	o = runQual(t, h, dir, out, nil, time.Minute, "report", "--from", out, "--group", "detection", "-o", "tsv")
	assert.Equal(t, 0, o.code, o.stderr)
	assertEvidenceSound(t, out, false)
}

func sortedLines(b []byte) []string {
	l := strings.Fields(string(b))
	sort.Strings(l)
	return l
}
