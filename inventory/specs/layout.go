package specs

import (
	"path"
	"strings"
)

// The two layouts in which TRTMC has kept its model specs. Both are read
// at every commit (groups.yaml `models_root`, `families_root`); what a
// commit's tree holds decides which manifests there are, so a repository
// that moves from one to the other between two refs reads at both.
const (
	// LayoutE2EModels: <models_root>/<family>/MODEL.toml lists
	// <models_root>/<family>/manifests/<profile>.json; the task is
	// `task_strategy` (TRTMC e9132e79 and before).
	LayoutE2EModels = "e2e-models"
	// LayoutFamilies: <families_root>/<family>/tests/manifests/<profile>.json,
	// globbed; the task is `task`, `precision` is required and tensor
	// parallelism is `tensor_parallel_size` (later public commits; TRTMC's
	// benchmark/catalog.py globs `*/tests/manifests/*.json`).
	LayoutFamilies = "families"
)

// Layout is how one layout places and spells a family's specs.
type Layout struct {
	Name string `json:"name"`
	// Root holds one folder per family.
	Root string `json:"root"`
	// ManifestDir is the manifests folder, relative to a family folder.
	ManifestDir string `json:"-"`
	// Listing is the family file that lists the manifests, "" when they
	// are globbed.
	Listing string `json:"-"`
	// TaskKey is the manifest key that names the task.
	TaskKey string `json:"-"`
	// SpecDir is the folder of a family that its drift categories are
	// relative to, when a changed file is under it ("" : the family folder).
	SpecDir string `json:"-"`
}

// Layouts are the layouts the configuration reads, older first; a layout
// without a root is not read.
func (c *Config) Layouts() []Layout {
	var out []Layout
	if c.ModelsRoot != "" {
		out = append(out, Layout{Name: LayoutE2EModels, Root: c.ModelsRoot, ManifestDir: "manifests",
			Listing: "MODEL.toml", TaskKey: "task_strategy"})
	}
	if c.FamiliesRoot != "" {
		out = append(out, Layout{Name: LayoutFamilies, Root: c.FamiliesRoot, ManifestDir: "tests/manifests",
			TaskKey: "task", SpecDir: "tests"})
	}
	return out
}

// Layout returns the named layout of the configuration.
func (c *Config) Layout(name string) (Layout, bool) {
	for _, l := range c.Layouts() {
		if l.Name == name {
			return l, true
		}
	}
	return Layout{}, false
}

// FamilyPath is the repository path of a family folder.
func (l Layout) FamilyPath(dir string) string { return l.Root + "/" + dir }

// Locate tells which layout a repository path belongs to, the family folder
// it is in and its path relative to that folder.
func (c *Config) Locate(p string) (l Layout, family, rel string, ok bool) {
	for _, l := range c.Layouts() {
		rest, found := strings.CutPrefix(p, l.Root+"/")
		if !found {
			continue
		}
		fam, r, found := strings.Cut(rest, "/")
		if !found {
			continue
		}
		return l, fam, r, true
	}
	return Layout{}, "", "", false
}

// IsManifest reports whether rel (relative to a family folder) is a
// manifest of the layout.
func (l Layout) IsManifest(rel string) bool {
	return path.Dir(rel) == l.ManifestDir && strings.HasSuffix(rel, ".json")
}

// CategoryPath is rel as the drift categories see it: relative to the
// layout's spec folder when the file is under it.
func (l Layout) CategoryPath(rel string) string {
	if l.SpecDir != "" {
		if r, ok := strings.CutPrefix(rel, l.SpecDir+"/"); ok {
			return r
		}
	}
	return rel
}
