package aiperf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// MetricStats is one metric block of profile_export_aiperf.json. AIPerf
// omits statistics that do not apply (aggregate and derived metrics carry
// only avg), so every statistic is optional: a nil field means "not given",
// never zero.
type MetricStats struct {
	Unit  string   `json:"unit"`
	Avg   *float64 `json:"avg,omitempty"`
	Min   *float64 `json:"min,omitempty"`
	Max   *float64 `json:"max,omitempty"`
	Sum   *float64 `json:"sum,omitempty"`
	Std   *float64 `json:"std,omitempty"`
	Count *int64   `json:"count,omitempty"`
	P1    *float64 `json:"p1,omitempty"`
	P5    *float64 `json:"p5,omitempty"`
	P10   *float64 `json:"p10,omitempty"`
	P25   *float64 `json:"p25,omitempty"`
	P50   *float64 `json:"p50,omitempty"`
	P75   *float64 `json:"p75,omitempty"`
	P90   *float64 `json:"p90,omitempty"`
	P95   *float64 `json:"p95,omitempty"`
	P99   *float64 `json:"p99,omitempty"`
}

// Percentile returns the pq statistic (q one of 1, 5, 10, 25, 50, 75, 90,
// 95, 99) if the block has it.
func (m MetricStats) Percentile(q int) (float64, bool) {
	var p *float64
	switch q {
	case 1:
		p = m.P1
	case 5:
		p = m.P5
	case 10:
		p = m.P10
	case 25:
		p = m.P25
	case 50:
		p = m.P50
	case 75:
		p = m.P75
	case 90:
		p = m.P90
	case 95:
		p = m.P95
	case 99:
		p = m.P99
	}
	if p == nil {
		return 0, false
	}
	return *p, true
}

// ErrorCount is one entry of the summary's error_summary.
type ErrorCount struct {
	ErrorDetails RequestError `json:"error_details"`
	Count        int          `json:"count"`
}

// Summary is profile_export_aiperf.json: run facts plus one metric block per
// tag (profiling phase only; warmup metrics are separate).
type Summary struct {
	SchemaVersion string          `json:"schema_version"`
	AIPerfVersion string          `json:"aiperf_version"`
	BenchmarkID   string          `json:"benchmark_id,omitempty"`
	StartTime     string          `json:"start_time,omitempty"`
	EndTime       string          `json:"end_time,omitempty"`
	WasCancelled  bool            `json:"was_cancelled"`
	IsComplete    *bool           `json:"is_complete,omitempty"`
	ErrorSummary  []ErrorCount    `json:"error_summary"`
	InputConfig   json.RawMessage `json:"input_config,omitempty"`
	RunInfo       json.RawMessage `json:"run_info,omitempty"`

	Metrics       map[string]MetricStats `json:"metrics"`
	WarmupMetrics map[string]MetricStats `json:"warmup_metrics,omitempty"`
	// Telemetry is telemetry_data: GPU metrics over the profiling phase
	// (AIPerf excludes warmup), present only when GPU telemetry was on.
	// Telemetry informs and never decides a verdict, so a block that does
	// not parse leaves Telemetry nil and says why in TelemetryError rather
	// than failing the summary.
	Telemetry      *Telemetry `json:"telemetry_data,omitempty"`
	TelemetryError string     `json:"telemetry_error,omitempty"`
}

// Telemetry is the summary's telemetry_data (AIPerf 0.13.0's
// TelemetryExportData): per collector endpoint ("pynvml", a DCGM URL), per
// GPU ("gpu_0", ...), metric blocks keyed nvidia_gpu_utilization (%),
// nvidia_memory_used (GB), nvidia_power_usage (W),
// nvidia_energy_consumption (MJ, a delta over the phase), ...
type Telemetry struct {
	Summary struct {
		// EndpointsConfigured are the collectors asked for
		// ("pynvml://localhost"); EndpointsSuccessful those that reported.
		EndpointsConfigured []string `json:"endpoints_configured"`
		EndpointsSuccessful []string `json:"endpoints_successful"`
	} `json:"summary"`
	Endpoints map[string]TelemetryEndpoint `json:"endpoints"`
}

// TelemetryEndpoint is one collector's GPUs.
type TelemetryEndpoint struct {
	GPUs map[string]TelemetryGPU `json:"gpus"`
}

// TelemetryGPU is one GPU's metric blocks.
type TelemetryGPU struct {
	Index    int                    `json:"gpu_index"`
	Name     string                 `json:"gpu_name"`
	UUID     string                 `json:"gpu_uuid"`
	Hostname string                 `json:"hostname"`
	Metrics  map[string]MetricStats `json:"metrics"`
}

