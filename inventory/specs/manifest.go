package specs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// MODEL.toml and manifest parsing: a file that is not what it should be
// is a problem message, never a skipped file.

// parseModelTOML fills the family from MODEL.toml and returns the declared
// manifest paths, or a problem message.
func parseModelTOML(data []byte, fam *Family) ([]string, string) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, "malformed TOML: " + OneLine(err.Error())
	}
	fam.ID, _ = doc["id"].(string)
	fam.Plugin, _ = doc["plugin"].(string)
	if defs, ok := doc["e2e_defaults"].(map[string]any); ok {
		for k := range defs {
			fam.Defaults = append(fam.Defaults, k)
		}
		sort.Strings(fam.Defaults)
	}
	raw, ok := doc["test_manifests"]
	if !ok {
		return nil, "no test_manifests"
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, "test_manifests must be a list of strings"
	}
	var out []string
	for i, item := range list {
		s, ok := item.(string)
		if !ok || s == "" {
			return nil, fmt.Sprintf("test_manifests[%d] must be a non-empty string", i)
		}
		out = append(out, s)
	}
	fam.Declared = append([]string{}, out...)
	return out, ""
}

// ParseManifest decodes a manifest. A non-empty second result means the
// file is not a JSON object at all; field problems go to m.Problems.
func ParseManifest(p, dir string, data []byte) (*Manifest, string) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, "malformed JSON: " + OneLine(err.Error())
	}
	if raw == nil {
		return nil, "malformed JSON: not an object"
	}
	if dec.More() {
		return nil, "malformed JSON: trailing data after the object"
	}
	m := &Manifest{Path: p, Dir: dir, Raw: raw, BlobLen: len(data)}
	str := func(key string, required bool) string {
		v, ok := raw[key]
		if !ok || v == nil {
			if required {
				m.Problems = append(m.Problems, fmt.Sprintf("missing %s", key))
			}
			return ""
		}
		s, ok := v.(string)
		if !ok {
			m.Problems = append(m.Problems, fmt.Sprintf("%s must be a string", key))
			return ""
		}
		if required && strings.TrimSpace(s) == "" {
			m.Problems = append(m.Problems, fmt.Sprintf("%s is empty", key))
		}
		return strings.TrimSpace(s)
	}
	m.Name = str("name", true)
	m.Bundle = str("bundle", true)
	m.Family = str("family", true)
	m.TaskStrategy = str("task_strategy", true)
	m.RuntimeStrategy = str("runtime_strategy", false)
	m.Precision = str("precision", false)
	m.Revision = str("hf_revision", false)
	m.BenchmarkExclusion = str("benchmark_exclusion_reason", false)
	// TRTMC's catalog accepts model_id where there is no hf_id.
	switch {
	case raw["hf_id"] != nil:
		m.Checkpoint, m.CheckpointField = str("hf_id", true), "hf_id"
	case raw["model_id"] != nil:
		m.Checkpoint, m.CheckpointField = str("model_id", true), "model_id"
	default:
		m.Problems = append(m.Problems, "missing hf_id (or model_id)")
	}
	if q, ok := raw["quantization"]; ok && q != nil {
		switch x := q.(type) {
		case string:
			m.Quantization = x
		case map[string]any:
			if f, ok := x["format"].(string); ok {
				m.Quantization = f
			} else {
				m.Quantization = CompactJSON(x)
			}
		default:
			m.Quantization = CompactJSON(x)
		}
	}
	if ba, ok := raw["build_args"]; ok && ba != nil {
		args, ok := ba.(map[string]any)
		if !ok {
			m.Problems = append(m.Problems, "build_args must be an object")
		}
		for k := range args {
			m.BuildArgs = append(m.BuildArgs, k)
		}
		sort.Strings(m.BuildArgs)
		if pv, ok := args["parallel"]; ok && pv != nil {
			pm, ok := pv.(map[string]any)
			if !ok {
				m.Problems = append(m.Problems, "build_args.parallel must be an object")
			} else {
				m.Parallel = &Parallel{}
				m.Parallel.Mode, _ = pm["mode"].(string)
				m.Parallel.TP = intOf(pm["tp_size"])
				m.Parallel.CP = intOf(pm["cp_size"])
			}
		}
	}
	if dr, ok := raw["distributed_runtime"].(map[string]any); ok {
		m.Distributed, _ = dr["enabled"].(bool)
	}
	tcs, ok := raw["testcases"].([]any)
	switch {
	case raw["testcases"] == nil:
		m.Problems = append(m.Problems, "missing testcases")
	case !ok:
		m.Problems = append(m.Problems, "testcases must be a list")
	case len(tcs) == 0:
		m.Problems = append(m.Problems, "testcases is empty")
	}
	for i, tc := range tcs {
		obj, ok := tc.(map[string]any)
		if !ok {
			m.Problems = append(m.Problems, fmt.Sprintf("testcases[%d] must be an object", i))
			continue
		}
		t := Testcase{}
		t.Name, _ = obj["name"].(string)
		t.CITier, _ = obj["ci_tier"].(string)
		t.Category, _ = obj["test_category"].(string)
		m.Testcases = append(m.Testcases, t)
	}
	if m.Testcases == nil {
		m.Testcases = []Testcase{}
	}
	return m, ""
}

func intOf(v any) int {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		if err == nil {
			return int(n)
		}
	case float64:
		return int(x)
	case int:
		return x
	}
	return 0
}
