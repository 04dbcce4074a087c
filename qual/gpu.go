package qual

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/qual/proc"
	"github.com/trtmc-qual/trtmc-qual/reports"
)

// Slot is one place a checkpoint runs: a GPU, or the CPU when there is none.
type Slot struct {
	Name string
	GPU  *reports.GPU
}

// CUDAVisibleDevices is the value children of this slot get.
func (s Slot) CUDAVisibleDevices() string {
	if s.GPU == nil {
		return ""
	}
	return s.GPU.Index
}

// GPUProbe lists GPUs and checks that one is idle before timing.
type GPUProbe interface {
	List(ctx context.Context) ([]reports.GPU, error)
	CheckIdle(ctx context.Context, g reports.GPU) (*reports.GPU, error)
}

// NvidiaSMI probes GPUs with nvidia-smi. With no nvidia-smi on PATH there
// are no GPUs, and the run goes on with one CPU slot.
type NvidiaSMI struct {
	Runner proc.Runner
	// Bin is the nvidia-smi executable (default: looked up on PATH).
	Bin string
	// MaxUtilization is the highest utilisation (%) counted as idle.
	MaxUtilization int
}

func (n NvidiaSMI) bin() (string, bool) {
	if n.Bin != "" {
		return n.Bin, true
	}
	p, err := exec.LookPath("nvidia-smi")
	return p, err == nil
}

func (n NvidiaSMI) query(ctx context.Context, args ...string) ([][]string, error) {
	bin, _ := n.bin()
	var out bytes.Buffer
	argv := append([]string{bin}, args...)
	if _, err := n.Runner.Run(ctx, proc.Spec{Name: "nvidia-smi", Argv: argv, Stdout: &out}); err != nil {
		return nil, err
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		cells := strings.Split(line, ",")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return rows, nil
}

// List implements GPUProbe.
func (n NvidiaSMI) List(ctx context.Context) ([]reports.GPU, error) {
	if _, ok := n.bin(); !ok {
		return nil, nil
	}
	rows, err := n.query(ctx, "--query-gpu=index,name,uuid,driver_version", "--format=csv,noheader")
	if err != nil {
		return nil, fmt.Errorf("list GPUs: %w", err)
	}
	var gpus []reports.GPU
	for _, r := range rows {
		if len(r) < 4 {
			return nil, fmt.Errorf("list GPUs: unexpected nvidia-smi line %q", strings.Join(r, ","))
		}
		gpus = append(gpus, reports.GPU{Index: r[0], Name: r[1], UUID: r[2], Driver: r[3]})
	}
	return gpus, nil
}

// CheckIdle implements GPUProbe: no foreign compute process and low
// utilisation, else a setup error.
func (n NvidiaSMI) CheckIdle(ctx context.Context, g reports.GPU) (*reports.GPU, error) {
	rows, err := n.query(ctx, "--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits")
	if err != nil {
		return nil, err
	}
	limit := n.MaxUtilization
	if limit == 0 {
		limit = 20
	}
	for _, r := range rows {
		if len(r) >= 2 && r[0] == g.Index {
			if u, err := strconv.Atoi(r[1]); err == nil && u > limit {
				return nil, fmt.Errorf("GPU %s (%s) is %d%% utilised before timing (limit %d%%): another job is using it", g.Index, g.UUID, u, limit)
			}
		}
	}
	apps, err := n.query(ctx, "--query-compute-apps=gpu_uuid,pid,process_name", "--format=csv,noheader")
	if err != nil {
		return nil, err
	}
	for _, a := range apps {
		if len(a) >= 2 && a[0] == g.UUID {
			return nil, fmt.Errorf("GPU %s (%s) runs a foreign compute process (pid %s %s) before timing", g.Index, g.UUID, a[1], strings.Join(a[2:], " "))
		}
	}
	return &g, nil
}

// Slots turns a --gpus selection into slots: "" means every GPU listed (or
// one CPU slot when there are none); "cpu" forces one CPU slot and "cpu:N"
// N of them (for CPU-only targets such as the reference server); "0,1"
// selects GPUs by index.
func Slots(ctx context.Context, probe GPUProbe, sel string) ([]Slot, error) {
	if sel == "cpu" {
		return []Slot{{Name: "cpu"}}, nil
	}
	if n, ok := strings.CutPrefix(sel, "cpu:"); ok {
		k, err := strconv.Atoi(n)
		if err != nil || k < 1 || k > 64 {
			return nil, &SetupError{fmt.Errorf("--gpus %s: want cpu:N with N from 1 to 64", sel)}
		}
		slots := make([]Slot, k)
		for i := range slots {
			slots[i] = Slot{Name: fmt.Sprintf("cpu%d", i)}
		}
		return slots, nil
	}
	var gpus []reports.GPU
	if probe != nil {
		var err error
		if gpus, err = probe.List(ctx); err != nil {
			return nil, &SetupError{err}
		}
	}
	if sel == "" {
		if len(gpus) == 0 {
			return []Slot{{Name: "cpu"}}, nil
		}
		var slots []Slot
		for i := range gpus {
			slots = append(slots, Slot{Name: "gpu" + gpus[i].Index, GPU: &gpus[i]})
		}
		return slots, nil
	}
	byIndex := map[string]*reports.GPU{}
	for i := range gpus {
		byIndex[gpus[i].Index] = &gpus[i]
	}
	var slots []Slot
	for _, idx := range strings.Split(sel, ",") {
		idx = strings.TrimSpace(idx)
		g, ok := byIndex[idx]
		if !ok {
			return nil, &SetupError{fmt.Errorf("--gpus %s: GPU %s does not exist (found %d GPU(s))", sel, idx, len(gpus))}
		}
		slots = append(slots, Slot{Name: "gpu" + idx, GPU: g})
	}
	return slots, nil
}
