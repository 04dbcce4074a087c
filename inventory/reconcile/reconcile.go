// Package reconcile compares an inventory group with the specs at a commit
// (`trtmc-qual inventory reconcile`, the ci reconcile step) and writes the
// missing profiles back into the inventory (write.go).
package reconcile

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// Schema names the JSON document `inventory reconcile` prints.
const Schema = "trtmc-qual/reconcile/v1"

// Row states.
const (
	StateOK       = "ok"       // normal, in both, agreeing
	StateMissing  = "missing"  // normal in the specs, not in the inventory
	StateStale    = "stale"    // in the inventory, not a spec of the group
	StateDrift    = "drift"    // in both, fields differ
	StateVariant  = "variant"  // a variant: listed, not counted
	StatePartial  = "partial"  // a partial profile: listed, not counted
	StateExcluded = "excluded" // the inventory excludes it, with a reason
	StateUnlisted = "unlisted" // a manifest its MODEL.toml does not list
	StateInvalid  = "invalid"  // a spec file that is missing or malformed
)

// Row is one profile (or one broken spec file) of a reconcile.
type Row struct {
	Profile    string `json:"profile"`
	Family     string `json:"family"`
	Checkpoint string `json:"checkpoint"`
	Kind       string `json:"kind"`
	Rule       string `json:"rule"`
	// Reason explains the rule; Of is the normal profile of a variant or
	// partial.
	Reason string `json:"reason"`
	Of     string `json:"of,omitempty"`
	State  string `json:"state"`
	// Detail names drifted fields with both values, an exclusion reason, or
	// what is wrong with a spec file.
	Detail      string      `json:"detail"`
	Diffs       []FieldDiff `json:"diffs,omitempty"`
	NeedsAction bool        `json:"needs_action"`

	Revision  string `json:"revision,omitempty"`
	Precision string `json:"precision,omitempty"`
	Bundle    string `json:"bundle,omitempty"`
	// Task is the manifest's task (task_strategy in the older layout, task
	// in the newer); the JSON name stays task_strategy.
	Task string `json:"task_strategy,omitempty"`
	// Manifest is the spec's path in the repository; Inventory is the
	// profile's file:line.
	Manifest  string `json:"manifest,omitempty"`
	Inventory string `json:"inventory,omitempty"`
	// ManifestBlob is the git object id of the manifest as read: which
	// version of it the row was reconciled against.
	ManifestBlob string `json:"manifest_blob,omitempty"`
}

// FieldDiff is one field on which the inventory and the spec disagree.
type FieldDiff struct {
	Field     string `json:"field"`
	Inventory string `json:"inventory"`
	Spec      string `json:"spec"`
}

func (d FieldDiff) String() string {
	return fmt.Sprintf("%s: inventory %s, spec %s", d.Field, specs.OrDash(d.Inventory), specs.OrDash(d.Spec))
}

// Report is the outcome of reconciling one group of the inventory against
// the specs at one commit.
type Report struct {
	Schema string `json:"schema"`
	Group  string `json:"group"`
	Repo   string `json:"repo"`
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
	// TaskStrategies that define the group (from the spec-groups file).
	TaskStrategies []string         `json:"task_strategies"`
	Families       []string         `json:"families"`
	Rows           []Row            `json:"rows"`
	Problems       []*specs.Problem `json:"problems"`
	Gaps           []specs.Gap      `json:"gaps"`
	Summary        Summary          `json:"summary"`
	// InventoryHasGroup is false when the inventory has no such group.
	InventoryHasGroup bool `json:"inventory_has_group"`
}

// Summary counts the rows.
type Summary struct {
	// Normal profiles in the specs, and how they stand.
	Normal   int `json:"normal"`
	OK       int `json:"ok"`
	Missing  int `json:"missing"`
	Drift    int `json:"drift"`
	Excluded int `json:"excluded"`
	// Variants and partials of the specs (drifted ones included).
	Variants int `json:"variants"`
	Partials int `json:"partials"`
	Stale    int `json:"stale"`
	Unlisted int `json:"unlisted"`
	Invalid  int `json:"invalid"`
	// NeedAction counts rows that need someone to act.
	NeedAction int `json:"need_action"`
}

