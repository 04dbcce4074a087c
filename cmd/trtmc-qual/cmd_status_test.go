package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/qual/slurm"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict/verdicttest"
)

func TestSlurmConfigBlock(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "conf.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte(`executor: slurm
slurm:
  partition: gb300
  account: qual
  time_limit: 90m
  sbatch_args: ["--qos=high", "--mem=0"]
  constraints: {gb300: gb300, h200: h200-sxm}
  gpu_request: gpus-per-task
  cpus_per_task: 16
  max_parallel: 4
  poll_interval: 30s
  out: /lustre/qual/out
  trtmc_qual: bin/trtmc-qual
`), 0o644))
	resolve := func(env map[string]string, args ...string) *Config {
		t.Helper()
		io, _, _ := testIO()
		f := newFactory(io, nil)
		f.Getenv = func(k string) string { return env[k] }
		root := newRootCmd(f)
		root.SetArgs(append([]string{"version"}, args...))
		require.NoError(t, root.Execute())
		return f.Config
	}
	c := resolve(nil, "--config", cfgFile)
	assert.Equal(t, executorSlurm, c.Executor)
	assert.Equal(t, SlurmConfig{Config: slurm.Config{Partition: "gb300", Account: "qual", TimeLimit: 90 * time.Minute,
		SbatchArgs: []string{"--qos=high", "--mem=0"}, Constraints: map[string]string{"gb300": "gb300", "h200": "h200-sxm"},
		GPURequest: "gpus-per-task", CPUsPerTask: 16, MaxParallel: 4, PollInterval: 30 * time.Second},
		Out: "/lustre/qual/out", TrtmcQual: filepath.Join(dir, "bin", "trtmc-qual")}, c.Slurm)

	c = resolve(map[string]string{"TRTMC_QUAL_SLURM_PARTITION": "h200", "TRTMC_QUAL_SLURM_SBATCH_ARGS": "--qos=low"}, "--config", cfgFile)
	assert.Equal(t, "h200", c.Slurm.Partition, "environment beats the file")
	assert.Equal(t, []string{"--qos=low"}, c.Slurm.SbatchArgs)

	c = resolve(nil)
	assert.Equal(t, executorLocal, c.Executor)
	assert.Equal(t, 15*time.Second, c.Slurm.PollInterval)
	assert.Equal(t, "gres", c.Slurm.GPURequest)

	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("slurm:\n  partiton: x\n"), 0o644))
	code, _, errOut := runCLI(t, nil, "version", "--config", bad)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `unknown key "slurm.partiton"`)

	code, _, errOut = runCLI(t, map[string]string{"TRTMC_QUAL_EXECUTOR": "k8s"}, "version")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `TRTMC_QUAL_EXECUTOR "k8s": valid values are local, slurm`, "the variable it came from is named")
}

func TestRunDetachNeedsSlurm(t *testing.T) {
	code, _, errOut := runCLI(t, nil, "run", "--group", "vlm", "--detach")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--detach needs --executor slurm")

	code, _, errOut = runCLI(t, nil, "run", "--group", "vlm", "--executor", "slurm", "--gpus", "0")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--gpus does not apply to --executor slurm")

	code, _, errOut = runCLI(t, nil, "run", "--group", "vlm", "--executor", "pbs")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "valid values are local, slurm")
}

// A task runs exactly the driver's configuration: every path absolute,
// the local executor, the GPUs Slurm allocated.
func TestSlurmTaskCommandCarriesTheResolvedConfiguration(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	cfg := &Config{File: "conf.yaml", Inventory: []string{"a.yaml", "/abs/b.yaml"}, Families: "fam.yaml",
		AIPerf: ".venv/bin/aiperf", AIPerfVersion: "0.13.0", Tokenizer: "tok", BinDir: "bin", AllowMismatch: true,
		Slurm: SlurmConfig{TrtmcQual: "/shared/trtmc-qual", Config: slurm.Config{Partition: "p", PollInterval: 2 * time.Second}}}
	ex, err := slurmExecutor(&runOptions{Config: cfg, Group: "vlm", Out: "out", Host: "127.0.0.1"})
	require.NoError(t, err)
	abs := func(p string) string { return filepath.Join(wd, p) }
	assert.Equal(t, []string{"/shared/trtmc-qual", "--config", abs("conf.yaml"),
		"--inventory", abs("a.yaml"), "--inventory", "/abs/b.yaml", "--families", abs("fam.yaml"), "--aiperf", abs(".venv/bin/aiperf"),
		"--aiperf-version", "0.13.0", "--allow-aiperf-version-mismatch", "--tokenizer", abs("tok"), "--bin-dir", abs("bin"),
		"run", "--group", "vlm", "--out", abs("out"), "--executor", "local", "--gpus", "slurm", "--host", "127.0.0.1", "--format", "tsv"}, ex.Task)
	assert.Equal(t, "p", ex.Config.Partition)

	cfg.AIPerf = "aiperf"
	ex, err = slurmExecutor(&runOptions{Config: cfg, Group: "vlm", Out: "/o", Host: "127.0.0.1"})
	require.NoError(t, err)
	assert.Equal(t, "aiperf", ex.Task[slices.Index(ex.Task, "--aiperf")+1], "a bare name stays a PATH lookup on the node")

	cfg.Slurm.GPURequest = "all"
	_, err = slurmExecutor(&runOptions{Config: cfg, Group: "vlm", Out: "/o"})
	assert.ErrorContains(t, err, "slurm.gpu_request")
	assert.Equal(t, exitUsage, codeFor(err))
}

// scontrolRunner answers `scontrol show job -o ID` with fixed records.
type scontrolRunner struct{ records map[string]string }

func (r scontrolRunner) Run(_ context.Context, s proc.Spec) (proc.Result, error) {
	if filepath.Base(s.Argv[0]) != "scontrol" {
		return proc.Result{}, fmt.Errorf("unexpected %v", s.Argv)
	}
	out, ok := r.records[s.Argv[len(s.Argv)-1]]
	if !ok {
		fmt.Fprintln(s.Stderr, "slurm_load_jobs error: Invalid job id specified")
		return proc.Result{ExitCode: 1}, &proc.ExitError{Name: "scontrol", Result: proc.Result{ExitCode: 1}}
	}
	fmt.Fprint(s.Stdout, out)
	return proc.Result{Argv: s.Argv}, nil
}

func (scontrolRunner) Start(context.Context, proc.Spec) (proc.Process, error) {
	return nil, fmt.Errorf("not used")
}

func TestStatusVerb(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	code, _, errOut := runCLI(t, nil, "status", "--out", out)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "no Slurm submission recorded under "+out)

	// A detached submission of two tasks: 5_0 completed with its row,
	// 5_1 timed out without one.
	writeTestRecord(t, out)
	w := inventory.Workload{Warmup: 5, Measured: 50}
	ok := qual.BaseResult("vlm", &w, &inventory.Profile{ID: "a"})
	verdicttest.Qualified(&ok)
	ok.Provenance.Slurm = &verdict.SlurmTask{JobID: "5_0", Submission: testSubmission}
	require.NoError(t, qual.WriteRow(out, &ok, false, time.Now))
	c := " Comment=" + slurm.Comment(testSubmission)
	runner := scontrolRunner{records: map[string]string{"5": "JobId=6 ArrayJobId=5 ArrayTaskId=0 JobState=COMPLETED Reason=None ExitCode=0:0 NodeList=node1" + c + "\n" +
		"JobId=7 ArrayJobId=5 ArrayTaskId=1 JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15 NodeList=node2" + c + "\n"}}

	io, stdout, stderr := testIO()
	f := newFactory(io, nil)
	f.Getenv = func(string) string { return "" }
	f.Runner = runner
	root := newRootCmd(f)
	root.SetArgs([]string{"status", "--out", out, "-o", "json"})
	err := root.ExecuteContext(context.Background())
	assert.Equal(t, exitFailed, codeFor(err), "every task ended and one row is an error; stderr:\n%s", stderr)
	var rows []statusRow
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rows))
	assert.Equal(t, []statusRow{
		{Group: "vlm", Profile: "a", Task: "5_0", State: "COMPLETED", Reason: "None", ExitCode: "0:0", Node: "node1", Verdict: "qualified"},
		{Group: "vlm", Profile: "b", Task: "5_1", State: "TIMEOUT", Reason: "TimeLimit", ExitCode: "0:15", Node: "node2", Verdict: "error"},
	}, rows)
	assert.FileExists(t, filepath.Join(out, "vlm", "results.md"), "status writes the tables once every task ended")
	// What status printed and what it wrote (the settled row, the group's
	// tables) match their shipped schemas.
	set := loadSchemas(t)
	set.validate(t, "status", "status --format json", stdout.Bytes())
	_, per := validateEvidenceCount(t, set, out)
	assert.Equal(t, 2, per["result"], "both rows, the settled one included")
	assert.Equal(t, 1, per["group-report"])
	assert.Equal(t, 1, per["slurm-job"])
	b, err := qual.ReadRow(out, "vlm", "b")
	require.NoError(t, err)
	assert.Contains(t, b.Reasons[0].Message, "Slurm job 5_1 ended TIMEOUT (TimeLimit, exit code 0:15) on node2")
	assert.Equal(t, 50, b.RequestsByPhase["measured"].Expected, "the row carries the recorded workload")

	// Still running: a table, exit 0.
	require.NoError(t, os.RemoveAll(filepath.Join(out, "vlm", "b")))
	runner.records["5"] = strings.Replace(runner.records["5"], "JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15", "JobState=RUNNING Reason=None ExitCode=0:0", 1)
	code2, stdout2, stderr2 := runStatusWith(t, runner, "status", "--out", out, "--group", "vlm")
	assert.Equal(t, exitOK, code2, stderr2)
	assert.Contains(t, stdout2, "vlm    b        5_1         RUNNING    node2  -")
	assert.Contains(t, stderr2, "still queued or running")
}

func runStatusWith(t *testing.T, r proc.Runner, args ...string) (exitCode, string, string) {
	t.Helper()
	io, stdout, stderr := testIO()
	f := newFactory(io, nil)
	f.Getenv = func(string) string { return "" }
	f.Runner = r
	root := newRootCmd(f)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return codeFor(err), stdout.String(), stderr.String()
}

// testSubmission is the submission nonce of writeTestRecord's record; its
// jobs carry slurm.Comment(testSubmission).
const testSubmission = "00112233445566778899aabbccddeeff"

func writeTestRecord(t *testing.T, out string) {
	t.Helper()
	rec := slurm.Record{Schema: slurm.RecordSchema, Group: "vlm", Out: out, Workload: inventory.Workload{Warmup: 5, Measured: 50},
		Arrays:     []slurm.Array{{JobID: "5", Profiles: []string{"a", "b"}}},
		Submission: testSubmission,
		Tasks: []slurm.TaskRef{{Profile: "a", ArrayJobID: "5", Index: 0, Submission: testSubmission},
			{Profile: "b", ArrayJobID: "5", Index: 1, Submission: testSubmission}}}
	data, err := json.Marshal(rec)
	require.NoError(t, err)
	dir := filepath.Join(out, ".slurm", "vlm")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "job.json"), data, 0o644))
}

// TestStatusOptions: the flags and the slurm: block reach the options
// (runF), and the logic runs on options alone (no cobra): an evidence root
// without a submission is a usage error.
func TestStatusOptions(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "conf.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("slurm:\n  out: /lustre/out\n  poll_interval: 3s\n  commands_dir: /opt/slurm/bin\n"), 0o644))
	capture := func(args ...string) *statusOptions {
		t.Helper()
		io, _, _ := testIO()
		f := newFactory(io, nil)
		f.Getenv = func(string) string { return "" }
		root := newRootCmd(f)
		root.RemoveCommand(mustFind(t, root.Commands(), "status"))
		var got *statusOptions
		root.AddCommand(newStatusCmd(f, func(o *statusOptions) error { got = o; return nil }))
		require.Equal(t, exitOK, executeTree(context.Background(), f, root, append([]string{"status", "--config", cfgFile}, args...)))
		return got
	}
	got := capture("-g", "vlm,detection", "--wait", "-o", "json")
	assert.Equal(t, "/lustre/out", got.Out, "slurm.out when --out is not given")
	assert.Equal(t, []string{"vlm", "detection"}, got.Groups)
	assert.True(t, got.Wait)
	assert.Equal(t, "json", got.Format)
	assert.Equal(t, "/opt/slurm/bin", got.CommandsDir)
	assert.Equal(t, 3*time.Second, got.Poll)
	assert.Equal(t, fileio.Abs("here"), capture("--out", "here").Out, "--out beats slurm.out")

	err := (&statusOptions{Format: "md"}).Validate()
	assert.Equal(t, exitUsage, codeFor(err))
	io, _, _ := testIO()
	err = runStatus(context.Background(), &statusOptions{IO: io, Out: dir, Format: "table"})
	assert.Equal(t, exitUsage, codeFor(err))
	assert.ErrorContains(t, err, "no Slurm submission recorded under "+dir)
}
