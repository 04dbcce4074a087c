// Package specs reads the TRTMC model specs at a commit (source.go: the
// models root, MODEL.toml and manifest parsing), the
// spec-groups configuration (config.go) and the classification of manifests
// into normal, variant and partial profiles (classify.go). Git access is in
// gitread; reconcile, drift, write-back and the ci job are packages of their
// own under inventory/.
package specs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
)

// ErrNotTRTMC: the commit has no models root (tests/e2e/models).
var ErrNotTRTMC = errors.New("not a TRTMC checkout")

// Source reads TRTMC model specs from a git repository at a ref.
type Source struct {
	Git    gitread.Repo
	Config *Config
	// Repo is recorded in snapshots (the --repo path).
	Repo string
}

// Snapshot is every model spec of a TRTMC tree at one commit.
type Snapshot struct {
	Repo   string `json:"repo"`
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
	Root   string `json:"models_root"`

	Families  []*Family   `json:"families"`
	Manifests []*Manifest `json:"manifests"`
	// Problems are spec files that are unlisted, missing or malformed:
	// reported, never skipped.
	Problems []*Problem `json:"problems"`
}

// Family is one folder under the models root.
type Family struct {
	Dir string `json:"dir"`
	// ID and Plugin come from MODEL.toml.
	ID     string `json:"id,omitempty"`
	Plugin string `json:"plugin,omitempty"`
	// ModelTOML is the repository path of MODEL.toml, "" when there is none.
	ModelTOML string `json:"model_toml,omitempty"`
	// Declared are the test_manifests entries, as written.
	Declared []string `json:"test_manifests"`
	// Defaults are the task strategies of its [e2e_defaults.*] tables.
	Defaults []string `json:"e2e_defaults"`
	// TaskStrategies are those of its manifests and e2e_defaults; Groups
	// are the configured groups among them. Both attribute problems.
	TaskStrategies []string `json:"task_strategies"`
	Groups         []string `json:"groups"`
}

// Manifest is one `manifests/<profile>.json`.
type Manifest struct {
	Path    string `json:"path"`
	Dir     string `json:"family_dir"`
	Listed  bool   `json:"listed"`
	BlobLen int    `json:"-"`

	Name            string    `json:"name"`
	Checkpoint      string    `json:"checkpoint"`
	CheckpointField string    `json:"checkpoint_field"`
	Revision        string    `json:"revision,omitempty"`
	Bundle          string    `json:"bundle"`
	Family          string    `json:"family"`
	TaskStrategy    string    `json:"task_strategy"`
	RuntimeStrategy string    `json:"runtime_strategy,omitempty"`
	Precision       string    `json:"precision,omitempty"`
	Quantization    string    `json:"quantization,omitempty"`
	Parallel        *Parallel `json:"parallel,omitempty"`
	BuildArgs       []string  `json:"build_args,omitempty"`
	Distributed     bool      `json:"distributed,omitempty"`
	// BenchmarkExclusion is TRTMC's own `benchmark_exclusion_reason`.
	BenchmarkExclusion string     `json:"benchmark_exclusion_reason,omitempty"`
	Testcases          []Testcase `json:"testcases"`

	// Group is the group of its task strategy ("" when none).
	Group string `json:"group,omitempty"`
	// Problems make the manifest unusable (missing required fields...).
	Problems []string `json:"problems,omitempty"`

	Raw map[string]any `json:"-"`
}

// Parallel is a manifest's build_args.parallel.
type Parallel struct {
	Mode string `json:"mode"`
	TP   int    `json:"tp_size,omitempty"`
	CP   int    `json:"cp_size,omitempty"`
}

// Multi reports whether the layout uses more than one device.
func (p *Parallel) Multi() bool {
	return p != nil && (p.TP > 1 || p.CP > 1 || (p.Mode != "" && p.Mode != "single" && p.Mode != "none"))
}

func (p *Parallel) String() string {
	if p == nil {
		return ""
	}
	s := p.Mode
	if p.TP > 0 {
		s += fmt.Sprintf(" tp=%d", p.TP)
	}
	if p.CP > 0 {
		s += fmt.Sprintf(" cp=%d", p.CP)
	}
	return strings.TrimSpace(s)
}

// Testcase is the part of a manifest testcase the classifier looks at.
type Testcase struct {
	Name     string `json:"name"`
	CITier   string `json:"ci_tier,omitempty"`
	Category string `json:"test_category,omitempty"`
}

// Problem kinds.
const (
	ProblemUnlisted      = "unlisted"       // a manifest its MODEL.toml does not list
	ProblemMissingFile   = "missing-file"   // listed in MODEL.toml, absent
	ProblemMalformedJSON = "malformed-json" // not JSON, or not an object
	ProblemInvalid       = "invalid"        // JSON, but required fields missing or mistyped
	ProblemModelTOML     = "model-toml"     // MODEL.toml unreadable or without test_manifests
	ProblemDuplicateName = "duplicate-name" // two manifests with one name
)