// Reconcile compares the inventory's group with the group's specs. inv may
// be nil or lack the group: every normal profile is then missing. Its steps,
// in the order of the rows: one row per classified manifest of the group
// (specRow), one per spec file that is not a manifest of it (problemRows),
// one per inventory profile no spec backs (staleRows); then the counts.
func Reconcile(cfg *specs.Config, snap *specs.Snapshot, inv *inventory.Inventory, group string) *Report {
	r := &Report{Schema: Schema, Group: group, Repo: snap.Repo, Ref: snap.Ref, Commit: snap.Commit,
		TaskStrategies: append([]string{}, cfg.Groups[group].TaskStrategies...),
		Families:       snap.FamiliesOf(group), Problems: snap.ProblemsFor(group)}
	if r.Families == nil {
		r.Families = []string{}
	}
	g := groupProfiles(r, inv, group)
	classified := specs.Classify(cfg, snap, group)
	r.Gaps = specs.Gaps(classified)
	for _, c := range classified {
		r.Rows = append(r.Rows, g.specRow(cfg, r, c))
		if c.Listed && len(c.Problems) == 0 && c.Name != "" && c.Class.Kind == inventory.KindNormal {
			r.Summary.Normal++
		}
	}
	r.Rows = append(r.Rows, g.problemRows(r.Problems)...)
	r.Rows = append(r.Rows, g.staleRows(snap, group)...)
	r.count()
	if r.Rows == nil {
		r.Rows = []Row{}
	}
	if r.Problems == nil {
		r.Problems = []*specs.Problem{}
	}
	return r
}

// invGroup is the inventory's side of one reconcile: its profiles by id
// (the first of a duplicated id), in their order, and which ids a row has
// claimed so far.
type invGroup struct {
	byID    map[string]*inventory.Profile
	order   []*inventory.Profile
	matched map[string]bool
}

func groupProfiles(r *Report, inv *inventory.Inventory, group string) *invGroup {
	g := &invGroup{byID: map[string]*inventory.Profile{}, matched: map[string]bool{}}
	if inv == nil {
		return g
	}
	grp, ok := inv.Groups[group]
	if !ok {
		return g
	}
	r.InventoryHasGroup = true
	for _, p := range grp.Profiles {
		if _, dup := g.byID[p.ID]; !dup {
			g.byID[p.ID] = p
		}
		g.order = append(g.order, p)
	}
	return g
}

// specRow is the row of one classified manifest of the group.
func (g *invGroup) specRow(cfg *specs.Config, r *Report, c *specs.Classified) Row {
	row := Row{Profile: c.Name, Family: c.Family, Checkpoint: c.Checkpoint, Kind: c.Class.Kind,
		Rule: c.Class.Rule, Reason: c.Class.Reason, Of: c.Class.Of, Revision: c.Revision,
		Precision: c.EffectivePrecision(cfg), Bundle: c.Bundle, Task: c.TaskStrategy, Manifest: c.Path, ManifestBlob: c.Blob}
	if row.Family == "" {
		row.Family = c.Dir
	}
	p := g.byID[c.Name]
	if p != nil {
		g.matched[c.Name] = true
		row.Inventory = p.Where("id")
	}
	switch {
	case len(c.Problems) > 0:
		row.State, row.NeedsAction = StateInvalid, true
		row.Detail = strings.Join(c.Problems, "; ")
	case !c.Listed:
		row.State, row.NeedsAction = StateUnlisted, true
		row.Detail = fmt.Sprintf("not listed in %s test_manifests", path.Join(path.Dir(path.Dir(c.Path)), "MODEL.toml"))
	case p != nil:
		judgeInventoried(cfg, &row, p, c)
	case c.Class.Kind == inventory.KindNormal:
		row.State, row.NeedsAction = StateMissing, true
		row.Detail = "not in the inventory"
		if !r.InventoryHasGroup {
			row.Detail = fmt.Sprintf("not in the inventory (it has no group %s)", r.Group)
		}
	default:
		row.State = kindState(c.Class.Kind)
	}
	return row
}

// judgeInventoried sets the state of a manifest the inventory has:
// excluded, drift (fields differ) or its kind's state.
func judgeInventoried(cfg *specs.Config, row *Row, p *inventory.Profile, c *specs.Classified) {
	row.Diffs = compare(cfg, p, c)
	var parts []string
	for _, d := range row.Diffs {
		parts = append(parts, d.String())
	}
	switch {
	case p.Exclusion != nil:
		row.State = StateExcluded
		row.Detail = "excluded: " + p.Exclusion.Reason
		if len(parts) > 0 {
			row.Detail += " (also differs: " + strings.Join(parts, "; ") + ")"
		}
	case len(row.Diffs) > 0:
		row.State, row.NeedsAction = StateDrift, true
		row.Detail = strings.Join(parts, "; ")
	default:
		row.State = kindState(c.Class.Kind)
		if row.State != StateOK {
			row.Detail = "in the inventory as a " + p.Kind + " profile"
		}
	}
}

