//go:build integration

package qual_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// gpuHost puts the fake nvidia-smi (a host of n H200s whose compute
// processes are live processes, FAKE_GPU_HOLD) first on PATH and makes the
// detection family a GPU family: its server "holds" 700 MiB on every GPU
// of its CUDA_VISIBLE_DEVICES. It returns options over the detection group
// with the given extra profiles (copies of ref-detect-small with another tp
// or hardware scope) and the pool of every GPU.
func gpuHost(t *testing.T, e e2eEnv, fixture string, out string, profiles ...*inventory.Profile) qual.Options {
	t.Helper()
	bin, err := filepath.Abs("testdata/bin")
	require.NoError(t, err)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_NVIDIA_SMI_FIXTURE", fixture)
	t.Setenv("FAKE_NVIDIA_SMI_SESSION", t.Name()+strconv.Itoa(os.Getpid()))
	opts := e.options(t, "detection", out, "")
	fam := opts.Families.Families["ref-detect"]
	fam.NeedsGPU = true
	fam.Env = map[string]string{"FAKE_GPU_HOLD": "700:trtmc-refserver serve|sleep 120"}
	g := opts.Inventory.Groups["detection"]
	base := g.Profiles[0]
	require.Equal(t, "ref-detect-small", base.ID)
	base.Hardware = []string{"h200"}
	g.Profiles = append([]*inventory.Profile{base}, profiles...)
	for _, p := range profiles {
		p.Checkpoint, p.Revision, p.Family, p.Task, p.Precision = base.Checkpoint, base.Revision, base.Family, base.Task, base.Precision
		p.Kind, p.VariantOf, p.Bundle, p.Status, p.FieldLines = inventory.KindVariant, base.ID, base.Bundle, base.Status, map[string]int{}
	}
	probe := qual.NvidiaSMI{Runner: proc.OS{}}
	pool, err := qual.NewPool(context.Background(), probe, "")
	require.NoError(t, err)
	opts.Hardware.Pool, opts.Hardware.Probe = pool, probe
	return opts
}

func variant(id string, tp int, hw ...string) *inventory.Profile {
	if len(hw) == 0 {
		hw = []string{"h200"}
	}
	return &inventory.Profile{ID: id, Parallelism: inventory.Parallelism{TP: tp}, Hardware: hw}
}

func overlap(a, b verdict.Result) bool {
	return a.StartedAt.Before(b.EndedAt) && b.StartedAt.Before(a.EndedAt)
}

// TestGPUSlotsOnFourGPUs: on a (fake) 4-GPU host, tp=1, tp=2 and tp=4
// profiles qualify on exactly as many GPUs as they need, concurrent rows on
// disjoint GPUs, each server holding memory on every GPU of its slot; a
// tp=8 profile and one scoped to gb300 are not run, never started.
func TestGPUSlotsOnFourGPUs(t *testing.T) {
	e := setup(t)
	out := t.TempDir()
	opts := gpuHost(t, e, "h200x4", out, variant("tp2", 2), variant("tp4", 4), variant("tp1b", 1), variant("tp8", 8), variant("gb", 1, "gb300"))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	res, err := qual.Run(ctx, opts)
	require.NoError(t, err)
	rows := map[string]verdict.Result{}
	for _, r := range res.Results {
		rows[r.Profile] = readResult(t, out, "detection", r.Profile)
	}
	for id, n := range map[string]int{"ref-detect-small": 1, "tp2": 2, "tp4": 4, "tp1b": 1} {
		r := rows[id]
		require.Equal(t, verdict.VerdictQualified, r.Verdict, "%s: %+v", id, r.Reasons)
		require.Len(t, r.Provenance.GPUs, n, id)
		assert.Equal(t, "h200", r.Provenance.HardwareScope, id)
		assert.Equal(t, "13.0", r.Provenance.GPUs[0].CUDAVersion, id)
		require.Len(t, r.GPUChecks, 3, id)
		for _, c := range r.GPUChecks {
			assert.True(t, c.Passed, "%s %s: %s", id, c.Name, c.Problem)
		}
		serving := r.GPUChecks[1]
		assert.Equal(t, verdict.GPUCheckServing, serving.Name)
		for _, g := range serving.GPUs {
			require.NotEmpty(t, g.Processes, "%s: the server holds memory on %s", id, g.UUID)
			assert.True(t, g.Processes[0].Ours)
			assert.Equal(t, 700, *g.Processes[0].UsedMiB)
		}
	}
	ids := []string{"ref-detect-small", "tp2", "tp4", "tp1b"}
	overlaps := 0
	for i, a := range ids {
		for _, b := range ids[i+1:] {
			if !overlap(rows[a], rows[b]) {
				continue
			}
			overlaps++
			for _, ga := range rows[a].Provenance.GPUs {
				for _, gb := range rows[b].Provenance.GPUs {
					assert.NotEqual(t, ga.UUID, gb.UUID, "%s and %s ran at the same time on %s", a, b, ga.UUID)
				}
			}
		}
	}
	assert.Positive(t, overlaps, "some rows ran concurrently")
	for id, code := range map[string]verdict.Code{"tp8": qual.CodeInsufficientGPUs, "gb": qual.CodeHardwareMismatch} {
		r := rows[id]
		assert.Equal(t, verdict.VerdictNotRun, r.Verdict, id)
		require.NotEmpty(t, r.Reasons, id)
		assert.Equal(t, code, r.Reasons[0].Code, "%s: the scheduler's reason first", id)
		assert.Empty(t, r.Provenance.Commands, "%s was never started", id)
		assert.NoFileExists(t, filepath.Join(out, "detection", id, "server.log"))
	}
	assert.Contains(t, rows["tp8"].Reasons[0].Message, "needs 8 GPUs (tp8) but the run has 4 GPUs; not started on fewer")
}

