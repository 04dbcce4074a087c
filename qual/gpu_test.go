package qual

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "nvidia-smi", name))
	require.NoError(t, err)
	return string(data)
}

// TestParseGPUsH200 parses the line nvidia-smi printed on the H200 machine.
func TestParseGPUsH200(t *testing.T) {
	gpus, err := ParseGPUs(fixture(t, "h200x1/query-gpu.csv"))
	require.NoError(t, err)
	require.Len(t, gpus, 1)
	g := gpus[0]
	assert.Equal(t, "0", g.Index)
	assert.Equal(t, "NVIDIA H200", g.Name)
	assert.Equal(t, "GPU-f0ff8a38-722f-2d4b-03e4-7dd00ddaa68f", g.UUID)
	assert.Equal(t, "580.159.04", g.Driver)
	assert.Equal(t, 143771, *g.MemoryTotalMiB)
	assert.Equal(t, 0, *g.MemoryUsedMiB)
	assert.Equal(t, 0, *g.UtilizationPct)
	assert.Equal(t, 480, *g.ClockSMMHz)
	assert.Equal(t, 1980, *g.ClockMaxSMMHz)
	assert.InDelta(t, 700.0, *g.PowerLimitW, 0)
	assert.Equal(t, "Disabled", g.MIGMode)
	assert.Equal(t, "9.0", g.ComputeCap)
	assert.Equal(t, "00000000:00:06.0", g.PCIBusID)
	assert.Equal(t, "Default", g.ComputeMode)
	assert.Equal(t, "h200", g.Scope)
	assert.Equal(t, "13.0", ParseCUDAVersion(fixture(t, "h200x1/banner.txt")))

	for name, n := range map[string]int{"h200x2": 2, "h200x4": 4, "gb300x2": 2} {
		gpus, err := ParseGPUs(fixture(t, name+"/query-gpu.csv"))
		require.NoError(t, err, name)
		assert.Len(t, gpus, n, name)
		seen := map[string]bool{}
		for _, g := range gpus {
			assert.False(t, seen[g.UUID], "%s: UUIDs are distinct", name)
			seen[g.UUID] = true
		}
	}
}

// TestParseGPUsUnavailable: values nvidia-smi cannot report stay unset,
// never 0.
func TestParseGPUsUnavailable(t *testing.T) {
	gpus, err := ParseGPUs(fixture(t, "query-gpu-na.csv"))
	require.NoError(t, err)
	g := gpus[0]
	assert.Nil(t, g.MemoryUsedMiB)
	assert.Nil(t, g.UtilizationPct)
	assert.Nil(t, g.ClockSMMHz)
	assert.Nil(t, g.PowerLimitW)
	assert.Empty(t, g.MIGMode)
}

// TestParseGPUsBroken: a short line, a non-number or a missing UUID is an
// error naming the line, never a GPU with made-up values.
func TestParseGPUsBroken(t *testing.T) {
	good := strings.TrimSpace(fixture(t, "h200x1/query-gpu.csv"))
	for name, in := range map[string]string{
		"short line":   "0, NVIDIA H200, GPU-x, 580",
		"bad number":   strings.Replace(good, "143771", "lots", 1),
		"bad power":    strings.Replace(good, "700.00", "seven", 1),
		"no uuid":      strings.Replace(good, "GPU-f0ff8a38-722f-2d4b-03e4-7dd00ddaa68f", "", 1),
		"second line":  good + "\n1, NVIDIA H200",
		"garbage uuid": strings.Replace(good, "GPU-f0ff8a38", "f0ff8a38", 1),
	} {
		_, err := ParseGPUs(in)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "nvidia-smi line", name)
	}
}

func TestParseComputeApps(t *testing.T) {
	apps, err := ParseComputeApps(fixture(t, "compute-apps-busy.csv"))
	require.NoError(t, err)
	require.Len(t, apps, 1)
	assert.Equal(t, 548, apps[0].PID)
	assert.Equal(t, "python3", apps[0].Name)
	assert.Equal(t, 1862, *apps[0].UsedMiB)
	assert.Equal(t, "GPU-f0ff8a38-722f-2d4b-03e4-7dd00ddaa68f", apps[0].GPUUUID)

	apps, err = ParseComputeApps("")
	require.NoError(t, err)
	assert.Empty(t, apps, "empty output: no process")

	apps, err = ParseComputeApps("77, /opt/my,app/bin/server, [N/A], GPU-1\n")
	require.NoError(t, err)
	assert.Equal(t, "/opt/my,app/bin/server", apps[0].Name, "commas in a process name")
	assert.Nil(t, apps[0].UsedMiB)

	_, err = ParseComputeApps("x, python3, 10, GPU-1\n")
	assert.ErrorContains(t, err, "pid")
}

// fakeProbe is a GPU probe with fixed GPUs and compute processes.
type fakeProbe struct {
	gpus []verdict.GPU
	apps []ComputeApp
	err  error
}

