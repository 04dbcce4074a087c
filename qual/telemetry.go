package qual

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// telemetryCollector is the AIPerf GPU telemetry collector for a slot:
// NVML on a GPU slot, none (--no-gpu-telemetry) on a CPU slot.
func telemetryCollector(slot Slot) string {
	if len(slot.GPUs) == 0 {
		return ""
	}
	return aiperf.GPUTelemetryPyNVML
}

// gpuTelemetry picks the slot's first GPU out of AIPerf's telemetry_data
// (pynvml sees every GPU of the host) by UUID, or by index when the UUID
// is unknown. nil for a CPU slot; Collected false, with the reason, when
// the collector reported nothing for this GPU. The row's telemetry has one
// GPU: on a tp>1 slot it is the first (the note says so); the slot's GPUs
// are all in provenance.gpus and gpu_checks.
func gpuTelemetry(slot Slot, s *aiperf.Summary) *verdict.GPUTelemetry {
	collector := telemetryCollector(slot)
	if collector == "" {
		return nil
	}
	gpu := slot.GPUs[0]
	t := &verdict.GPUTelemetry{Collector: collector, GPUUUID: gpu.UUID, GPUName: gpu.Name}
	if len(slot.GPUs) > 1 {
		defer func() {
			t.Note = strings.TrimPrefix(t.Note+fmt.Sprintf("; the first of the slot's %d GPUs", len(slot.GPUs)), "; ")
		}()
	}
	index, err := strconv.Atoi(gpu.Index)
	if err == nil {
		t.GPUIndex = &index
	}
	if s != nil && s.TelemetryError != "" {
		t.Note = "unreadable: " + s.TelemetryError
		return t
	}
	if s == nil || s.Telemetry == nil {
		t.Note = "AIPerf's summary has no telemetry_data"
		return t
	}
	if gpu.UUID == "" && err != nil {
		t.Note = fmt.Sprintf("GPU %q has neither a UUID nor a numeric index to find it by", gpu.Index)
		return t
	}
	g, ok := s.Telemetry.GPU(gpu.UUID, index)
	if !ok {
		t.Note = fmt.Sprintf("the collector reported no data for this GPU (configured: %s; successful: %s)",
			orNone(s.Telemetry.Summary.EndpointsConfigured), orNone(s.Telemetry.Summary.EndpointsSuccessful))
		return t
	}
	t.Collected = true
	t.GPUIndex, t.GPUUUID = &g.Index, g.UUID
	if g.Name != "" {
		t.GPUName = g.Name
	}
	stat := func(key string) *verdict.TelemetryStat {
		m, ok := g.Metrics[key]
		if !ok || m.Avg == nil && m.Max == nil {
			return nil
		}
		return &verdict.TelemetryStat{Avg: m.Avg, Max: m.Max}
	}
	t.UtilizationPct = stat("nvidia_gpu_utilization")
	t.MemoryUsedGB = stat("nvidia_memory_used")
	t.PowerW = stat("nvidia_power_usage")
	if m, ok := g.Metrics["nvidia_energy_consumption"]; ok {
		t.EnergyMJ = m.Avg
	}
	return t
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