// TestGPUHardwareMismatchAllowed: --allow-hardware-mismatch runs the gb300
// profile on H200s, records it and keeps the row from qualifying.
func TestGPUHardwareMismatchAllowed(t *testing.T) {
	e := setup(t)
	out := t.TempDir()
	opts := gpuHost(t, e, "h200x2", out)
	opts.Inventory.Groups["detection"].Profiles[0].Hardware = []string{"gb300"}
	opts.Only = []string{"ref-detect-small"}
	opts.Hardware.AllowMismatch = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_, err := qual.Run(ctx, opts)
	require.NoError(t, err)
	r := readResult(t, out, "detection", "ref-detect-small")
	assert.Equal(t, verdict.VerdictFailed, r.Verdict, "measured fine, but on the wrong hardware")
	assert.Contains(t, r.Provenance.HardwareMismatch, "hardware [gb300] but the run's GPUs are NVIDIA H200 (h200)")
	var codes []verdict.Code
	for _, x := range r.Reasons {
		codes = append(codes, x.Code)
	}
	assert.Equal(t, []verdict.Code{qual.CodeHardwareMismatchAllowed}, codes)
	assert.Equal(t, 55, r.Requests.Matched, "everything else was clean")
}

// TestGPUBusyAndLeak: a foreign process on the only GPU makes the row a
// gpu_busy error before anything is timed; a server that leaves a process
// holding GPU memory behind is a broken row naming the pid.
func TestGPUBusyAndLeak(t *testing.T) {
	e := setup(t)
	t.Run("busy", func(t *testing.T) {
		out := t.TempDir()
		opts := gpuHost(t, e, "h200x1", out)
		opts.Only = []string{"ref-detect-small"}
		holder := startForeignHolder(t, opts.Hardware.Pool.GPUs[0].UUID)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		_, err := qual.Run(ctx, opts)
		require.NoError(t, err)
		r := readResult(t, out, "detection", "ref-detect-small")
		assert.Equal(t, verdict.VerdictError, r.Verdict)
		require.NotEmpty(t, r.Reasons)
		assert.Equal(t, verdict.CodeGPUBusy, r.Reasons[0].Code)
		assert.Contains(t, r.Reasons[0].Message, "gpu busy before timing")
		assert.Contains(t, r.Reasons[0].Message, "pid "+strconv.Itoa(holder))
		assert.NoDirExists(t, filepath.Join(out, "detection", "ref-detect-small", "aiperf"), "nothing was timed")
		assert.False(t, r.GPUChecks[0].Passed)
	})
	t.Run("leaked worker swept", func(t *testing.T) {
		// A worker that escapes the server's group with setsid is found by
		// proc's sweep when the server stops and killed (issue 25): the row
		// breaks there, and nothing is left on the GPU.
		out := t.TempDir()
		opts := gpuHost(t, e, "h200x1", out)
		opts.Only = []string{"ref-detect-small"}
		opts.Hardware.ReleaseWait = 2 * time.Second
		fam := opts.Families.Families["ref-detect"]
		leaky, err := filepath.Abs("testdata/bin/leaky-server")
		require.NoError(t, err)
		fam.Server = append([]string{leaky}, fam.Server...)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		_, err = qual.Run(ctx, opts)
		require.NoError(t, err)
		r := readResult(t, out, "detection", "ref-detect-small")
		assert.Equal(t, verdict.VerdictError, r.Verdict)
		var codes []verdict.Code
		for _, x := range r.Reasons {
			codes = append(codes, x.Code)
		}
		assert.Contains(t, codes, verdict.CodeSurvivor)
		assert.NotContains(t, codes, verdict.CodeGPULeak, "the sweep killed it before the release check")
	})
	t.Run("leak", func(t *testing.T) {
		out := t.TempDir()
		opts := gpuHost(t, e, "h200x1", out)
		opts.Only = []string{"ref-detect-small"}
		opts.Hardware.ReleaseWait = 2 * time.Second
		fam := opts.Families.Families["ref-detect"]
		// A worker the sweep cannot see (see leaky-server-hidden): the
		// GPU-release check is the next line of defence.
		leaky, err := filepath.Abs("testdata/bin/leaky-server-hidden")
		require.NoError(t, err)
		fam.Server = append([]string{leaky}, fam.Server...)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		_, err = qual.Run(ctx, opts)
		require.NoError(t, err)
		r := readResult(t, out, "detection", "ref-detect-small")
		var leak *verdict.Reason
		for i := range r.Reasons {
			if r.Reasons[i].Code == "gpu_leak" {
				leak = &r.Reasons[i]
			}
		}
		require.NotNil(t, leak, "reasons: %+v", r.Reasons)
		m := regexp.MustCompile(`pid (\d+) sleep \(a process of this run\), 700 MiB`).FindStringSubmatch(leak.Message)
		require.NotNil(t, m, leak.Message)
		pid, _ := strconv.Atoi(m[1])
		_ = syscall.Kill(pid, syscall.SIGKILL)
		assert.Equal(t, verdict.VerdictError, r.Verdict, "a leak is a broken row, never green")
		assert.Equal(t, "gpu-release", leak.Stage)
	})
}