func (f *fakeProbe) List(context.Context) ([]verdict.GPU, error) { return f.gpus, f.err }
func (f *fakeProbe) Apps(context.Context) ([]ComputeApp, error)  { return f.apps, f.err }
func h200s(t *testing.T, n int) []verdict.GPU {
	t.Helper()
	gpus, err := ParseGPUs(fixture(t, map[int]string{1: "h200x1", 2: "h200x2", 4: "h200x4"}[n]+"/query-gpu.csv"))
	require.NoError(t, err)
	return gpus
}

func TestNewPool(t *testing.T) {
	ctx := context.Background()
	none := &fakeProbe{}
	two := &fakeProbe{gpus: h200s(t, 2)}

	p, err := NewPool(ctx, none, "")
	require.NoError(t, err)
	assert.True(t, p.CPU(), "no GPU: one CPU slot")
	assert.Equal(t, "1 CPU slot", p.Describe())

	p, err = NewPool(ctx, two, "")
	require.NoError(t, err)
	assert.Len(t, p.GPUs, 2)

	p, err = NewPool(ctx, two, "1")
	require.NoError(t, err)
	require.Len(t, p.GPUs, 1)
	assert.Equal(t, "GPU-3c1b9e52-0a7d-4f11-9b2e-5d6c7e8f9a01", p.GPUs[0].UUID)
	assert.Equal(t, "1 GPU (--gpus 1)", p.Describe())

	p, err = NewPool(ctx, two, "GPU-f0ff8a38-722f-2d4b-03e4-7dd00ddaa68f")
	require.NoError(t, err)
	assert.Equal(t, "0", p.GPUs[0].Index, "by UUID")

	p, err = NewPool(ctx, none, "cpu:3")
	require.NoError(t, err)
	assert.Equal(t, 3, p.CPUSlots)

	// A GPU this host lacks is a setup error (exit 3)...
	_, err = NewPool(ctx, two, "2")
	var se *SetupError
	require.ErrorAs(t, err, &se)
	// ... a malformed selection a usage error (exit 2), on any host (issue
	// 25, item 20).
	for _, bad := range []string{"0,0", "cpu:0", "cpu:x", "cpu:-1", "cpu:1,cpu:2", "cpu:2x", "cpu:+2", "cpu:65", "0,,1", "0,cpu",
		"GPU-f0ff8a38-722f-2d4b-03e4-7dd00ddaa68f,0"} {
		_, err = NewPool(ctx, two, bad)
		var ue *UsageError
		require.ErrorAs(t, err, &ue, bad)
		assert.Contains(t, err.Error(), fmt.Sprintf("%q", bad))
	}
	_, err = NewPool(ctx, &fakeProbe{err: assert.AnError}, "")
	require.ErrorAs(t, err, &se, "a probe that fails is a setup error, not zero GPUs")
}

func TestSlotEnv(t *testing.T) {
	gpus := h200s(t, 2)
	s := Slot{Name: "gpu0+1", GPUs: gpus}
	assert.Equal(t, []string{
		"CUDA_VISIBLE_DEVICES=GPU-f0ff8a38-722f-2d4b-03e4-7dd00ddaa68f,GPU-3c1b9e52-0a7d-4f11-9b2e-5d6c7e8f9a01",
		"CUDA_DEVICE_ORDER=PCI_BUS_ID"}, s.Env(), "GPUs by UUID, in PCI bus order")
	assert.Equal(t, "CUDA_VISIBLE_DEVICES=", Slot{Name: "cpu"}.Env()[0], "a CPU slot sees no GPU")
}

func profileTP(id string, tp int, hw ...string) *inventory.Profile {
	return &inventory.Profile{ID: id, Parallelism: inventory.Parallelism{TP: tp}, Hardware: hw}
}

