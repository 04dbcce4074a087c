package qual

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// GPUProbe describes the host's GPUs and the compute processes on them.
type GPUProbe interface {
	// List describes every GPU as it is now (identity, memory, utilisation,
	// clocks, power limit, MIG mode); nil when the host has none.
	List(ctx context.Context) ([]verdict.GPU, error)
	// Apps lists the compute processes on every GPU.
	Apps(ctx context.Context) ([]ComputeApp, error)
}

// ComputeApp is one compute process nvidia-smi lists on a GPU.
type ComputeApp struct {
	PID     int
	Name    string
	UsedMiB *int
	GPUUUID string
}

// gpuQueryFields are the --query-gpu fields List reads, in order (all
// answered on an H200 with driver 580; docs/gpu.md).
var gpuQueryFields = []string{"index", "name", "uuid", "driver_version", "memory.total", "memory.used",
	"utilization.gpu", "clocks.sm", "clocks.max.sm", "power.limit", "mig.mode.current", "compute_cap",
	"pci.bus_id", "compute_mode"}

// NvidiaSMI probes GPUs with nvidia-smi through the exec interface. With no
// nvidia-smi on PATH there are no GPUs.
type NvidiaSMI struct {
	Runner proc.Runner
	// Bin is the nvidia-smi executable (default: looked up on PATH).
	Bin string
	// Timeout bounds each nvidia-smi call (default 30 s): a hung driver
	// must not hang the run.
	Timeout time.Duration
}

func (n NvidiaSMI) bin() (string, bool) {
	if n.Bin != "" {
		return n.Bin, true
	}
	p, err := exec.LookPath("nvidia-smi")
	return p, err == nil
}

func (n NvidiaSMI) run(ctx context.Context, args ...string) (string, error) {
	bin, _ := n.bin()
	timeout := n.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out bytes.Buffer
	argv := append([]string{bin}, args...)
	if _, err := n.Runner.Run(ctx, proc.Spec{Name: "nvidia-smi", Argv: argv, Stdout: &out, Grace: time.Second}); err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return "", fmt.Errorf("nvidia-smi %s did not answer within %s", strings.Join(args, " "), timeout)
		}
		return "", fmt.Errorf("nvidia-smi %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), nil
}

// List implements GPUProbe.
func (n NvidiaSMI) List(ctx context.Context) ([]verdict.GPU, error) {
	if _, ok := n.bin(); !ok {
		return nil, nil
	}
	out, err := n.run(ctx, "--query-gpu="+strings.Join(gpuQueryFields, ","), "--format=csv,noheader,nounits")
	if err != nil {
		return nil, fmt.Errorf("list GPUs: %w", err)
	}
	gpus, err := ParseGPUs(out)
	if err != nil {
		return nil, fmt.Errorf("list GPUs: %w", err)
	}
	if len(gpus) == 0 {
		return nil, nil
	}
	banner, err := n.run(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the CUDA version: %w", err)
	}
	cuda := ParseCUDAVersion(banner)
	for i := range gpus {
		gpus[i].CUDAVersion = cuda
	}
	return gpus, nil
}

// Apps implements GPUProbe.
func (n NvidiaSMI) Apps(ctx context.Context) ([]ComputeApp, error) {
	if _, ok := n.bin(); !ok {
		return nil, nil
	}
	out, err := n.run(ctx, "--query-compute-apps=pid,process_name,used_memory,gpu_uuid", "--format=csv,noheader,nounits")
	if err != nil {
		return nil, fmt.Errorf("list GPU compute processes: %w", err)
	}
	return ParseComputeApps(out)
}

