// Package drift compares the specs of groups between two commits (`trtmc-qual
// inventory drift`, the ci drift step): manifests, MODEL.toml, thresholds and
// references that changed, each summarised on one line.
package drift

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/reports/markdown"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// Schema names the JSON document `inventory drift` prints.
const Schema = "trtmc-qual/drift/v1"

// Report lists every file of the groups' family folders that differs
// between two commits: manifests, MODEL.toml, thresholds, references,
// family tests.
type Report struct {
	Schema     string   `json:"schema"`
	Repo       string   `json:"repo"`
	Groups     []string `json:"groups"`
	Base       string   `json:"base"`
	BaseCommit string   `json:"base_commit"`
	Head       string   `json:"head"`
	HeadCommit string   `json:"head_commit"`
	Families   []string `json:"families"`
	Changes    []Change `json:"changes"`
	// ByCategory counts changed files per category.
	ByCategory map[string]int `json:"by_category"`
}

// unattributedGroup marks a family whose group cannot be told.
const unattributedGroup = "?"

// Change is one changed file.
type Change struct {
	Family string `json:"family"`
	// Groups are the groups the family belongs to, "?" when it cannot be
	// told (no manifest, no e2e_defaults at either commit).
	Groups string `json:"groups"`
	Path   string `json:"path"`
	// Layout is the spec layout the file is in (e2e-models or families).
	Layout   string `json:"layout"`
	Category string `json:"category"`
	// Status is added, deleted, modified or type-changed.
	Status  string `json:"status"`
	Added   int    `json:"lines_added"`
	Deleted int    `json:"lines_deleted"`
	// Profile is the manifest's name, for manifests and thresholds.
	Profile string `json:"profile,omitempty"`
	// Summary says what changed: keys of JSON and TOML files with both
	// values, line counts otherwise.
	Summary string `json:"summary"`
}

// Drift compares the family folders of the groups between two refs: which
// families belong to the groups at either commit (familyGroups), the
// folders they live in at either commit, git's changes there, and one
// Change per changed file (change), structured files summarised by key.
func Drift(ctx context.Context, src specs.Source, base, head string, groups []string) (*Report, error) {
	cfg := src.Config
	for _, g := range groups {
		if err := cfg.CheckGroup(g); err != nil {
			return nil, err
		}
	}
	if len(groups) == 0 {
		groups = cfg.GroupNames()
	}
	baseSnap, err := src.Read(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("base %s: %w", base, err)
	}
	headSnap, err := src.Read(ctx, head)
	if err != nil {
		return nil, fmt.Errorf("head %s: %w", head, err)
	}
	r := &Report{Schema: Schema, Repo: src.Repo, Groups: groups, Base: base, BaseCommit: baseSnap.Commit,
		Head: head, HeadCommit: headSnap.Commit, Changes: []Change{}, ByCategory: map[string]int{}}
	snaps := []*specs.Snapshot{baseSnap, headSnap}
	famGroups := familyGroups(snaps, groups)
	r.Families = slices.Sorted(maps.Keys(famGroups))
	if len(r.Families) == 0 {
		return r, nil
	}
	changes, err := src.Git.Diff(ctx, baseSnap.Commit, headSnap.Commit, familyPaths(snaps, r.Families))
	if err != nil {
		return nil, fmt.Errorf("diff %s..%s: %w", specs.ShortSHA(baseSnap.Commit), specs.ShortSHA(headSnap.Commit), err)
	}
	// Structured files are read at both commits for a key-level summary.
	var structured []string
	for _, ch := range changes {
		if ext := path.Ext(ch.Path); ext == ".json" || ext == ".toml" {
			structured = append(structured, ch.Path)
		}
	}
	before, err := src.Git.ReadFiles(ctx, baseSnap.Commit, structured)
	if err != nil {
		return nil, err
	}
	after, err := src.Git.ReadFiles(ctx, headSnap.Commit, structured)
	if err != nil {
		return nil, err
	}
	for _, ch := range changes {
		dc := change(cfg, ch, famGroups, before, after)
		r.Changes = append(r.Changes, dc)
		r.ByCategory[dc.Category]++
	}
	sort.SliceStable(r.Changes, func(i, j int) bool { return r.Changes[i].Path < r.Changes[j].Path })
	return r, nil
}

// familyGroups maps each family folder of the groups, at either commit, to
// the groups it belongs to. A family folder that says nothing about its
// task strategy at either commit (no manifest, no e2e_defaults) may belong
// to any group: it is checked rather than skipped.
func familyGroups(snaps []*specs.Snapshot, groups []string) map[string]map[string]bool {
	famGroups := map[string]map[string]bool{}
	for _, g := range groups {
		for _, s := range snaps {
			for _, f := range s.FamiliesOf(g) {
				if famGroups[f] == nil {
					famGroups[f] = map[string]bool{}
				}
				famGroups[f][g] = true
			}
		}
	}
	known := map[string]bool{}
	dirs := map[string]bool{}
	for _, s := range snaps {
		for _, f := range s.Families {
			dirs[f.Dir] = true
			if len(f.TaskStrategies) > 0 {
				known[f.Dir] = true
			}
		}
	}
	for d := range dirs {
		if !known[d] {
			famGroups[d] = map[string]bool{unattributedGroup: true}
		}
	}
	return famGroups
}

