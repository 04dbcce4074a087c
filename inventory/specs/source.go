// Package specs reads the TRTMC model specs at a commit (source.go: the
// models root; manifest.go: MODEL.toml and manifest parsing), the
// spec-groups configuration (config.go) and the classification of manifests
// into normal, variant and partial profiles (classify.go). Git access is in
// gitread; reconcile, drift, write-back and the ci job are packages of their
// own under inventory/.
package specs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

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

// ReadCommit reads a resolved commit (ref is only recorded): it lists the
// models root, reads every MODEL.toml and the manifests they list (and the
// unlisted ones beside them), then checks names and attributes families and
// problems to groups.
func (s Source) ReadCommit(ctx context.Context, ref, commit string) (*Snapshot, error) {
	root := s.Config.ModelsRoot
	snap := &Snapshot{Repo: s.Repo, Ref: ref, Commit: commit, Root: root}
	files, err := s.Git.ListFiles(ctx, commit, root)
	if err != nil {
		return nil, fmt.Errorf("list %s at %s: %w", root, ShortSHA(commit), err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: %s has no %s/ at %s (%s)", ErrNotTRTMC, s.Repo, root, ref, ShortSHA(commit))
	}
	dirs, fams := familyFiles(root, files)
	listings, want, err := s.readListings(ctx, snap, commit, dirs, fams)
	if err != nil {
		return nil, err
	}
	data, err := s.Git.ReadFiles(ctx, commit, want)
	if err != nil {
		return nil, fmt.Errorf("read manifests at %s: %w", ShortSHA(commit), err)
	}
	for _, d := range dirs {
		snap.addManifests(s.Config, commit, d, fams[d], listings[d], data)
	}
	snap.checkUniqueNames()
	snap.attribute(s.Config)
	snap.sortProblems()
	return snap, nil
}

// famFiles are the files of one family folder at the commit.
type famFiles struct {
	toml      string
	manifests []string // manifests/*.json present
	all       map[string]bool
}

// familyFiles groups the files under root by family folder; dirs are the
// folders in order.
func familyFiles(root string, files []string) (dirs []string, fams map[string]*famFiles) {
	fams = map[string]*famFiles{}
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
	return slices.Sorted(maps.Keys(fams)), fams
}

// listing is what a family's MODEL.toml lists.
type listing struct {
	fam      *Family
	declared map[string]bool // repository paths listed
	order    []string        // repository paths, MODEL.toml order then unlisted
	trusted  bool            // MODEL.toml listing usable
}

// readListings reads every MODEL.toml, adds the families to snap and
// returns each family's listing and every manifest path to read.
func (s Source) readListings(ctx context.Context, snap *Snapshot, commit string, dirs []string, fams map[string]*famFiles) (map[string]*listing, []string, error) {
	var tomls []string
	for _, d := range dirs {
		if fams[d].toml != "" {
			tomls = append(tomls, fams[d].toml)
		}
	}
	tomlData, err := s.Git.ReadFiles(ctx, commit, tomls)
	if err != nil {
		return nil, nil, fmt.Errorf("read MODEL.toml files at %s: %w", ShortSHA(commit), err)
	}
	listings := map[string]*listing{}
	var want []string
	for _, d := range dirs {
		ff := fams[d]
		fam := &Family{Dir: d, ModelTOML: ff.toml, Declared: []string{}, Defaults: []string{}}
		snap.Families = append(snap.Families, fam)
		l := &listing{fam: fam, declared: map[string]bool{}}
		listings[d] = l
		famDir := snap.Root + "/" + d
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
	return listings, want, nil
}

// addManifests parses the manifests of family folder d from data, adding
// them and their problems to the snapshot.
func (snap *Snapshot) addManifests(cfg *Config, commit, d string, ff *famFiles, l *listing, data map[string][]byte) {
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

// checkUniqueNames reports a manifest whose name an earlier one has:
// inventory ids match manifest names.
func (snap *Snapshot) checkUniqueNames() {
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
}

// attribute gives each family its task strategies and groups, then each
// problem the groups it concerns.
func (snap *Snapshot) attribute(cfg *Config) {
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
}

// sortProblems orders the problems by path then kind; never nil.
func (snap *Snapshot) sortProblems() {
	sort.SliceStable(snap.Problems, func(i, j int) bool {
		if snap.Problems[i].Path != snap.Problems[j].Path {
			return snap.Problems[i].Path < snap.Problems[j].Path
		}
		return snap.Problems[i].Kind < snap.Problems[j].Kind
	})
	if snap.Problems == nil {
		snap.Problems = []*Problem{}
	}
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

// EffectivePrecision is the declared precision, or the configured default.
func (m *Manifest) EffectivePrecision(cfg *Config) string {
	if m.Precision != "" {
		return m.Precision
	}
	return cfg.DefaultPrecision
}
