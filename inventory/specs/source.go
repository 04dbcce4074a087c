// Package specs reads the TRTMC model specs at a commit (source.go: the
// models root; manifest.go: MODEL.toml and manifest parsing), the
// spec-groups configuration (config.go) and the classification of manifests
// into normal, variant and partial profiles (classify.go), each problem
// with its line (jsonpos.go for JSON). TRTMC has had two layouts
// (layout.go): tests/e2e/models/<f>/manifests listed by MODEL.toml, or
// families/<f>/tests/manifests; each is read as the commit holds it. Git
// access is in gitread; reconcile, drift, write-back and the ci job are
// packages of their own under inventory/; specstest builds the fixture
// repositories their tests read (one in the older layout, one that moves
// to the newer).
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

// ErrNotTRTMC is returned when the commit has neither layout's root (tests/e2e/models,
// families).
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
	// Layouts are the layouts the commit holds (one, or both during a move).
	Layouts []Layout `json:"layouts"`

	Families  []*Family   `json:"families"`
	Manifests []*Manifest `json:"manifests"`
	// Problems are spec files that are unlisted, missing or malformed:
	// reported, never skipped.
	Problems []*Problem `json:"problems"`
}

// Family is one family folder of a layout.
type Family struct {
	Dir string `json:"dir"`
	// Layout is the layout it is in; Path its repository path.
	Layout string `json:"layout"`
	Path   string `json:"path"`
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
	// Blob is the git object id of the manifest's bytes as read (the
	// version of the file: `git log --find-object` finds the commits that
	// hold it; two versions of one manifest differ here).
	Blob string `json:"blob,omitempty"`
	// Layout is the layout the manifest was read in (LayoutE2EModels or
	// LayoutFamilies); TaskKey is the key its task came from there.
	Layout  string `json:"layout"`
	TaskKey string `json:"task_key"`

	Name            string `json:"name"`
	Checkpoint      string `json:"checkpoint"`
	CheckpointField string `json:"checkpoint_field"`
	Revision        string `json:"revision,omitempty"`
	Bundle          string `json:"bundle"`
	Family          string `json:"family"`
	// TaskStrategy is the manifest's task, from `task_strategy` (older
	// layout) or `task` (newer layout).
	TaskStrategy    string    `json:"task_strategy"`
	RuntimeStrategy string    `json:"runtime_strategy,omitempty"`
	Precision       string    `json:"precision,omitempty"`
	Quantization    string    `json:"quantization,omitempty"`
	Parallel        *Parallel `json:"parallel,omitempty"`
	// BuildArgs are the keys of build_args (older layout) or build (newer).
	BuildArgs []string `json:"build_args,omitempty"`
	// MaxSequence is max_cache_length (older layout) or max_sequence_length
	// (newer), 0 when absent.
	MaxSequence int  `json:"max_sequence,omitempty"`
	Distributed bool `json:"distributed,omitempty"`
	// BenchmarkExclusion is TRTMC's own `benchmark_exclusion_reason`.
	BenchmarkExclusion string     `json:"benchmark_exclusion_reason,omitempty"`
	Testcases          []Testcase `json:"testcases"`

	// Group is the group of its task strategy ("" when none).
	Group string `json:"group,omitempty"`
	// Problems make the manifest unusable (missing required fields...).
	Problems []string `json:"problems,omitempty"`

	Raw map[string]any `json:"-"`
}