// familyPaths are the families' folders in every layout either commit
// holds them in, sorted, each with a trailing slash: a family that moves
// from tests/e2e/models/<f> to families/<f> between the refs shows as its
// old files deleted and its new ones added.
func familyPaths(snaps []*specs.Snapshot, families []string) []string {
	var paths []string
	for _, s := range snaps {
		for _, p := range s.FamilyPaths(families) {
			if !slices.Contains(paths, p+"/") {
				paths = append(paths, p+"/")
			}
		}
	}
	sort.Strings(paths)
	return paths
}

// change is the Change of one changed file; a manifest's or threshold's
// profile is the manifest's name where the file (after, else before)
// parses, else its file name.
func change(cfg *specs.Config, ch gitread.FileChange, famGroups map[string]map[string]bool, before, after map[string][]byte) Change {
	lay, fam, inFam, _ := cfg.Locate(ch.Path)
	dc := Change{Family: fam, Groups: strings.Join(slices.Sorted(maps.Keys(famGroups[fam])), ","), Path: ch.Path,
		Layout: lay.Name, Category: cfg.Category(lay.CategoryPath(inFam)), Status: statusWord(ch.Status),
		Added: ch.Added, Deleted: ch.Deleted}
	if (dc.Category == "manifest" || dc.Category == "threshold") && path.Ext(ch.Path) == ".json" {
		dc.Profile = strings.TrimSuffix(path.Base(ch.Path), ".json")
		raw, ok := after[ch.Path]
		if !ok {
			raw, ok = before[ch.Path]
		}
		if ok && dc.Category == "manifest" {
			if m, e := specs.ParseManifest(lay, ch.Path, fam, raw); e == "" && m.Name != "" {
				dc.Profile = m.Name
			}
		}
	}
	dc.Summary = summarize(ch, before, after)
	return dc
}

func statusWord(s string) string {
	switch s {
	case "A":
		return "added"
	case "D":
		return "deleted"
	case "M":
		return "modified"
	case "T":
		return "type-changed"
	}
	return s
}

// maxKeyChanges bounds how many key changes a summary spells out.
const maxKeyChanges = 6

func summarize(ch gitread.FileChange, before, after map[string][]byte) string {
	lines := ""
	switch {
	case ch.Added < 0 || ch.Deleted < 0:
		lines = "binary"
	default:
		lines = fmt.Sprintf("+%d -%d lines", ch.Added, ch.Deleted)
	}
	ext := path.Ext(ch.Path)
	if ext != ".json" && ext != ".toml" {
		return lines
	}
	a, aok := before[ch.Path]
	b, bok := after[ch.Path]
	fa, errA := flattenFile(ext, a, aok)
	fb, errB := flattenFile(ext, b, bok)
	switch {
	case errB != "":
		return fmt.Sprintf("%s; malformed at head: %s", lines, errB)
	case errA != "":
		return fmt.Sprintf("%s; malformed at base: %s", lines, errA)
	}
	var keyChanges []string
	if path.Base(ch.Path) == "MODEL.toml" {
		keyChanges = manifestListChanges(fa, fb)
	}
	if !aok || !bok {
		// Added or deleted: the line count says it; name the file's identity.
		if name := unquote(fb["name"] + fa["name"]); name != "" {
			return fmt.Sprintf("%s; name %s", lines, name)
		}
		if len(keyChanges) > 0 {
			return lines + "; " + strings.Join(keyChanges, ", ")
		}
		return lines
	}
	keyChanges = append(keyChanges, keyDiff(fa, fb)...)
	if len(keyChanges) == 0 {
		return lines + "; formatting only (no key changed)"
	}
	more := ""
	if len(keyChanges) > maxKeyChanges {
		more = fmt.Sprintf(" (+%d more)", len(keyChanges)-maxKeyChanges)
		keyChanges = keyChanges[:maxKeyChanges]
	}
	return lines + "; " + strings.Join(keyChanges, "; ") + more
}

// manifestListChanges are MODEL.toml's test_manifests added and removed,
// as whole entries; their indexed keys are then dropped from both
// flattened documents, so a reordered list is not a list of key changes.
func manifestListChanges(fa, fb map[string]string) []string {
	var keyChanges []string
	added, removed := listDiff(listOf(fa, "test_manifests"), listOf(fb, "test_manifests"))
	for _, x := range added {
		keyChanges = append(keyChanges, "test_manifests +"+x)
	}
	for _, x := range removed {
		keyChanges = append(keyChanges, "test_manifests -"+x)
	}
	for _, m := range []map[string]string{fa, fb} {
		for k := range m {
			if strings.HasPrefix(k, "test_manifests[") {
				delete(m, k)
			}
		}
	}
	return keyChanges
}