// Problem is a spec file that could not be taken as it is.
type Problem struct {
	Kind    string `json:"kind"`
	Path    string `json:"path"`
	Dir     string `json:"family_dir"`
	Message string `json:"message"`
	// Groups the problem belongs to (possibly none of the configured ones).
	Groups []string `json:"groups"`
	// Unattributed: nothing tells which task strategy the file is for (a
	// malformed manifest in a family with no other), so it shows in every
	// group.
	Unattributed bool `json:"unattributed,omitempty"`
}

func (p *Problem) String() string { return fmt.Sprintf("%s: %s: %s", p.Path, p.Kind, p.Message) }

// Read reads every family and manifest at ref.
func (s Source) Read(ctx context.Context, ref string) (*Snapshot, error) {
	commit, err := s.Git.Commit(ctx, ref)
	if err != nil {
		return nil, err
	}
	return s.ReadCommit(ctx, ref, commit)
}

// ReadCommit reads a resolved commit (ref is only recorded).
func (s Source) ReadCommit(ctx context.Context, ref, commit string) (*Snapshot, error) {
	cfg := s.Config
	root := cfg.ModelsRoot
	snap := &Snapshot{Repo: s.Repo, Ref: ref, Commit: commit, Root: root}
	files, err := s.Git.ListFiles(ctx, commit, root)
	if err != nil {
		return nil, fmt.Errorf("list %s at %s: %w", root, ShortSHA(commit), err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: %s has no %s/ at %s (%s)", ErrNotTRTMC, s.Repo, root, ref, ShortSHA(commit))
	}
	type famFiles struct {
		toml      string
		manifests []string // manifests/*.json present
		all       map[string]bool
	}
	fams := map[string]*famFiles{}
	for _, f := range files {
		rel := strings.TrimPrefix(f, root+"/")
		dir, rest, ok := strings.Cut(rel, "/")
		if !ok {
			continue
		}
		ff := fams[dir]
		if ff == nil {
			ff = &famFiles{all: map[string]bool{}}
			fams[dir] = ff
		}
		ff.all[f] = true
		switch {
		case rest == "MODEL.toml":
			ff.toml = f
		case path.Dir(rest) == "manifests" && strings.HasSuffix(rest, ".json"):
			ff.manifests = append(ff.manifests, f)
		}
	}
	dirs := make([]string, 0, len(fams))
	for d := range fams {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)

	// First pass: read every MODEL.toml.
	var tomls []string
	for _, d := range dirs {
		if fams[d].toml != "" {
			tomls = append(tomls, fams[d].toml)
		}
	}
	tomlData, err := s.Git.ReadFiles(ctx, commit, tomls)
	if err != nil {
		return nil, fmt.Errorf("read MODEL.toml files at %s: %w", ShortSHA(commit), err)
	}

	type listing struct {
		fam      *Family
		declared map[string]bool // repository paths listed
		order    []string        // repository paths, MODEL.toml order then unlisted
		trusted  bool            // MODEL.toml listing usable
	}
	listings := map[string]*listing{}
	var want []string
	for _, d := range dirs {
		ff := fams[d]
		fam := &Family{Dir: d, ModelTOML: ff.toml, Declared: []string{}, Defaults: []string{}}
		snap.Families = append(snap.Families, fam)
		l := &listing{fam: fam, declared: map[string]bool{}}
		listings[d] = l
		famDir := root + "/" + d
		if ff.toml != "" {
			decl, perr := parseModelTOML(tomlData[ff.toml], fam)
			if perr != "" {
				snap.Problems = append(snap.Problems, &Problem{Kind: ProblemModelTOML, Path: ff.toml, Dir: d, Message: perr})
			} else {
				l.trusted = true
				for _, item := range decl {
					p := path.Clean(path.Join(famDir, item))
					if l.declared[p] {
						snap.Problems = append(snap.Problems, &Problem{Kind: ProblemModelTOML, Path: ff.toml, Dir: d,
							Message: fmt.Sprintf("test_manifests lists %s twice", item)})
						continue
					}
					l.declared[p] = true
					l.order = append(l.order, p)
				}
			}
		}
		for _, m := range ff.manifests {
			if !l.declared[m] {
				l.order = append(l.order, m)
			}
		}
		want = append(want, l.order...)
	}
	data, err := s.Git.ReadFiles(ctx, commit, want)
	if err != nil {
		return nil, fmt.Errorf("read manifests at %s: %w", ShortSHA(commit), err)
	}

	for _, d := range dirs {
		l := listings[d]
		ff := fams[d]
		for _, p := range l.order {
			listed := l.declared[p]
			if !l.trusted {
				// No MODEL.toml (TRTMC's catalog then globs manifests/*.json)
				// or an unreadable one (already reported).
				listed = true
			}
			raw, ok := data[p]
			if !ok {
				msg := fmt.Sprintf("listed in %s but absent at %s", ff.toml, ShortSHA(commit))
				if ff.all[p] {
					msg = fmt.Sprintf("listed in %s but not a regular file", ff.toml)
				}
				snap.Problems = append(snap.Problems, &Problem{Kind: ProblemMissingFile, Path: p, Dir: d, Message: msg})
				continue
			}
			m, perr := ParseManifest(p, d, raw)
			if perr != "" {
				snap.Problems = append(snap.Problems, &Problem{Kind: ProblemMalformedJSON, Path: p, Dir: d, Message: perr})
				continue
			}
			m.Listed = listed
			m.Group = cfg.GroupOf(m.TaskStrategy)
			if !listed {
				snap.Problems = append(snap.Problems, &Problem{Kind: ProblemUnlisted, Path: p, Dir: d,
					Message: fmt.Sprintf("not listed in %s test_manifests", ff.toml)})
			}
			for _, msg := range m.Problems {
				snap.Problems = append(snap.Problems, &Problem{Kind: ProblemInvalid, Path: p, Dir: d, Message: msg})
			}
			snap.Manifests = append(snap.Manifests, m)
		}
	}

	// Names must be unique: inventory ids match manifest names.
	byName := map[string]*Manifest{}
	for _, m := range snap.Manifests {
		if m.Name == "" {
			continue
		}
		if prev, dup := byName[m.Name]; dup {
			msg := fmt.Sprintf("name %q is also the name of %s", m.Name, prev.Path)
			m.Problems = append(m.Problems, msg)
			snap.Problems = append(snap.Problems, &Problem{Kind: ProblemDuplicateName, Path: m.Path, Dir: m.Dir, Message: msg})
			continue
		}
		byName[m.Name] = m
	}

	// Attribute families, then problems, to groups.
	famByDir := map[string]*Family{}
	for _, f := range snap.Families {
		famByDir[f.Dir] = f
		strategies := map[string]bool{}
		for _, ts := range f.Defaults {
			strategies[ts] = true
		}
		for _, m := range snap.Manifests {
			if m.Dir == f.Dir && m.TaskStrategy != "" {
				strategies[m.TaskStrategy] = true
			}
		}
		f.TaskStrategies = slices.Sorted(maps.Keys(strategies))
		groups := map[string]bool{}
		for ts := range strategies {
			if g := cfg.GroupOf(ts); g != "" {
				groups[g] = true
			}
		}
		f.Groups = slices.Sorted(maps.Keys(groups))
	}
	manByPath := map[string]*Manifest{}
	for _, m := range snap.Manifests {
		manByPath[m.Path] = m
	}
	for _, p := range snap.Problems {
		p.Groups = []string{}
		if m, ok := manByPath[p.Path]; ok && m.TaskStrategy != "" {
			if m.Group != "" {
				p.Groups = []string{m.Group}
			}
			continue
		}
		f := famByDir[p.Dir]
		p.Groups = append(p.Groups, f.Groups...)
		p.Unattributed = len(f.TaskStrategies) == 0
	}
	sort.SliceStable(snap.Problems, func(i, j int) bool {
		if snap.Problems[i].Path != snap.Problems[j].Path {
			return snap.Problems[i].Path < snap.Problems[j].Path
		}
		return snap.Problems[i].Kind < snap.Problems[j].Kind
	})
	if snap.Problems == nil {
		snap.Problems = []*Problem{}
	}
	return snap, nil
}

// attributable reports whether a problem concerns the group: it is
// attributed to it, or cannot be attributed at all (then it may be the
// group's, and is shown rather than dropped).
func (p *Problem) attributable(group string) bool {
	if p.Unattributed {
		return true
	}
	for _, g := range p.Groups {
		if g == group {
			return true
		}
	}
	return false
}

// ProblemsFor returns the problems that concern a group.
func (s *Snapshot) ProblemsFor(group string) []*Problem {
	var out []*Problem
	for _, p := range s.Problems {
		if p.attributable(group) {
			out = append(out, p)
		}
	}
	return out
}

// FamiliesOf returns the family folders that belong to a group.
func (s *Snapshot) FamiliesOf(group string) []string {
	var out []string
	for _, f := range s.Families {
		for _, g := range f.Groups {
			if g == group {
				out = append(out, f.Dir)
			}
		}
	}
	return out
}

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

// EffectivePrecision is the declared precision, or the configured default.
func (m *Manifest) EffectivePrecision(cfg *Config) string {
	if m.Precision != "" {
		return m.Precision
	}
	return cfg.DefaultPrecision
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