// Parallel is a manifest's device layout: build_args.parallel (older
// layout) or tensor_parallel_size / context_parallel_size (newer).
type Parallel struct {
	Mode string `json:"mode"`
	TP   int    `json:"tp_size,omitempty"`
	CP   int    `json:"cp_size,omitempty"`
	// Field is where it was read: build_args.parallel,
	// tensor_parallel_size, build.tensor_parallel_size...
	Field string `json:"field"`
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
	// Premerge (newer layout) is the CI lane, like ci_tier: not a mark of
	// a partial profile. SelectedTask overrides the manifest's task for
	// one testcase (newer layout).
	Premerge     bool   `json:"premerge,omitempty"`
	SelectedTask string `json:"selected_task,omitempty"`
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

// ReadCommit reads a resolved commit (ref is only recorded): for each
// layout whose root the commit holds, it lists the family folders, reads
// every listing (MODEL.toml) and the manifests (listed, and the unlisted
// ones beside them), then checks names and attributes families and problems
// to groups.
func (s Source) ReadCommit(ctx context.Context, ref, commit string) (*Snapshot, error) {
	snap := &Snapshot{Repo: s.Repo, Ref: ref, Commit: commit, Root: s.Config.ModelsRoot}
	type layoutFiles struct {
		l    Layout
		dirs []string
		fams map[string]*famFiles
	}
	var present []layoutFiles
	var roots []string
	for _, l := range s.Config.Layouts() {
		roots = append(roots, l.Root+"/")
		files, err := s.Git.ListFiles(ctx, commit, l.Root)
		if err != nil {
			return nil, fmt.Errorf("list %s at %s: %w", l.Root, ShortSHA(commit), err)
		}
		if len(files) == 0 {
			continue
		}
		dirs, fams := familyFiles(l, files)
		present = append(present, layoutFiles{l, dirs, fams})
		snap.Layouts = append(snap.Layouts, l)
	}
	if len(present) == 0 {
		return nil, fmt.Errorf("%w: %s has neither %s at %s (%s); the roots are models_root and families_root of the spec groups (%s)",
			ErrNotTRTMC, s.Repo, strings.Join(roots, " nor "), ref, ShortSHA(commit), s.Config.File)
	}
	var want []string
	listings := map[*famFiles]*listing{}
	for _, lf := range present {
		ls, w, err := s.readListings(ctx, snap, commit, lf.l, lf.dirs, lf.fams)
		if err != nil {
			return nil, err
		}
		maps.Copy(listings, ls)
		want = append(want, w...)
	}
	data, err := s.Git.ReadFiles(ctx, commit, want)
	if err != nil {
		return nil, fmt.Errorf("read manifests at %s: %w", ShortSHA(commit), err)
	}
	for _, lf := range present {
		for _, d := range lf.dirs {
			snap.addManifests(s.Config, commit, lf.l, d, lf.fams[d], listings[lf.fams[d]], data)
		}
	}
	snap.checkUniqueNames()
	snap.attribute(s.Config)
	snap.sortProblems()
	return snap, nil
}

// famFiles are the files of one family folder at the commit.
type famFiles struct {
	toml      string   // the listing (MODEL.toml), "" when none
	manifests []string // manifests present
	all       map[string]bool
}

// familyFiles groups the files under the layout's root by family folder;
// dirs are the folders in order.
func familyFiles(l Layout, files []string) (dirs []string, fams map[string]*famFiles) {
	fams = map[string]*famFiles{}
	for _, f := range files {
		rel := strings.TrimPrefix(f, l.Root+"/")
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
		case l.Listing != "" && rest == l.Listing:
			ff.toml = f
		case l.IsManifest(rest):
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

// readListings reads every MODEL.toml of a layout, adds the families to
// snap and returns each family's listing and every manifest path to read.
func (s Source) readListings(ctx context.Context, snap *Snapshot, commit string, l Layout, dirs []string, fams map[string]*famFiles) (map[*famFiles]*listing, []string, error) {
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
	listings := map[*famFiles]*listing{}
	var want []string
	for _, d := range dirs {
		ff := fams[d]
		famDir := l.FamilyPath(d)
		fam := &Family{Dir: d, Layout: l.Name, Path: famDir, ModelTOML: ff.toml, Declared: []string{}, Defaults: []string{}}
		snap.Families = append(snap.Families, fam)
		lst := &listing{fam: fam, declared: map[string]bool{}}
		listings[ff] = lst
		if ff.toml != "" {
			decl, perr := parseModelTOML(tomlData[ff.toml], fam)
			if perr != "" {
				snap.Problems = append(snap.Problems, &Problem{Kind: ProblemModelTOML, Path: ff.toml, Dir: d, Message: perr})
			} else {
				lst.trusted = true
				for _, item := range decl {
					p := path.Clean(path.Join(famDir, item))
					if lst.declared[p] {
						snap.Problems = append(snap.Problems, &Problem{Kind: ProblemModelTOML, Path: ff.toml, Dir: d,
							Message: fmt.Sprintf("test_manifests lists %s twice", item)})
						continue
					}
					lst.declared[p] = true
					lst.order = append(lst.order, p)
				}
			}
		}
		for _, m := range ff.manifests {
			if !lst.declared[m] {
				lst.order = append(lst.order, m)
			}
		}
		want = append(want, lst.order...)
	}
	return listings, want, nil
}

// addManifests parses the manifests of family folder d from data, adding
// them and their problems to the snapshot.
func (snap *Snapshot) addManifests(cfg *Config, commit string, lay Layout, d string, ff *famFiles, l *listing, data map[string][]byte) {
	for _, p := range l.order {
		listed := l.declared[p]
		if !l.trusted {
			// No MODEL.toml (the newer layout, or an older family without
			// one: TRTMC's catalog then globs manifests/*.json) or an
			// unreadable one (already reported).
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
		m, perr := ParseManifest(lay, p, d, raw)
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
func (snap *Snapshot) ProblemsFor(group string) []*Problem {
	var out []*Problem
	for _, p := range snap.Problems {
		if p.attributable(group) {
			out = append(out, p)
		}
	}
	return out
}

// FamiliesOf returns the family folders that belong to a group, each name
// once (a family in both layouts at one commit is one family).
func (snap *Snapshot) FamiliesOf(group string) []string {
	var out []string
	for _, f := range snap.Families {
		if slices.Contains(f.Groups, group) && !slices.Contains(out, f.Dir) {
			out = append(out, f.Dir)
		}
	}
	return out
}

// FamilyPaths returns the repository paths of the folders of the named
// families, in every layout the snapshot holds them.
func (snap *Snapshot) FamilyPaths(dirs []string) []string {
	var out []string
	for _, f := range snap.Families {
		if slices.Contains(dirs, f.Dir) {
			out = append(out, f.Path)
		}
	}
	return out
}

// EffectivePrecision is the declared precision, or the configured default
// (only the older layout may omit it).
func (m *Manifest) EffectivePrecision(cfg *Config) string {
	if m.Precision != "" {
		return m.Precision
	}
	return cfg.DefaultPrecision
}