// keyDiff names every key that changed, was removed or was added between
// two flattened documents, in key order.
func keyDiff(fa, fb map[string]string) []string {
	var keyChanges []string
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		va, ina := fa[k]
		vb, inb := fb[k]
		switch {
		case ina && inb && va != vb:
			keyChanges = append(keyChanges, fmt.Sprintf("%s: %s → %s", k, clip(va), clip(vb)))
		case ina && !inb:
			keyChanges = append(keyChanges, fmt.Sprintf("%s removed (was %s)", k, clip(va)))
		case !ina && inb:
			keyChanges = append(keyChanges, fmt.Sprintf("%s added: %s", k, clip(vb)))
		}
	}
	return keyChanges
}

// flattenFile flattens a JSON or TOML document into dotted keys with JSON
// scalar values ("testcases[0].max_new_tokens" → "10"). An absent file is
// empty.
func flattenFile(ext string, data []byte, present bool) (map[string]string, string) {
	out := map[string]string{}
	if !present {
		return out, ""
	}
	var doc any
	if ext == ".json" {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return nil, text.OneLine(err.Error())
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, "trailing data after the document"
		}
	} else {
		var m map[string]any
		if err := toml.Unmarshal(data, &m); err != nil {
			return nil, text.OneLine(err.Error())
		}
		doc = m
	}
	flatten("", doc, out)
	return out, ""
}

func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 && prefix != "" {
			out[prefix] = "{}"
		}
		for k, val := range x {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(key, val, out)
		}
	case []any:
		if len(x) == 0 {
			out[prefix] = "[]"
		}
		for i, val := range x {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), val, out)
		}
	default:
		out[prefix] = specs.CompactJSON(x)
	}
}

// listOf returns the elements of a flattened list, in order.
func listOf(flat map[string]string, key string) []string {
	var out []string
	for i := 0; ; i++ {
		v, ok := flat[fmt.Sprintf("%s[%d]", key, i)]
		if !ok {
			return out
		}
		out = append(out, unquote(v))
	}
}

// listDiff returns the elements added to and removed from a list.
func listDiff(before, after []string) (added, removed []string) {
	in := func(list []string, s string) bool { return slices.Contains(list, s) }
	for _, s := range after {
		if !in(before, s) {
			added = append(added, s)
		}
	}
	for _, s := range before {
		if !in(after, s) {
			removed = append(removed, s)
		}
	}
	return added, removed
}

func clip(s string) string {
	const n = 48
	r := []rune(s)
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Line is the one-line summary of a drift report.
func (r *Report) Line() string {
	groups := strings.Join(r.Groups, ",")
	if len(r.Changes) == 0 {
		return fmt.Sprintf("%s: no spec drift between %s @ %s and %s @ %s in %s",
			groups, r.Base, specs.ShortSHA(r.BaseCommit), r.Head, specs.ShortSHA(r.HeadCommit), text.Count(len(r.Families), "family", "families"))
	}
	var cats []string
	for _, c := range slices.Sorted(maps.Keys(r.ByCategory)) {
		cats = append(cats, fmt.Sprintf("%d %s", r.ByCategory[c], c))
	}
	verb := "differ"
	if len(r.Changes) == 1 {
		verb = "differs"
	}
	return fmt.Sprintf("%s: %s %s between %s @ %s and %s @ %s (%s)", groups,
		text.Count(len(r.Changes), "file", "files"), verb, r.Base, specs.ShortSHA(r.BaseCommit), r.Head, specs.ShortSHA(r.HeadCommit),
		strings.Join(cats, ", "))
}

// TableHeader and TableRows are the tabular form of the changes.
func (r *Report) TableHeader() []string {
	return []string{"family", "category", "status", "path", "profile", "summary"}
}

// TableRows returns one cell slice per changed file.
func (r *Report) TableRows() [][]string {
	out := make([][]string, 0, len(r.Changes))
	for _, c := range r.Changes {
		out = append(out, []string{c.Family, c.Category, c.Status, c.Path, specs.OrDash(c.Profile), c.Summary})
	}
	return out
}

// Markdown writes the drift report for a pull request.
func (r *Report) Markdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### Spec drift %s: %s (%s) → %s (%s)\n\n", markdown.Text(strings.Join(r.Groups, ", ")),
		markdown.Code(specs.ShortSHA(r.BaseCommit)), markdown.Text(r.Base), markdown.Code(specs.ShortSHA(r.HeadCommit)), markdown.Text(r.Head))
	fmt.Fprintf(&b, "**%s**\n\n", markdown.Text(r.Line()))
	fmt.Fprintf(&b, "Families checked: %s.\n", markdown.CodeList(r.Families))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(r.Changes) == 0 {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	rows := make([][]string, 0, len(r.Changes))
	for _, c := range r.Changes {
		rows = append(rows, []string{markdown.Text(c.Family), markdown.Text(c.Category), markdown.Text(c.Status),
			markdown.Code(c.Path), markdown.Code(c.Profile), markdown.Text(c.Summary)})
	}
	return markdown.Table(w, r.TableHeader(), rows)
}

// unquote returns the string a JSON string literal holds, or s itself.
func unquote(s string) string {
	var out string
	if json.Unmarshal([]byte(s), &out) != nil {
		return s
	}
	return out
}