// problemRows are the spec files that are not manifests of the group:
// missing, malformed (a manifest's own problems are on its row).
func (g *invGroup) problemRows(problems []*specs.Problem) []Row {
	var rows []Row
	for _, pr := range problems {
		if pr.Kind == specs.ProblemUnlisted || pr.Kind == specs.ProblemInvalid || pr.Kind == specs.ProblemDuplicateName {
			continue // the manifest's own row shows it
		}
		name := strings.TrimSuffix(path.Base(pr.Path), ".json")
		if pr.Kind == specs.ProblemModelTOML {
			name = "MODEL.toml"
		}
		row := Row{Profile: name, Family: pr.Dir, Kind: "-", Rule: "spec." + pr.Kind, Reason: pr.Kind,
			State: StateInvalid, Detail: pr.Message, NeedsAction: true, Manifest: pr.Path}
		if p := g.byID[name]; p != nil && pr.Kind != specs.ProblemModelTOML {
			g.matched[name] = true
			row.Inventory = p.Where("id")
			row.Checkpoint = p.Checkpoint
		}
		rows = append(rows, row)
	}
	return rows
}

// staleRows are the inventory profiles no spec of the group backs, each
// saying where its manifest is when the commit has one of that name.
func (g *invGroup) staleRows(snap *specs.Snapshot, group string) []Row {
	others := map[string]*specs.Manifest{}
	for _, m := range snap.Manifests {
		if _, ok := others[m.Name]; !ok {
			others[m.Name] = m
		}
	}
	var rows []Row
	for _, p := range g.order {
		if g.matched[p.ID] {
			continue
		}
		g.matched[p.ID] = true
		row := Row{Profile: p.ID, Family: p.Family, Checkpoint: p.Checkpoint, Kind: p.Kind, Rule: "inventory",
			Reason: "kind as recorded in the inventory", Revision: p.Revision, Precision: p.Precision,
			Bundle: path.Base(p.Bundle.Path), Inventory: p.Where("id"), State: StateStale, NeedsAction: true}
		if m, ok := others[p.ID]; ok {
			row.Manifest, row.ManifestBlob = m.Path, m.Blob
			ts, key := m.TaskStrategy, m.TaskKey
			if m.Group != "" {
				row.Detail = fmt.Sprintf("its manifest is in group %s (%s %s), not %s", m.Group, key, ts, group)
			} else {
				row.Detail = fmt.Sprintf("its manifest has %s %s, which is in no group", key, specs.OrDash(ts))
			}
		} else {
			row.Detail = fmt.Sprintf("no manifest named %s at %s", p.ID, specs.ShortSHA(snap.Commit))
		}
		if p.Exclusion != nil {
			row.Detail += "; excluded: " + p.Exclusion.Reason
		}
		rows = append(rows, row)
	}
	return rows
}

// count fills the summary from the rows (Normal is counted as the spec
// rows are made).
func (r *Report) count() {
	for _, row := range r.Rows {
		switch row.State {
		case StateOK:
			r.Summary.OK++
		case StateMissing:
			r.Summary.Missing++
		case StateStale:
			r.Summary.Stale++
		case StateUnlisted:
			r.Summary.Unlisted++
		case StateInvalid:
			r.Summary.Invalid++
		}
		if row.NeedsAction {
			r.Summary.NeedAction++
		}
		if row.Rule == "inventory" || row.State == StateUnlisted || row.State == StateInvalid {
			continue
		}
		switch row.Kind {
		case inventory.KindNormal:
			switch row.State {
			case StateDrift:
				r.Summary.Drift++
			case StateExcluded:
				r.Summary.Excluded++
			}
		case inventory.KindVariant, inventory.KindPartial:
			if row.Kind == inventory.KindVariant {
				r.Summary.Variants++
			} else {
				r.Summary.Partials++
			}
			if row.State == StateDrift {
				r.Summary.Drift++
			}
		}
	}
}

func kindState(kind string) string {
	switch kind {
	case inventory.KindVariant:
		return StateVariant
	case inventory.KindPartial:
		return StatePartial
	}
	return StateOK
}