// TestPlace: the scheduler never starts a profile on fewer GPUs than it
// needs, nor outside its hardware scope unless allowed, nor a GPU family on
// a CPU-only run.
func TestPlace(t *testing.T) {
	cpuFam := &families.Family{Name: "ref-vlm"}
	gpuFam := &families.Family{Name: "ref-vlm-gpu", NeedsGPU: true}
	one := &Pool{GPUs: h200s(t, 1), Selection: "0"}
	four := &Pool{GPUs: h200s(t, 4)}
	cpu := &Pool{CPUSlots: 2, Selection: "cpu:2"}

	pl := one.place(profileTP("a", 1, "h200"), gpuFam, false)
	require.Nil(t, pl.notRun)
	assert.Equal(t, 1, pl.need)
	assert.Equal(t, "h200", pl.scope)

	pl = one.place(profileTP("b", 2, "h200"), gpuFam, false)
	require.NotNil(t, pl.notRun)
	assert.Equal(t, CodeInsufficientGPUs, pl.notRun.Code)
	assert.Equal(t, "needs 2 GPUs (tp2) but the run has 1 GPU (--gpus 0); not started on fewer", pl.notRun.Message)
	pl = one.place(profileTP("b", 2, "h200"), gpuFam, true)
	require.NotNil(t, pl.notRun, "allowing a hardware mismatch never lets a profile run on fewer GPUs")

	cp := &inventory.Profile{ID: "c", Parallelism: inventory.Parallelism{TP: 2, CP: 2}}
	assert.Equal(t, 4, GPUsNeeded(cp))
	pl = four.place(cp, gpuFam, false)
	require.Nil(t, pl.notRun)
	assert.Equal(t, 4, pl.need)

	pl = four.place(profileTP("gb", 1, "gb300"), gpuFam, false)
	require.NotNil(t, pl.notRun)
	assert.Equal(t, CodeHardwareMismatch, pl.notRun.Code)
	assert.Contains(t, pl.notRun.Message, "hardware [gb300] but the run's GPUs are NVIDIA H200 (h200)")
	pl = four.place(profileTP("gb", 1, "gb300"), gpuFam, true)
	require.Nil(t, pl.notRun)
	assert.Contains(t, pl.mismatch, "[gb300]")
	assert.Len(t, pl.eligible, 4)

	pl = four.place(profileTP("ref", 2, "cpu"), cpuFam, false)
	require.Nil(t, pl.notRun, "scope cpu runs anywhere")
	pl = four.place(profileTP("any", 1), cpuFam, false)
	require.Nil(t, pl.notRun, "no hardware claim: nothing to check")

	mixed, err := ParseGPUs(fixture(t, "mixed/query-gpu.csv"))
	require.NoError(t, err)
	mp := &Pool{GPUs: mixed}
	pl = mp.place(profileTP("h", 1, "h200"), gpuFam, false)
	require.Nil(t, pl.notRun)
	assert.Equal(t, []int{0}, pl.eligible, "only the H200 of a mixed host")
	pl = mp.place(profileTP("h2", 2, "h200"), gpuFam, false)
	require.NotNil(t, pl.notRun, "one H200 of two GPUs cannot hold a tp=2 h200 profile")
	assert.Equal(t, CodeHardwareMismatch, pl.notRun.Code)

	pl = cpu.place(profileTP("g", 1, "h200"), gpuFam, true)
	require.NotNil(t, pl.notRun)
	assert.Equal(t, CodeGPURequired, pl.notRun.Code)
	assert.Contains(t, pl.notRun.Message, "family ref-vlm-gpu needs a GPU but this run has no GPU (2 CPU slots)")
	pl = cpu.place(profileTP("r", 4, "cpu"), cpuFam, false)
	require.Nil(t, pl.notRun, "a CPU family takes one CPU slot whatever its tp")
	assert.Equal(t, inventory.ScopeCPU, pl.scope)
	pl = cpu.place(profileTP("h", 1, "h200"), cpuFam, false)
	require.NotNil(t, pl.notRun)
	assert.Equal(t, CodeHardwareMismatch, pl.notRun.Code)
}

// TestNvidiaSMI drives the real probe against the fake nvidia-smi on PATH,
// whose compute processes are live processes holding GPUs.
func TestNvidiaSMI(t *testing.T) {
	bin, err := filepath.Abs("testdata/bin")
	require.NoError(t, err)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_NVIDIA_SMI_FIXTURE", "h200x4")
	t.Setenv("FAKE_NVIDIA_SMI_SESSION", t.Name()+strconv.Itoa(os.Getpid()))
	ctx := context.Background()
	probe := NvidiaSMI{Runner: proc.OS{}}

	gpus, err := probe.List(ctx)
	require.NoError(t, err)
	require.Len(t, gpus, 4)
	assert.Equal(t, "13.0", gpus[3].CUDAVersion)
	apps, err := probe.Apps(ctx)
	require.NoError(t, err)
	assert.Empty(t, apps)

	holder := startHolder(t, 1200, gpus[1].UUID+","+gpus[2].UUID)
	apps, err = probe.Apps(ctx)
	require.NoError(t, err)
	require.Len(t, apps, 2, "a process holds memory on each GPU it sees")
	assert.Equal(t, holder, apps[0].PID)
	gpus, err = probe.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1200, *gpus[1].MemoryUsedMiB)
	assert.Equal(t, 0, *gpus[0].MemoryUsedMiB)

	t.Setenv("FAKE_NVIDIA_SMI_FAIL", "1")
	_, err = probe.List(ctx)
	assert.ErrorContains(t, err, "list GPUs")

	t.Setenv("PATH", t.TempDir())
	gpus, err = NvidiaSMI{Runner: proc.OS{}}.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, gpus, "no nvidia-smi: no GPUs")
}

// startHolder starts a process that the fake nvidia-smi shows holding mib
// on the GPUs of devices, with extra environment; it is killed at cleanup.
func startHolder(t *testing.T, mib int, devices string, env ...string) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.Env = append(os.Environ(), append([]string{"FAKE_GPU_HOLD=" + strconv.Itoa(mib), "CUDA_VISIBLE_DEVICES=" + devices}, env...)...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}
