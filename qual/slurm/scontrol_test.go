package slurm

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// The fixtures are real `scontrol show job -o 23` output of Slurm 22.05
// (scripts/slurm-local.sh) for an array of 7 throttled to 3: task 0 exited
// 3, task 1 was killed with -9, task 2 was cancelled on its own, the rest
// with the array, 5 and 6 while still pending.
func TestParseShowJobRealOutput(t *testing.T) {
	st, err := ParseShowJob(readFile(t, filepath.Join("testdata", "scontrol-running.txt")), "23")
	require.NoError(t, err)
	require.Len(t, st, 7, "the pending range 4-6%%3 is expanded")
	byIndex := map[int]TaskState{}
	for _, s := range st {
		byIndex[s.Index] = s
	}
	assert.Equal(t, "FAILED", byIndex[0].State)
	assert.Equal(t, "NonZeroExitCode", byIndex[0].Reason)
	assert.Equal(t, "3:0", byIndex[0].ExitCode)
	assert.Equal(t, "node1", byIndex[0].Node)
	assert.Equal(t, "JobLaunchFailure", byIndex[1].Reason)
	assert.Equal(t, "0:9", byIndex[1].ExitCode)
	assert.Equal(t, "RUNNING", byIndex[2].State)
	assert.False(t, byIndex[2].Terminal())
	for _, i := range []int{4, 5, 6} {
		assert.Equal(t, "PENDING", byIndex[i].State)
		assert.Equal(t, "Resources", byIndex[i].Reason)
		assert.False(t, byIndex[i].Started())
	}
	assert.Equal(t, "23_4", byIndex[4].ID())

	st, err = ParseShowJob(readFile(t, filepath.Join("testdata", "scontrol-ended.txt")), "23")
	require.NoError(t, err)
	require.Len(t, st, 7)
	for _, s := range st {
		assert.True(t, s.Terminal(), "task %d: %s", s.Index, s.State)
	}
	assert.False(t, st[5].Started(), "cancelled while pending: never started")
	assert.Equal(t, "CANCELLED (Resources, exit code 0:0)", st[5].Describe())
	assert.True(t, st[4].Started())
	assert.Equal(t, "CANCELLED (exit code 0:15) on node1", st[4].Describe())
}

func TestParseShowJob(t *testing.T) {
	line := "JobId=41 ArrayJobId=40 ArrayTaskId=1 JobName=a b JobState=COMPLETING Reason=None ExitCode=0:0 " +
		"NodeList=(null) BatchHost=node2 Command=/path with spaces/submit.sh WorkDir=/w d AllocNode:Sid=h:1 CPUs/Task=1 Restarts=2"
	st, err := ParseShowJob(line+"\nJobId=7 ArrayJobId=7 ArrayTaskId=0 JobState=RUNNING\n", "40")
	require.NoError(t, err)
	require.Len(t, st, 1, "other arrays' records are ignored")
	assert.Equal(t, TaskState{ArrayJobID: "40", Index: 1, State: "COMPLETING", Reason: "None", ExitCode: "0:0",
		Node: "node2", Restarts: 2}, st[0])
	assert.False(t, st[0].Terminal(), "COMPLETING is still active")

	f := parseRecord(line)
	assert.Equal(t, "/path with spaces/submit.sh", f["Command"])
	assert.Equal(t, "a b", f["JobName"])
	assert.Equal(t, "1", f["CPUs/Task"])

	for _, bad := range []string{"ArrayJobId=40 JobState=RUNNING", "JobId=1 ArrayJobId=40 ArrayTaskId=x JobState=RUNNING",
		"JobId=1 ArrayJobId=40 ArrayTaskId=3-1 JobState=RUNNING", "JobId=1 ArrayJobId=40 ArrayTaskId=1"} {
		_, err := ParseShowJob(bad, "40")
		assert.Error(t, err, bad)
	}
}

