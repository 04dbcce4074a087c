package qual

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/qual/aiperf"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// summaryWith writes a minimal profile_export_aiperf.json with the given
// telemetry_data (shaped as AIPerf 0.13.0's TelemetryExportData) and parses it.
func summaryWith(t *testing.T, telemetry string) *aiperf.Summary {
	t.Helper()
	doc := `{"schema_version":"1.4","aiperf_version":"0.13.0","was_cancelled":false,"error_summary":[],
		"request_latency":{"unit":"ms","avg":1,"p50":1,"p95":2}`
	if telemetry != "" {
		doc += `,"telemetry_data":` + telemetry
	}
	path := filepath.Join(t.TempDir(), "profile_export_aiperf.json")
	require.NoError(t, os.WriteFile(path, []byte(doc+"}"), 0o644))
	s, err := aiperf.ParseSummary(path)
	require.NoError(t, err)
	return s
}

// The shape AIPerf 0.13.0 wrote on this CPU-only machine with
// --gpu-telemetry pynvml (TestIntegrationGPUTelemetry logs it).
const telemetryNoGPU = `{"summary":{"endpoints_configured":["pynvml://localhost"],"endpoints_successful":[],
	"start_time":"2026-12-01T04:25:01.299266","end_time":"2026-12-01T04:25:02.089463"},"endpoints":{},"error_summary":[]}`

// Two GPUs as the pynvml collector reports every GPU of the host.
const telemetryTwoGPUs = `{"summary":{"endpoints_configured":["pynvml://localhost"],"endpoints_successful":["pynvml://localhost"],
	"start_time":"2026-12-01T04:25:01","end_time":"2026-12-01T04:25:02"},
	"endpoints":{"pynvml://localhost":{"gpus":{
	  "gpu_0":{"gpu_index":0,"gpu_name":"NVIDIA H200","gpu_uuid":"GPU-aaaa","platform":"nvidia","hostname":"h",
	    "metrics":{"nvidia_gpu_utilization":{"unit":"%","avg":10,"max":20},"nvidia_power_usage":{"unit":"W","avg":100,"max":150}}},
	  "gpu_1":{"gpu_index":1,"gpu_name":"NVIDIA H200","gpu_uuid":"GPU-bbbb","platform":"nvidia","hostname":"h",
	    "metrics":{"nvidia_gpu_utilization":{"unit":"%","avg":71.5,"max":99},"nvidia_memory_used":{"unit":"GB","avg":40.2,"max":41},
	      "nvidia_power_usage":{"unit":"W","avg":402.5,"max":611},"nvidia_energy_consumption":{"unit":"MJ","avg":0.0123}}}}}},
	"error_summary":[]}`

func TestGPUTelemetry(t *testing.T) {
	gpu1 := Slot{Name: "gpu1", GPUs: []verdict.GPU{{Index: "1", UUID: "GPU-bbbb", Name: "NVIDIA H200"}}}

	assert.Nil(t, gpuTelemetry(Slot{Name: "cpu"}, summaryWith(t, telemetryTwoGPUs)), "CPU slots record none")
	assert.Equal(t, "", telemetryCollector(Slot{Name: "cpu"}))
	assert.Equal(t, aiperf.GPUTelemetryPyNVML, telemetryCollector(gpu1))

	got := gpuTelemetry(gpu1, summaryWith(t, telemetryTwoGPUs))
	require.NotNil(t, got)
	assert.True(t, got.Collected)
	assert.Equal(t, "GPU-bbbb", got.GPUUUID, "the slot's GPU, not the host's first")
	require.NotNil(t, got.GPUIndex)
	assert.Equal(t, 1, *got.GPUIndex)
	require.NotNil(t, got.UtilizationPct)
	assert.Equal(t, 71.5, *got.UtilizationPct.Avg)
	assert.Equal(t, 99.0, *got.UtilizationPct.Max)
	assert.Equal(t, 40.2, *got.MemoryUsedGB.Avg)
	assert.Equal(t, 611.0, *got.PowerW.Max)
	assert.Equal(t, 0.0123, *got.EnergyMJ)

	// A tp=2 slot: the first of its GPUs, said so.
	tp2 := gpuTelemetry(Slot{GPUs: []verdict.GPU{{Index: "1", UUID: "GPU-bbbb"}, {Index: "0", UUID: "GPU-aaaa"}}}, summaryWith(t, telemetryTwoGPUs))
	assert.True(t, tp2.Collected)
	assert.Equal(t, "GPU-bbbb", tp2.GPUUUID)
	assert.Equal(t, "the first of the slot's 2 GPUs", tp2.Note)

	// By index when the slot's UUID is unknown.
	byIndex := gpuTelemetry(Slot{GPUs: []verdict.GPU{{Index: "0"}}}, summaryWith(t, telemetryTwoGPUs))
	assert.True(t, byIndex.Collected)
	assert.Equal(t, "GPU-aaaa", byIndex.GPUUUID)
	assert.Nil(t, byIndex.MemoryUsedGB, "a metric AIPerf did not give stays absent, never 0")

	// Broken on purpose: each records telemetry as not collected, with why.
	for name, tc := range map[string]struct {
		slot Slot
		s    *aiperf.Summary
		note string
	}{
		"no GPU on the host": {gpu1, summaryWith(t, telemetryNoGPU), "configured: pynvml://localhost; successful: none"},
		"another host's GPU": {Slot{GPUs: []verdict.GPU{{Index: "1", UUID: "GPU-cccc"}}}, summaryWith(t, telemetryTwoGPUs), "no data for this GPU"},
		"no telemetry_data":  {gpu1, summaryWith(t, ""), "no telemetry_data"},
		"no summary":         {gpu1, nil, "no telemetry_data"},
		"malformed":          {gpu1, summaryWith(t, `{"endpoints":{"x":{"gpus":{"gpu_0":{"gpu_index":"zero"}}}}}`), "unreadable: "},
		"unusable index":     {Slot{GPUs: []verdict.GPU{{Index: "MIG-1"}}}, summaryWith(t, telemetryTwoGPUs), "neither a UUID nor a numeric index"},
	} {
		got := gpuTelemetry(tc.slot, tc.s)
		require.NotNil(t, got, name)
		assert.False(t, got.Collected, name)
		assert.Contains(t, got.Note, tc.note, name)
		assert.Nil(t, got.UtilizationPct, name)
	}
}