// ParseGPUs parses `nvidia-smi --query-gpu=<gpuQueryFields>
// --format=csv,noheader,nounits`. Values nvidia-smi cannot report ("[N/A]",
// "[Not Supported]") are left unset; a line with the wrong number of fields
// or an unreadable number is an error naming the line.
func ParseGPUs(out string) ([]verdict.GPU, error) {
	var gpus []verdict.GPU
	for i, line := range lines(out) {
		f := splitCSV(line)
		if len(f) != len(gpuQueryFields) {
			return nil, fmt.Errorf("nvidia-smi line %d: %d fields, want %d (%s): %q", i+1, len(f), len(gpuQueryFields),
				strings.Join(gpuQueryFields, ","), line)
		}
		g := verdict.GPU{Index: f[0], Name: f[1], UUID: f[2], Driver: unavailable(f[3]), MIGMode: unavailable(f[10]),
			ComputeCap: unavailable(f[11]), PCIBusID: unavailable(f[12]), ComputeMode: unavailable(f[13])}
		if g.Index == "" || g.UUID == "" || !strings.HasPrefix(g.UUID, "GPU-") && !strings.HasPrefix(g.UUID, "MIG-") {
			return nil, fmt.Errorf("nvidia-smi line %d: no index or UUID: %q", i+1, line)
		}
		var err error
		for _, x := range []struct {
			field string
			dst   **int
			v     string
		}{{"memory.total", &g.MemoryTotalMiB, f[4]}, {"memory.used", &g.MemoryUsedMiB, f[5]},
			{"utilization.gpu", &g.UtilizationPct, f[6]}, {"clocks.sm", &g.ClockSMMHz, f[7]},
			{"clocks.max.sm", &g.ClockMaxSMMHz, f[8]}} {
			if *x.dst, err = optionalInt(x.v); err != nil {
				return nil, fmt.Errorf("nvidia-smi line %d: %s: %w", i+1, x.field, err)
			}
		}
		if v := unavailable(f[9]); v != "" {
			w, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("nvidia-smi line %d: power.limit: %q is not a number", i+1, v)
			}
			g.PowerLimitW = &w
		}
		g.Scope = inventory.ScopeOfGPU(g.Name)
		gpus = append(gpus, g)
	}
	return gpus, nil
}

var cudaVersionRE = regexp.MustCompile(`CUDA Version:\s*([0-9][0-9.]*)`)

// ParseCUDAVersion reads "CUDA Version: 13.0" from nvidia-smi's banner.
func ParseCUDAVersion(banner string) string {
	if m := cudaVersionRE.FindStringSubmatch(banner); m != nil {
		return m[1]
	}
	return ""
}

// ParseComputeApps parses `nvidia-smi --query-compute-apps=pid,
// process_name,used_memory,gpu_uuid --format=csv,noheader,nounits` (empty
// output: no process). A process name may hold commas, so the pid is the
// first field and the memory and UUID the last two.
func ParseComputeApps(out string) ([]ComputeApp, error) {
	var apps []ComputeApp
	for i, line := range lines(out) {
		if strings.HasPrefix(strings.TrimSpace(line), "No running") {
			continue
		}
		f := splitCSV(line)
		if len(f) < 4 {
			return nil, fmt.Errorf("nvidia-smi compute-apps line %d: want pid, process_name, used_memory, gpu_uuid: %q", i+1, line)
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("nvidia-smi compute-apps line %d: pid %q is not a number", i+1, f[0])
		}
		used, err := optionalInt(f[len(f)-2])
		if err != nil {
			return nil, fmt.Errorf("nvidia-smi compute-apps line %d: used_memory: %w", i+1, err)
		}
		apps = append(apps, ComputeApp{PID: pid, Name: strings.Join(f[1:len(f)-2], ","), UsedMiB: used, GPUUUID: f[len(f)-1]})
	}
	return apps, nil
}

func lines(out string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) != "" {
			ls = append(ls, strings.TrimRight(l, "\r"))
		}
	}
	return ls
}

func splitCSV(line string) []string {
	f := strings.Split(line, ",")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	return f
}

// unavailable maps nvidia-smi's "[N/A]" / "[Not Supported]" to "".
func unavailable(v string) string {
	if v == "" || strings.HasPrefix(v, "[") || v == "N/A" {
		return ""
	}
	return v
}

func optionalInt(v string) (*int, error) {
	v = unavailable(v)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil {
			return nil, fmt.Errorf("%q is not a number", v)
		}
		n = int(f)
	}
	return &n, nil
}