// compare returns the fields on which an inventory profile and its spec
// disagree: checkpoint, revision (when the spec pins one), precision,
// bundle name, kind, and for variants the normal profile they belong to.
func compare(cfg *specs.Config, p *inventory.Profile, c *specs.Classified) []FieldDiff {
	var diffs []FieldDiff
	add := func(field, inv, spec string) {
		if inv != spec {
			diffs = append(diffs, FieldDiff{Field: field, Inventory: inv, Spec: spec})
		}
	}
	add("checkpoint", p.Checkpoint, c.Checkpoint)
	if c.Revision != "" {
		add("revision", p.Revision, c.Revision)
	}
	add("precision", p.Precision, c.EffectivePrecision(cfg))
	bundle := ""
	if p.Bundle.Path != "" {
		bundle = path.Base(strings.ReplaceAll(p.Bundle.Path, "\\", "/"))
	}
	add("bundle", bundle, c.Bundle)
	add("kind", p.Kind, c.Class.Kind)
	if p.Kind == inventory.KindVariant && c.Class.Kind == inventory.KindVariant && c.Class.Of != "" {
		add("variant_of", p.VariantOf, c.Class.Of)
	}
	return diffs
}

// Line is the one-line summary, e.g.
// "vlm @ a832817: 9 normal (9 ok), 3 variants, 2 partials; 0 need action".
func (r *Report) Line() string {
	s := r.Summary
	if len(r.Rows) == 0 {
		return fmt.Sprintf("%s @ %s: no manifest has task strategy %s, and the inventory has no profile of the group; 0 need action",
			r.Group, specs.ShortSHA(r.Commit), strings.Join(r.TaskStrategies, " or "))
	}
	var states []string
	for _, kv := range []struct {
		n    int
		name string
	}{{s.OK, "ok"}, {s.Missing, "missing"}, {s.Drift, "drift"}, {s.Excluded, "excluded"}} {
		if kv.n > 0 || kv.name == "ok" {
			states = append(states, fmt.Sprintf("%d %s", kv.n, kv.name))
		}
	}
	parts := []string{fmt.Sprintf("%d normal (%s)", s.Normal, strings.Join(states, ", ")),
		text.Count(s.Variants, "variant", "variants"), text.Count(s.Partials, "partial", "partials")}
	for _, kv := range []struct {
		n    int
		name string
	}{{s.Stale, "stale"}, {s.Unlisted, "unlisted"}, {s.Invalid, "invalid"}} {
		if kv.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", kv.n, kv.name))
		}
	}
	line := fmt.Sprintf("%s @ %s: %s; %d need action", r.Group, specs.ShortSHA(r.Commit), strings.Join(parts, ", "), s.NeedAction)
	if len(r.Gaps) > 0 {
		line += fmt.Sprintf("; %s without a normal profile", text.Count(len(r.Gaps), "checkpoint", "checkpoints"))
	}
	return line
}

// TableHeader and TableRows are the tabular form of the rows.
func (r *Report) TableHeader() []string {
	return []string{"profile", "family", "checkpoint", "kind", "rule", "state", "detail", "manifest read"}
}

// manifestCell names the manifest a row was reconciled against and its
// version: path@blob (the file's git object id, 12 digits).
func manifestCell(row Row) string {
	if row.Manifest == "" {
		return "-"
	}
	if row.ManifestBlob == "" {
		return row.Manifest
	}
	return row.Manifest + "@" + row.ManifestBlob[:min(12, len(row.ManifestBlob))]
}

// TableRows returns one cell slice per row. The rule cell is the rule id
// and its reason, so the table shows why each profile is classified so.
func (r *Report) TableRows() [][]string {
	out := make([][]string, 0, len(r.Rows))
	for _, row := range r.Rows {
		out = append(out, []string{row.Profile, row.Family, specs.OrDash(row.Checkpoint), row.Kind,
			ruleCell(row), row.State, row.Detail, manifestCell(row)})
	}
	return out
}

func ruleCell(row Row) string {
	s := row.Rule
	if row.Reason != "" && row.Reason != row.Rule && !strings.HasPrefix(row.Rule, "spec.") {
		s += ": " + row.Reason
	}
	if row.Of != "" && !strings.Contains(row.Reason, row.Of) {
		s += " (of " + row.Of + ")"
	}
	return s
}

// NeedsAction lists the rows that need action, sorted by state then profile.
func (r *Report) NeedsAction() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.NeedsAction {
			out = append(out, row)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].State != out[j].State {
			return out[i].State < out[j].State
		}
		return out[i].Profile < out[j].Profile
	})
	return out
}
