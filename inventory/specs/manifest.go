package specs

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// MODEL.toml and manifest parsing: a file that is not what it should be
// is a problem message, never a skipped file.

// parseModelTOML fills the family from MODEL.toml and returns the declared
// manifest paths, or a problem message.
func parseModelTOML(data []byte, fam *Family) ([]string, string) {
	var doc map[string]any
	if err := toml.Unmarshal(data, &doc); err != nil {
		return nil, "malformed TOML: " + text.OneLine(err.Error())
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

// ParseManifest decodes a manifest of the layout. A non-empty second
// result means the file is not a JSON object at all; field problems go to
// m.Problems. Every problem names its line and field ("line 7:
// tensor_parallel_size: must be a positive integer, got 0"); a missing
// field names the line of the object. The steps: decode the object, then
// its identity fields, checkpoint, quantization, build arguments and
// parallelism, and test cases.
func ParseManifest(l Layout, p, dir string, data []byte) (*Manifest, string) {
	raw, msg := decodeObject(data)
	if msg != "" {
		return nil, msg
	}
	m := &Manifest{Path: p, Dir: dir, Layout: l.Name, TaskKey: l.TaskKey, Raw: raw, BlobLen: len(data), Blob: BlobID(data)}
	mr := &manifestReader{m: m, raw: raw, pos: positions(data), newer: l.Name == LayoutFamilies}
	m.Name = mr.str("name", true)
	m.Bundle = mr.str("bundle", true)
	m.Family = mr.str("family", true)
	m.TaskStrategy = mr.str(l.TaskKey, true)
	m.RuntimeStrategy = mr.str("runtime_strategy", false)
	// The newer layout requires precision (TRTMC's catalog refuses a
	// manifest without it); the older one defaults it.
	m.Precision = mr.str("precision", mr.newer)
	m.Revision = mr.str("hf_revision", false)
	m.BenchmarkExclusion = mr.str("benchmark_exclusion_reason", false)
	mr.checkpoint()
	m.Quantization = quantization(raw["quantization"])
	mr.build()
	if dr, ok := raw["distributed_runtime"].(map[string]any); ok {
		m.Distributed, _ = dr["enabled"].(bool)
	}
	if v, ok := raw[maxSequenceKey(l)]; ok && v != nil {
		m.MaxSequence = intOf(v)
	}
	mr.testcases()
	return m, ""
}

// decodeObject decodes one JSON object (numbers kept as written); a
// non-empty message says, with its line, why the data is not one.
func decodeObject(data []byte) (map[string]any, string) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		msg := "malformed JSON: " + text.OneLine(err.Error())
		if line := fileio.JSONLine(data, err); line > 0 {
			msg = fmt.Sprintf("line %d: %s", line, msg)
		}
		return nil, msg
	}
	if raw == nil {
		return nil, "line 1: malformed JSON: not an object"
	}
	if dec.More() {
		return nil, fmt.Sprintf("line %d: malformed JSON: trailing data after the object", fileio.LineAt(data, dec.InputOffset()))
	}
	return raw, ""
}

// manifestReader reads the fields of one decoded manifest into m, each
// problem with its line.
type manifestReader struct {
	m     *Manifest
	raw   map[string]any
	pos   *jsonPos
	newer bool // the families/<f>/tests/manifests layout
}

func (mr *manifestReader) problem(line int, field, format string, args ...any) {
	mr.m.Problems = append(mr.m.Problems, fmt.Sprintf("line %d: %s: %s", line, field, fmt.Sprintf(format, args...)))
}

