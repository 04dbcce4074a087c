package reports

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// GPU cells of the group tables (docs/gpu.md). A row run on a CPU slot
// shows "cpu"; a row with no provenance at all shows Missing.

// gpusCell is "2× NVIDIA H200" (mixed models are listed one by one), or
// "cpu" for a row measured on a CPU slot.
func gpusCell(p verdict.Provenance) string {
	if len(p.GPUs) == 0 {
		if p.HardwareScope != "" {
			return p.HardwareScope
		}
		return Missing
	}
	names := gpuField(p.GPUs, func(g verdict.GPU) string { return g.Name })
	if len(names) == 1 {
		return fmt.Sprintf("%d× %s", len(p.GPUs), names[0])
	}
	return strings.Join(names, " + ")
}

// gpuUUIDsCell lists the first 8 hex digits of each GPU's UUID.
func gpuUUIDsCell(p verdict.Provenance) string {
	if len(p.GPUs) == 0 {
		return Missing
	}
	ids := make([]string, len(p.GPUs))
	for i, g := range p.GPUs {
		ids[i] = shortUUID(g.UUID)
	}
	return strings.Join(ids, " ")
}

// driverCell is "580.159.04 / 13.0".
func driverCell(p verdict.Provenance) string {
	if len(p.GPUs) == 0 {
		return Missing
	}
	d := strings.Join(gpuField(p.GPUs, func(g verdict.GPU) string { return orMissing(g.Driver) }), ",")
	c := strings.Join(gpuField(p.GPUs, func(g verdict.GPU) string { return orMissing(g.CUDAVersion) }), ",")
	return d + " / " + c
}

func shortUUID(u string) string {
	u = strings.TrimPrefix(u, "GPU-")
	if len(u) > 8 {
		return u[:8]
	}
	return u
}

// gpuField is the distinct values of one field, in slot order.
func gpuField(gs []verdict.GPU, f func(verdict.GPU) string) []string {
	var out []string
	for _, g := range gs {
		if v := f(g); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// gpuCSV fills the CSV's GPU columns: one value per GPU, ";"-separated.
func gpuCSV(v map[string]string, res *verdict.Result) {
	p := res.Provenance
	v["hardware_scope"], v["hardware_mismatch"] = p.HardwareScope, p.HardwareMismatch
	each := func(f func(verdict.GPU) string) string {
		parts := make([]string, len(p.GPUs))
		for i, g := range p.GPUs {
			parts[i] = f(g)
		}
		return strings.Join(parts, ";")
	}
	v["gpu_count"] = strconv.Itoa(len(p.GPUs))
	v["gpu_names"] = each(func(g verdict.GPU) string { return g.Name })
	v["gpu_uuids"] = each(func(g verdict.GPU) string { return g.UUID })
	v["gpu_driver"] = each(func(g verdict.GPU) string { return g.Driver })
	v["cuda_version"] = each(func(g verdict.GPU) string { return g.CUDAVersion })
	v["gpu_memory_total_mib"] = each(func(g verdict.GPU) string { return optInt(g.MemoryTotalMiB) })
	v["gpu_clock_sm_mhz"] = each(func(g verdict.GPU) string { return optInt(g.ClockSMMHz) })
	v["gpu_clock_max_sm_mhz"] = each(func(g verdict.GPU) string { return optInt(g.ClockMaxSMMHz) })
	v["gpu_power_limit_w"] = each(func(g verdict.GPU) string { return fmtPlain(g.PowerLimitW) })
	v["gpu_mig_mode"] = each(func(g verdict.GPU) string { return g.MIGMode })
	v["gpu_checks"] = gpuChecksPlain(res.GPUChecks)
}

// gpuChecksPlain is "idle_before_timing pass; released_after_stop FAIL".
func gpuChecksPlain(cs []verdict.GPUCheck) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		v := "pass"
		if !c.Passed {
			v = "fail"
		}
		parts[i] = c.Name + " " + v
	}
	return strings.Join(parts, "; ")
}

// gpuMeta is the HTML checkpoint section's GPU line: each GPU with its
// provenance at start.
func gpuMeta(p verdict.Provenance) []string {
	var out []string
	for _, g := range p.GPUs {
		s := fmt.Sprintf("GPU %s %s (%s)", g.Index, g.Name, g.UUID)
		var d []string
		if g.MemoryTotalMiB != nil {
			d = append(d, fmt.Sprintf("%d MiB", *g.MemoryTotalMiB))
		}
		if g.Driver != "" {
			d = append(d, "driver "+g.Driver)
		}
		if g.CUDAVersion != "" {
			d = append(d, "CUDA "+g.CUDAVersion)
		}
		if g.ClockSMMHz != nil {
			c := fmt.Sprintf("SM %d", *g.ClockSMMHz)
			if g.ClockMaxSMMHz != nil {
				c += fmt.Sprintf("/%d", *g.ClockMaxSMMHz)
			}
			d = append(d, c+" MHz")
		}
		if g.PowerLimitW != nil {
			d = append(d, fmt.Sprintf("power limit %.0f W", *g.PowerLimitW))
		}
		if g.MIGMode != "" {
			d = append(d, "MIG "+g.MIGMode)
		}
		if len(d) > 0 {
			s += ": " + strings.Join(d, ", ")
		}
		out = append(out, s)
	}
	if len(p.GPUs) == 0 && p.HardwareScope != "" {
		out = append(out, "hardware "+p.HardwareScope)
	}
	if p.HardwareMismatch != "" {
		out = append(out, "hardware mismatch allowed: "+p.HardwareMismatch)
	}
	return out
}

// gpuCheckDetail is what a check saw: per GPU, utilisation, memory and
// the compute processes; then its problem, if any.
func gpuCheckDetail(c verdict.GPUCheck) string {
	var parts []string
	for _, g := range c.GPUs {
		s := shortUUID(g.UUID) + ":"
		if g.UtilizationPct != nil {
			s += fmt.Sprintf(" %d%%", *g.UtilizationPct)
		}
		if g.MemoryUsedMiB != nil {
			s += fmt.Sprintf(" %d MiB used", *g.MemoryUsedMiB)
		}
		for _, pr := range g.Processes {
			who := "foreign"
			if pr.Ours {
				who = "ours"
			}
			s += fmt.Sprintf(", pid %d %s (%s", pr.PID, pr.Name, who)
			if pr.UsedMiB != nil {
				s += fmt.Sprintf(", %d MiB", *pr.UsedMiB)
			}
			s += ")"
		}
		parts = append(parts, s)
	}
	out := strings.Join(parts, "; ")
	if c.Problem != "" {
		out += " — " + c.Problem
	}
	return out
}