// startForeignHolder starts a process the fake nvidia-smi shows on a GPU,
// not belonging to any run; it is killed at cleanup.
func startForeignHolder(t *testing.T, uuid string) int {
	t.Helper()
	p, err := os.StartProcess("/bin/sleep", []string{"sleep", "300"}, &os.ProcAttr{
		Env: append(os.Environ(), "FAKE_GPU_HOLD=1862", "CUDA_VISIBLE_DEVICES="+uuid)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Kill(); _, _ = p.Wait() })
	return p.Pid
}

// TestGPUFamilyOnCPUOnlyHost: a family that needs a GPU is never started
// on a CPU-only pool: a setup error naming the family (exit 3 at the CLI).
func TestGPUFamilyOnCPUOnlyHost(t *testing.T) {
	e := setup(t)
	out := t.TempDir()
	opts := e.options(t, "detection", out, "")
	opts.Families.Families["ref-detect"].NeedsGPU = true
	opts.Hardware.Pool = &qual.Pool{CPUSlots: 2, Selection: "cpu:2"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := qual.Run(ctx, opts)
	require.NoError(t, err)
	for _, r := range res.Results {
		if r.Verdict == verdict.VerdictExcluded {
			continue
		}
		assert.Equal(t, verdict.VerdictError, r.Verdict, "%s: a setup error", r.Profile)
		require.NotEmpty(t, r.Reasons)
		assert.Equal(t, qual.CodeGPURequired, r.Reasons[0].Code)
		assert.Contains(t, r.Reasons[0].Message, "family ref-detect needs a GPU but this run has no GPU (2 CPU slots)")
	}
	_ = families.DefaultRegistry
}