// GPU finds a GPU of the telemetry by UUID (when given) or index, over
// every collector endpoint, in sorted endpoint order.
func (t *Telemetry) GPU(uuid string, index int) (TelemetryGPU, bool) {
	if t == nil {
		return TelemetryGPU{}, false
	}
	names := make([]string, 0, len(t.Endpoints))
	for n := range t.Endpoints {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		gpus := t.Endpoints[n].GPUs
		keys := make([]string, 0, len(gpus))
		for k := range gpus {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			g := gpus[k]
			if uuid != "" && g.UUID == uuid || uuid == "" && g.Index == index {
				return g, true
			}
		}
	}
	return TelemetryGPU{}, false
}

// Metric looks up a profiling-phase metric block by tag.
func (s *Summary) Metric(tag string) (MetricStats, bool) {
	m, ok := s.Metrics[tag]
	return m, ok
}

// scalar returns a metric's avg as an integer count (request_count and
// friends). ok is false when the metric is absent, which AIPerf does for
// zero-valued error counters.
func (s *Summary) count(tag string) (int64, bool) {
	m, ok := s.Metrics[tag]
	if !ok || m.Avg == nil {
		return 0, false
	}
	return int64(*m.Avg), true
}

// Summary top-level keys that are not metric blocks.
var summaryFields = map[string]bool{
	"schema_version": true, "aiperf_version": true, "benchmark_id": true,
	"start_time": true, "end_time": true, "was_cancelled": true, "is_complete": true,
	"error_summary": true, "input_config": true, "run_info": true,
	"warmup_metrics": true, "telemetry_data": true, "branch_stats": true,
}

// ParseSummary reads profile_export_aiperf.json. Unknown keys are tolerated;
// schema_version, aiperf_version, was_cancelled and error_summary are
// required. Any other top-level object with a "unit" string is a metric
// block.
func ParseSummary(path string) (*Summary, error) {
	data, err := fileio.ReadFile(context.Background(), path, fileio.MaxDocumentBytes)
	if err != nil {
		return nil, err
	}
	return parseSummary(path, data)
}

func parseSummary(path string, data []byte) (*Summary, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, jsonError(path, 0, data, err)
	}
	if top == nil {
		return nil, &ParseError{File: path, Err: errors.New("not a JSON object")}
	}
	s := &Summary{Metrics: map[string]MetricStats{}}
	fields := []struct {
		key      string
		dst      any
		required bool
	}{
		{"schema_version", &s.SchemaVersion, true},
		{"aiperf_version", &s.AIPerfVersion, true},
		{"was_cancelled", &s.WasCancelled, true},
		{"error_summary", &s.ErrorSummary, true},
		{"benchmark_id", &s.BenchmarkID, false},
		{"start_time", &s.StartTime, false},
		{"end_time", &s.EndTime, false},
		{"is_complete", &s.IsComplete, false},
		{"warmup_metrics", &s.WarmupMetrics, false},
	}
	for _, f := range fields {
		raw, ok := top[f.key]
		if !ok || bytes.Equal(raw, []byte("null")) {
			if f.required {
				return nil, &ParseError{File: path, Field: f.key, Err: errMissing}
			}
			continue
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			return nil, &ParseError{File: path, Field: f.key, Err: fmt.Errorf("invalid: %w", err)}
		}
	}
	if s.SchemaVersion == "" {
		return nil, &ParseError{File: path, Field: "schema_version", Err: errors.New("empty")}
	}
	if s.AIPerfVersion == "" {
		return nil, &ParseError{File: path, Field: "aiperf_version", Err: errors.New("empty")}
	}
	if raw, ok := top["telemetry_data"]; ok && !bytes.Equal(raw, []byte("null")) {
		var t Telemetry
		if err := json.Unmarshal(raw, &t); err != nil {
			s.TelemetryError = fmt.Sprintf("%s: telemetry_data: %v", path, err)
		} else {
			s.Telemetry = &t
		}
	}
	s.InputConfig = top["input_config"]
	s.RunInfo = top["run_info"]
	for key, raw := range top {
		if summaryFields[key] || len(raw) == 0 || raw[0] != '{' {
			continue
		}
		var probe struct {
			Unit *string `json:"unit"`
		}
		if json.Unmarshal(raw, &probe) != nil || probe.Unit == nil {
			continue
		}
		var m MetricStats
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, &ParseError{File: path, Field: key, Err: fmt.Errorf("invalid metric block: %w", err)}
		}
		s.Metrics[key] = m
	}
	return s, nil
}
