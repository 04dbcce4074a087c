package qual

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// hygieneRun is a checkpoint on a tp=2 slot of a fake 4-GPU H200 host
// (the fake nvidia-smi on PATH: compute processes are live processes).
func hygieneRun(t *testing.T, needsGPU bool) *checkpointRun {
	t.Helper()
	bin, err := filepath.Abs("testdata/bin")
	require.NoError(t, err)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_NVIDIA_SMI_FIXTURE", "h200x4")
	t.Setenv("FAKE_NVIDIA_SMI_SESSION", t.Name()+strconv.Itoa(os.Getpid()))
	probe := NvidiaSMI{Runner: proc.OS{}}
	gpus, err := probe.List(context.Background())
	require.NoError(t, err)
	gr := &groupRun{opts: Options{Hardware: HardwareOptions{Probe: probe, ReleaseWait: 500 * time.Millisecond}, Now: time.Now, Log: &discard{}}}
	return &checkpointRun{gr: gr, family: &families.Family{Name: "fam", NeedsGPU: needsGPU},
		slot: Slot{Name: "gpu1+2", GPUs: gpus[1:3]}, marker: "g/p/" + strconv.Itoa(os.Getpid()) + "/1"}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func code(err error) string {
	var se *stageError
	if errors.As(err, &se) {
		return string(se.code)
	}
	return ""
}

func TestCheckIdle(t *testing.T) {
	cr := hygieneRun(t, true)
	ctx := context.Background()
	// A process on a GPU outside the slot is none of this slot's business.
	startHolder(t, 800, "GPU-f0ff8a38-722f-2d4b-03e4-7dd00ddaa68f")
	require.NoError(t, cr.checkIdle(ctx))
	require.Len(t, cr.res.Provenance.GPUs, 2, "provenance: the slot's two GPUs")
	assert.Equal(t, "GPU-3c1b9e52-0a7d-4f11-9b2e-5d6c7e8f9a01", cr.res.Provenance.GPUs[0].UUID)
	assert.Equal(t, "13.0", cr.res.Provenance.GPUs[0].CUDAVersion)
	require.Len(t, cr.res.GPUChecks, 1)
	assert.True(t, cr.res.GPUChecks[0].Passed)
	assert.Equal(t, verdict.GPUCheckIdle, cr.res.GPUChecks[0].Name)

	t.Run("utilised", func(t *testing.T) {
		t.Setenv("FAKE_NVIDIA_SMI_UTIL", "GPU-8d2e4f61-1b3c-4a5d-8e9f-0a1b2c3d4e5f=87")
		cr := hygieneRun(t, true)
		err := cr.checkIdle(ctx)
		assert.Equal(t, "gpu_busy", code(err))
		assert.ErrorContains(t, err, "gpu busy before timing: GPU 2 (GPU-8d2e4f61-1b3c-4a5d-8e9f-0a1b2c3d4e5f) is 87% utilised")
		assert.False(t, cr.res.GPUChecks[0].Passed)
	})
	t.Run("foreign process", func(t *testing.T) {
		cr := hygieneRun(t, true)
		pid := startHolder(t, 1862, "GPU-3c1b9e52-0a7d-4f11-9b2e-5d6c7e8f9a01")
		err := cr.checkIdle(ctx)
		assert.Equal(t, "gpu_busy", code(err))
		assert.ErrorContains(t, err, "runs a foreign compute process: pid "+strconv.Itoa(pid)+" sleep, 1862 MiB")
	})
	t.Run("nvidia-smi broken", func(t *testing.T) {
		cr := hygieneRun(t, true)
		t.Setenv("FAKE_NVIDIA_SMI_FAIL", "1")
		assert.Equal(t, "gpu_probe", code(cr.checkIdle(ctx)), "the check cannot pass")
	})
}

func TestCheckServing(t *testing.T) {
	ctx := context.Background()
	t.Run("both GPUs", func(t *testing.T) {
		cr := hygieneRun(t, true)
		// The server (ours: it carries the checkpoint's marker) on both GPUs.
		server := startHolder(t, 1290, cr.slot.CUDAVisibleDevices(), markerEnv+"="+cr.marker)
		require.NoError(t, cr.checkServing(ctx))
		c := cr.res.GPUChecks[0]
		assert.True(t, c.Passed)
		require.Len(t, c.GPUs, 2)
		for _, g := range c.GPUs {
			require.Len(t, g.Processes, 1)
			assert.Equal(t, server, g.Processes[0].PID)
			assert.True(t, g.Processes[0].Ours)
			assert.Equal(t, 1290, *g.MemoryUsedMiB)
		}
	})

	t.Run("one GPU of two", func(t *testing.T) {
		cr := hygieneRun(t, true)
		startHolder(t, 1290, cr.slot.GPUs[0].UUID, markerEnv+"="+cr.marker)
		err := cr.checkServing(ctx)
		assert.Equal(t, "gpu_unused", code(err), "a tp=2 server that uses only one of its GPUs")
		assert.ErrorContains(t, err, "its server holds no memory on 1 of the slot's 2 GPU(s): GPU-8d2e4f61-1b3c-4a5d-8e9f-0a1b2c3d4e5f")
		cpuFamily := hygieneRun(t, false)
		cpuFamily.marker = cr.marker
		require.NoError(t, cpuFamily.checkServing(ctx), "a family that computes on the CPU need not use its GPUs")
	})
	t.Run("foreign process", func(t *testing.T) {
		cr := hygieneRun(t, true)
		startHolder(t, 1290, cr.slot.CUDAVisibleDevices(), markerEnv+"="+cr.marker)
		startHolder(t, 500, cr.slot.GPUs[1].UUID)
		assert.Equal(t, "gpu_busy", code(cr.checkServing(ctx)))
	})
}

func TestCheckReleased(t *testing.T) {
	ctx := context.Background()
	cr := hygieneRun(t, true)
	require.NoError(t, cr.checkReleased(ctx), "nothing on the GPUs")
	assert.True(t, cr.res.GPUChecks[0].Passed)

	t.Run("leak of the run", func(t *testing.T) {
		cr := hygieneRun(t, true)
		leak := startHolder(t, 700, cr.slot.GPUs[1].UUID, markerEnv+"="+cr.marker)
		err := cr.checkReleased(ctx)
		assert.Equal(t, "gpu_leak", code(err))
		assert.ErrorContains(t, err, "pid "+strconv.Itoa(leak)+" sleep (a process of this run), 700 MiB on GPU GPU-8d2e4f61")
		assert.False(t, cr.res.GPUChecks[0].Passed)
	})
	t.Run("foreign since before the run", func(t *testing.T) {
		cr := hygieneRun(t, true)
		startHolder(t, 1862, cr.slot.GPUs[0].UUID)
		require.Equal(t, "gpu_busy", code(cr.checkIdle(ctx)))
		require.NoError(t, cr.checkReleased(ctx), "the busy GPU's own process is not this run's leak")
	})
	t.Run("unattributable", func(t *testing.T) {
		cr := hygieneRun(t, true)
		startHolder(t, 10, cr.slot.GPUs[0].UUID)
		err := cr.checkReleased(ctx)
		assert.Equal(t, "gpu_leak", code(err), "fail closed")
		assert.ErrorContains(t, err, "not identifiable as this run's")
	})
	// Memory the driver releases within the wait: released.
	cr = hygieneRun(t, true)
	cr.gr.opts.Hardware.ReleaseWait = 20 * time.Second
	cmd := exec.Command("sleep", "300")
	cmd.Env = append(os.Environ(), "FAKE_GPU_HOLD=300", "CUDA_VISIBLE_DEVICES="+cr.slot.GPUs[0].UUID, markerEnv+"="+cr.marker)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		// Let the check see the process once, then end it.
		for len(cr.snapshotApps(t)) == 0 {
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		close(exited)
	}()
	require.NoError(t, cr.checkReleased(ctx))
	<-exited
}

// snapshotApps lists the compute processes on the run's slot.
func (cr *checkpointRun) snapshotApps(t *testing.T) []ComputeApp {
	snap, err := cr.snapshot(context.Background())
	require.NoError(t, err)
	return snap.apps
}