// str reads a string field, trimmed; a required one must be present and
// not blank.
func (mr *manifestReader) str(key string, required bool) string {
	v, ok := mr.raw[key]
	if !ok || v == nil {
		if required {
			mr.problem(mr.pos.key(key), key, "missing")
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		mr.problem(mr.pos.key(key), key, "must be a string, got %s", CompactJSON(v))
		return ""
	}
	if required && strings.TrimSpace(s) == "" {
		mr.problem(mr.pos.key(key), key, "is empty")
	}
	return strings.TrimSpace(s)
}

// checkpoint reads the checkpoint and the field that named it.
func (mr *manifestReader) checkpoint() {
	m := mr.m
	switch {
	case mr.raw["hf_id"] != nil:
		m.Checkpoint, m.CheckpointField = mr.str("hf_id", true), "hf_id"
	case !mr.newer && mr.raw["model_id"] != nil:
		// TRTMC's older catalog accepts model_id where there is no hf_id.
		m.Checkpoint, m.CheckpointField = mr.str("model_id", true), "model_id"
	case mr.newer:
		// The newer catalog builds from `hf_id or name`: a manifest without
		// hf_id names a local checkpoint, and its name identifies it.
		m.Checkpoint, m.CheckpointField = m.Name, "name"
	default:
		mr.problem(mr.pos.key("hf_id"), "hf_id", "missing (and no model_id)")
	}
}

// quantization is the manifest's quantization as one string: the string,
// an object's format, or the value's compact JSON.
func quantization(q any) string {
	switch x := q.(type) {
	case nil:
		return ""
	case string:
		return x
	case map[string]any:
		if f, ok := x["format"].(string); ok {
			return f
		}
	}
	return CompactJSON(q)
}

// build reads the build arguments' names (build_args, or build in the
// newer layout) and the parallelism they or the manifest declare.
func (mr *manifestReader) build() {
	m := mr.m
	argsKey := "build_args"
	if mr.newer {
		argsKey = "build"
	}
	var args map[string]any
	if ba, ok := mr.raw[argsKey]; ok && ba != nil {
		args, ok = ba.(map[string]any)
		if !ok {
			mr.problem(mr.pos.key(argsKey), argsKey, "must be an object, got %s", CompactJSON(ba))
		}
		for k := range args {
			m.BuildArgs = append(m.BuildArgs, k)
		}
		sort.Strings(m.BuildArgs)
	}
	if mr.newer {
		m.parseParallelSizes(mr.raw, args, mr.pos, mr.problem)
		return
	}
	pv, ok := args["parallel"]
	if !ok || pv == nil {
		return
	}
	pm, ok := pv.(map[string]any)
	if !ok {
		mr.problem(mr.pos.key(argsKey), "build_args.parallel", "must be an object, got %s", CompactJSON(pv))
		return
	}
	m.Parallel = &Parallel{Field: "build_args.parallel"}
	m.Parallel.Mode, _ = pm["mode"].(string)
	m.Parallel.TP = intOf(pm["tp_size"])
	m.Parallel.CP = intOf(pm["cp_size"])
}

// testcases reads the test cases, which must be a non-empty list of
// objects.
func (mr *manifestReader) testcases() {
	m, pos := mr.m, mr.pos
	tcs, ok := mr.raw["testcases"].([]any)
	switch {
	case mr.raw["testcases"] == nil:
		mr.problem(pos.key("testcases"), "testcases", "missing")
	case !ok:
		mr.problem(pos.key("testcases"), "testcases", "must be a list, got %s", CompactJSON(mr.raw["testcases"]))
	case len(tcs) == 0:
		mr.problem(pos.key("testcases"), "testcases", "is empty")
	}
	for i, tc := range tcs {
		obj, ok := tc.(map[string]any)
		if !ok {
			mr.problem(pos.testcase(i), fmt.Sprintf("testcases[%d]", i), "must be an object, got %s", CompactJSON(tc))
			continue
		}
		t := Testcase{}
		t.Name, _ = obj["name"].(string)
		t.CITier, _ = obj["ci_tier"].(string)
		t.Category, _ = obj["test_category"].(string)
		t.Premerge, _ = obj["premerge"].(bool)
		if st, ok := obj["selected_task"]; ok {
			s, isStr := st.(string)
			if !isStr || strings.TrimSpace(s) == "" || s != strings.TrimSpace(s) {
				mr.problem(pos.testcase(i), fmt.Sprintf("testcases[%d].selected_task", i), "must be a non-empty task id, got %s", CompactJSON(st))
			}
			t.SelectedTask = s
		}
		m.Testcases = append(m.Testcases, t)
	}
	if m.Testcases == nil {
		m.Testcases = []Testcase{}
	}
}

// maxSequenceKey is the key of the build's sequence (cache) length.
func maxSequenceKey(l Layout) string {
	if l.Name == LayoutFamilies {
		return "max_sequence_length"
	}
	return "max_cache_length"
}

// parseParallelSizes reads the newer layout's tensor_parallel_size and
// context_parallel_size: at the top level or in `build`, each a positive
// integer (TRTMC's catalog refuses anything else).
func (m *Manifest) parseParallelSizes(raw, build map[string]any, pos *jsonPos, problem func(int, string, string, ...any)) {
	size := func(key string) (int, string) {
		v, where := raw[key], key
		if v == nil {
			if bv, ok := build[key]; ok {
				v, where = bv, "build."+key
			}
		}
		if v == nil {
			return 0, ""
		}
		n, ok := v.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil || i < 1 {
			line := pos.key(key)
			if where != key {
				line = pos.key("build")
			}
			problem(line, where, "must be a positive integer, got %s", CompactJSON(v))
			return 0, ""
		}
		return int(i), where
	}
	tp, tpField := size("tensor_parallel_size")
	cp, cpField := size("context_parallel_size")
	if tpField == "" && cpField == "" {
		return
	}
	m.Parallel = &Parallel{TP: tp, CP: cp, Field: tpField}
	if tp <= 1 && cp > 1 {
		m.Parallel.Field = cpField
	}
	if m.Parallel.Field == "" {
		m.Parallel.Field = cpField
	}
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

// BlobID is git's object id of a file's bytes (SHA-1 of "blob <size>\x00"
// and the bytes), the id `git hash-object` prints.
func BlobID(data []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}