func TestParseIndexes(t *testing.T) {
	for in, want := range map[string][]int{
		"3": {3}, "0-3": {0, 1, 2, 3}, "1-9:4": {1, 5, 9}, "3,5,7-8": {3, 5, 7, 8}, "4-6%3": {4, 5, 6}, "2%1": {2},
	} {
		got, err := parseIndexes(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "a", "-1", "1-", "1:0", "0-9999999"} {
		_, err := parseIndexes(bad)
		assert.Error(t, err, bad)
	}
}

type fakeProbe struct{ gpus []verdict.GPU }

func (p fakeProbe) List(context.Context) ([]verdict.GPU, error)     { return p.gpus, nil }
func (p fakeProbe) Apps(context.Context) ([]qual.ComputeApp, error) { return nil, nil }

func TestGPUSelection(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	gpus := func(idx ...string) fakeProbe {
		var p fakeProbe
		for _, i := range idx {
			p.gpus = append(p.gpus, verdict.GPU{Index: i, UUID: "GPU-" + i})
		}
		return p
	}
	ctx := context.Background()
	_, _, err := GPUSelection(ctx, gpus(), env())
	assert.ErrorContains(t, err, "not inside a Slurm job")

	sel, note, err := GPUSelection(ctx, gpus("0", "1", "2", "3"), env("SLURM_JOB_ID", "5", "SLURM_JOB_GPUS", "2,3"))
	require.NoError(t, err)
	assert.Equal(t, "2,3", sel, "unconstrained node: the allocated indexes")
	assert.Empty(t, note)

	sel, _, err = GPUSelection(ctx, gpus("0", "1"), env("SLURM_JOB_ID", "5", "SLURM_JOB_GPUS", "6,7"))
	require.NoError(t, err)
	assert.Equal(t, "0,1", sel, "constrained node: what nvidia-smi lists is the allocation")

	sel, note, err = GPUSelection(ctx, gpus(), env("SLURM_JOB_ID", "5", "SLURM_JOB_GPUS", "1"))
	require.NoError(t, err)
	assert.Equal(t, "cpu", sel)
	assert.Contains(t, note, "lists none")

	sel, note, err = GPUSelection(ctx, gpus("0"), env("SLURM_JOB_ID", "5"))
	require.NoError(t, err)
	assert.Equal(t, "cpu", sel)
	assert.Contains(t, note, "no GPU")
}

func TestTaskFromEnv(t *testing.T) {
	assert.Nil(t, TaskFromEnv(func(string) string { return "" }))
	env := map[string]string{"SLURM_JOB_ID": "31", "SLURM_ARRAY_JOB_ID": "30", "SLURM_ARRAY_TASK_ID": "1",
		"SLURMD_NODENAME": "node2", "SLURM_JOB_GPUS": "2,3", "CUDA_VISIBLE_DEVICES": "2,3", "SLURM_JOB_PARTITION": "gpu",
		"SLURM_CLUSTER_NAME": "c"}
	got := TaskFromEnv(func(k string) string { return env[k] })
	assert.Equal(t, &verdict.SlurmTask{JobID: "30_1", ArrayJobID: "30", ArrayTaskID: "1", Cluster: "c", Partition: "gpu",
		Node: "node2", GPUs: "2,3", CUDAVisibleDevices: "2,3"}, got)
}

// The batch script, run by bash as Slurm runs it, execs the task command
// with the profile of its array index, every argument intact.
func TestBatchScriptRunsTheProfileOfItsIndex(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	echo := filepath.Join(dir, "echo args")
	require.NoError(t, os.WriteFile(echo, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '[%s]' \"$a\"; done\n"), 0o755))
	script := filepath.Join(dir, "s.sh")
	require.NoError(t, os.WriteFile(script, []byte(batchScript("g", "n0nce", []string{"p0", "p1"}, []string{echo, "--config", "it's a.yaml", "run"})), 0o644))
	for i, want := range []string{"p0", "p1"} {
		cmd := exec.Command(bash, script)
		cmd.Env = []string{"SLURM_ARRAY_TASK_ID=" + []string{"0", "1"}[i], "SLURM_ARRAY_JOB_ID=9", "PATH=/usr/bin:/bin"}
		out, err := cmd.Output()
		require.NoError(t, err)
		assert.Equal(t, "[--config][it's a.yaml][run][--only]["+want+"]", strings.TrimSpace(string(out)))
	}
	cmd := exec.Command(bash, script)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	assert.Error(t, err, "outside an array task the script refuses to run")
	assert.Contains(t, string(out), "not a Slurm array task")
}
