package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// Proposal is what --write did with the missing profiles.
type Proposal struct {
	// File is the inventory file appended to, or the proposal file written.
	File string `json:"file"`
	// Appended is true when the entries were appended to the inventory
	// file; false when they went to a separate proposal file.
	Appended bool     `json:"appended"`
	Profiles []string `json:"profiles"`
	// Reasons say why the inventory file was not edited in place.
	Reasons []string `json:"reasons,omitempty"`
	// Refused are the missing profiles written nowhere: the entry their
	// manifest gives fails the inventory's own validation.
	Refused []Refusal `json:"refused,omitempty"`
}

// Refusal is a missing profile --write did not propose.
type Refusal struct {
	// Profile is the manifest's name, quoted with every non-ASCII and
	// non-printable character escaped when it is not a valid id.
	Profile string `json:"profile"`
	// Manifest is the spec file the entry came from.
	Manifest string `json:"manifest"`
	// Problem is what inventory validation says of the entry, with the
	// manifest field it comes from.
	Problem string `json:"problem"`
}

// plannedEntry is the YAML shape of a proposed inventory profile.
type plannedEntry struct {
	ID          string            `yaml:"id"`
	Checkpoint  string            `yaml:"checkpoint"`
	Revision    string            `yaml:"revision,omitempty"`
	Family      string            `yaml:"family"`
	Task        string            `yaml:"task"`
	Kind        string            `yaml:"kind"`
	Precision   string            `yaml:"precision"`
	Parallelism map[string]int    `yaml:"parallelism"`
	Bundle      map[string]string `yaml:"bundle"`
	Tokenizer   map[string]string `yaml:"tokenizer,omitempty"`
	Controls    []string          `yaml:"controls,flow,omitempty"`
	Gaps        []string          `yaml:"gaps,flow,omitempty"`
	Hardware    []string          `yaml:"hardware,flow,omitempty"`
	Status      string            `yaml:"status"`
}

// EntryDefaults are what a family's configuration says every new profile
// of it records: the controls its served Task honours, its capability
// gaps, its hardware scope, and where bundles and tokenizers live relative
// to the inventory file ({profile} is the profile id).
type EntryDefaults struct {
	Controls  []string
	Gaps      []string
	Hardware  []string
	BundleDir string
	Tokenizer string
}

// Defaults gives the entry defaults of a family (nil: none).
type Defaults func(family string) *EntryDefaults

// plannedFor is the planned inventory entry of a missing row.
func plannedFor(row Row, defaults Defaults) plannedEntry {
	e := plannedEntry{ID: row.Profile, Checkpoint: row.Checkpoint, Revision: row.Revision,
		Family: row.Family, Task: row.Task, Kind: inventory.KindNormal, Precision: row.Precision,
		Parallelism: map[string]int{"tp": 1}, Bundle: map[string]string{"path": row.Bundle},
		Status: inventory.StatusPlanned}
	if defaults != nil {
		if d := defaults(row.Family); d != nil {
			e.Controls = append(e.Controls, d.Controls...)
			e.Gaps = append(e.Gaps, d.Gaps...)
			e.Hardware = d.Hardware
			if d.BundleDir != "" {
				e.Bundle["path"] = path.Join(d.BundleDir, row.Bundle)
			}
			if d.Tokenizer != "" {
				e.Tokenizer = map[string]string{"path": strings.ReplaceAll(d.Tokenizer, "{profile}", row.Profile)}
			}
		}
	}
	return e
}

// ProposedYAML renders planned inventory entries for the missing rows as a
// YAML sequence indented by indent spaces, headed by a comment naming the
// spec commit.
func ProposedYAML(r *Report, indent int, defaults Defaults) ([]byte, []string, error) {
	var entries []plannedEntry
	var ids []string
	for _, row := range r.Rows {
		if row.State != StateMissing {
			continue
		}
		entries = append(entries, plannedFor(row, defaults))
		ids = append(ids, row.Profile)
	}
	if len(entries) == 0 {
		return nil, nil, nil
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(entries); err != nil {
		return nil, nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, nil, err
	}
	pad := strings.Repeat(" ", indent)
	var out bytes.Buffer
	from := fmt.Sprintf("%s @ %s", r.Repo, r.Commit)
	if r.Ref != r.Commit {
		from += fmt.Sprintf(" (%s)", r.Ref)
	}
	fmt.Fprintf(&out, "%s# Proposed by `trtmc-qual inventory reconcile --write` from %s:\n", pad, from)
	fmt.Fprintf(&out, "%s# planned entries for the normal profiles missing from group %s. `family` is\n", pad, r.Group)
	fmt.Fprintf(&out, "%s# TRTMC's family; it must name a family of families.yaml.\n", pad)
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		out.WriteString(pad + line)
	}
	return out.Bytes(), ids, nil
}

// WriteProposals appends planned entries for the report's missing profiles
// to the inventory file that defines the group, without changing a byte of
// what is there. It edits the file only when it can prove the result: the
// new document must parse, keep every existing profile identical, add
// exactly the proposed ones, and raise no problem about them (knownFamily
// included). Otherwise, or when the inventory has no such group, it writes
// the entries to a separate proposal file and says why.
//
// defaults (nil: none) fill each entry's controls, gaps, hardware, bundle
// directory and tokenizer from its family's configuration.
func WriteProposals(r *Report, inv *inventory.Inventory, invFiles []string, knownFamily func(string) bool, defaults Defaults) (*Proposal, error) {
	// An entry invalid in itself is written nowhere; one that only names a
	// family the configuration lacks goes to the proposal file (below).
	kept, refused := refuseInvalid(r, nil, defaults)
	p, err := writeProposals(kept, inv, invFiles, knownFamily, defaults)
	if p != nil {
		p.Refused = refused
	}
	return p, err
}

func writeProposals(r *Report, inv *inventory.Inventory, invFiles []string, knownFamily func(string) bool, defaults Defaults) (*Proposal, error) {
	var file string
	if inv != nil {
		if g, ok := inv.Groups[r.Group]; ok {
			file = g.File
		}
	}
	var reasons []string
	if file == "" {
		reasons = append(reasons, fmt.Sprintf("the inventory has no group %s to append to", r.Group))
		if len(invFiles) > 0 {
			file = invFiles[0]
		}
	}
	if file != "" && len(reasons) == 0 {
		p, why, err := appendToInventory(r, file, knownFamily, defaults)
		if err != nil {
			return nil, err
		}
		if p != nil {
			return p, nil
		}
		reasons = append(reasons, why...)
	}
	text, ids, err := ProposedYAML(r, 2, defaults)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return &Proposal{Profiles: []string{}}, nil
	}
	dir, base := ".", "inventory"
	if file != "" {
		dir = filepath.Dir(file)
		base = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	out := filepath.Join(dir, fmt.Sprintf("%s.%s.proposed.yaml", base, r.Group))
	var doc bytes.Buffer
	doc.WriteString("# NOT an inventory file: proposed profiles to add under\n")
	fmt.Fprintf(&doc, "# groups.%s.profiles of the inventory. Not applied automatically because:\n", r.Group)
	for _, why := range reasons {
		fmt.Fprintf(&doc, "#   - %s\n", strings.ReplaceAll(why, "\n", " "))
	}
	doc.WriteString("profiles:\n")
	doc.Write(text)
	if err := fileio.WriteFileMode(out, doc.Bytes(), 0o644); err != nil {
		return nil, err
	}
	return &Proposal{File: out, Appended: false, Profiles: ids, Reasons: reasons}, nil
}

// appendToInventory returns (nil, reasons, nil) when it cannot append safely.
func appendToInventory(r *Report, file string, knownFamily func(string) bool, defaults Defaults) (*Proposal, []string, error) {
	old, err := fileio.ReadFile(context.Background(), file, fileio.MaxConfigBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("read inventory: %w", err)
	}
	info, err := os.Stat(file)
	if err != nil {
		return nil, nil, err
	}
	at, indent, why := insertionPoint(old, r.Group)
	if why != "" {
		return nil, []string{why}, nil
	}
	text, ids, err := ProposedYAML(r, indent, defaults)
	if err != nil {
		return nil, nil, err
	}
	if len(ids) == 0 {
		return &Proposal{File: file, Appended: false, Profiles: []string{}}, nil, nil
	}
	updated := make([]byte, 0, len(old)+len(text)+1)
	updated = append(updated, old[:at]...)
	if at > 0 && old[at-1] != '\n' {
		updated = append(updated, '\n')
	}
	updated = append(updated, text...)
	updated = append(updated, old[at:]...)
	if reasons := verifyAppend(file, old, updated, r.Group, ids, knownFamily); len(reasons) > 0 {
		return nil, reasons, nil
	}
	if err := fileio.WriteFileMode(file, updated, info.Mode().Perm()); err != nil {
		return nil, nil, err
	}
	// Re-validate what is on disk now.
	back, err := fileio.ReadFile(context.Background(), file, fileio.MaxConfigBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("re-read inventory after writing: %w", err)
	}
	if reasons := verifyAppend(file, old, back, r.Group, ids, knownFamily); len(reasons) > 0 {
		return nil, nil, fmt.Errorf("inventory %s changed unexpectedly while writing: %s", file, strings.Join(reasons, "; "))
	}
	return &Proposal{File: file, Appended: true, Profiles: ids}, nil, nil
}

// insertionPoint finds the byte offset just after the last profile of the
// group's block-style profiles list, and the indentation of its dashes.
func insertionPoint(data []byte, group string) (int, int, string) {
	seq, nextLine, why := profilesList(data, group)
	if why != "" {
		return 0, 0, why
	}
	lines := strings.SplitAfter(string(data), "\n")
	last := lastListLine(lines, seq.Line, nextLine)
	offset := 0
	for i := 0; i < last && i < len(lines); i++ {
		offset += len(lines[i])
	}
	if dash, ok := dashColumn(lines, seq); ok {
		return offset, dash, ""
	}
	return 0, 0, fmt.Sprintf("cannot find the list indentation of groups.%s.profiles", group)
}

// profilesList finds the group's profiles list, which must be a non-empty
// block list with no flow style around it, and the line of what follows it
// in the file (0: nothing in this document's mappings).
func profilesList(data []byte, group string) (seq *yaml.Node, nextLine int, why string) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil, 0, "the inventory file does not parse as YAML"
	}
	root := doc.Content[0]
	groups := mapLookup(root, "groups")
	if groups == nil || groups.Kind != yaml.MappingNode {
		return nil, 0, "the inventory file has no groups mapping"
	}
	gnode, nextLine := valueAndNext(groups, group, 0)
	if gnode == nil || gnode.Kind != yaml.MappingNode {
		return nil, 0, fmt.Sprintf("group %s is not a mapping in the file", group)
	}
	seq, nextLine = valueAndNext(gnode, "profiles", nextLine)
	if seq == nil || seq.Kind != yaml.SequenceNode || seq.Style&yaml.FlowStyle != 0 || len(seq.Content) == 0 {
		return nil, 0, fmt.Sprintf("groups.%s.profiles is not a non-empty block list", group)
	}
	if root.Style&yaml.FlowStyle != 0 || groups.Style&yaml.FlowStyle != 0 || gnode.Style&yaml.FlowStyle != 0 {
		return nil, 0, "the inventory uses flow style around the profiles list"
	}
	return seq, nextLine, ""
}

// valueAndNext is the value of key in mapping m and the line of the key
// after it; next stays as given when key is the mapping's last.
func valueAndNext(m *yaml.Node, key string, next int) (*yaml.Node, int) {
	var val *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			val = m.Content[i+1]
			if i+2 < len(m.Content) {
				next = m.Content[i+2].Line
			}
		}
	}
	return val, next
}

// lastListLine is the 1-based line of the list's last line: the line
// before what follows it (the next key, a further document, or the end of
// the file), stepping back over the blank and comment lines that precede
// what follows.
func lastListLine(lines []string, listLine, nextLine int) int {
	if nextLine == 0 {
		// Further documents or the end of the file.
		nextLine = len(lines) + 1
		for i, l := range lines {
			if i+1 > listLine && (strings.HasPrefix(l, "---") || strings.HasPrefix(l, "...")) {
				nextLine = i + 1
				break
			}
		}
	}
	last := nextLine - 1 // 1-based line number of the candidate last line
	for last > listLine {
		t := strings.TrimSpace(lines[last-1])
		if t == "" || strings.HasPrefix(t, "#") {
			last--
			continue
		}
		break
	}
	return last
}

// dashColumn is the 0-based column of the list's dashes: before the first
// item's first key, else the first dash on that item's line.
func dashColumn(lines []string, seq *yaml.Node) (int, bool) {
	ln := lines[seq.Content[0].Line-1]
	dash := seq.Content[0].Column - 3 // 1-based column of the first key, "- " before it
	if dash >= 0 && dash < len(ln) && ln[dash] == '-' {
		return dash, true
	}
	if i := strings.Index(ln, "-"); i >= 0 && strings.TrimSpace(ln[:i]) == "" {
		return i, true
	}
	return 0, false
}

func mapLookup(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// verifyAppend checks that updated is old plus exactly the proposed
// profiles, and that they raise no problem.
func verifyAppend(file string, old, updated []byte, group string, ids []string, knownFamily func(string) bool) []string {
	before, probs := inventory.Parse(file, old)
	if len(probs) > 0 {
		return []string{"the inventory file has problems of its own: " + probs[0].String()}
	}
	after, probs := inventory.Parse(file, updated)
	if len(probs) > 0 {
		return []string{"appending would not parse: " + probs[0].String()}
	}
	var reasons []string
	if len(before.Groups) != len(after.Groups) {
		reasons = append(reasons, "appending would change the set of groups")
	}
	for name, bg := range before.Groups {
		ag, ok := after.Groups[name]
		if !ok {
			reasons = append(reasons, fmt.Sprintf("appending would lose group %s", name))
			continue
		}
		want := len(bg.Profiles)
		if name == group {
			want += len(ids)
		}
		if len(ag.Profiles) != want {
			reasons = append(reasons, fmt.Sprintf("appending would give group %s %d profiles, want %d", name, len(ag.Profiles), want))
			continue
		}
		for i, p := range bg.Profiles {
			if jsonOf(p) != jsonOf(ag.Profiles[i]) {
				reasons = append(reasons, fmt.Sprintf("appending would change profile %s", p.ID))
			}
		}
		bg.Profiles, ag.Profiles = nil, nil
		if jsonOf(bg) != jsonOf(ag) {
			reasons = append(reasons, fmt.Sprintf("appending would change group %s's settings", name))
		}
	}
	if len(reasons) > 0 {
		return reasons
	}
	// The new profiles themselves: their ids, and no validation problem
	// the file did not have before — the same validation every verb
	// applies when it reads the file back.
	reparsed, _ := inventory.Parse(file, updated)
	g := reparsed.Groups[group]
	for i, id := range ids {
		p := g.Profiles[len(g.Profiles)-len(ids)+i]
		if p.ID != id {
			reasons = append(reasons, fmt.Sprintf("appended profile %d reads back as %s, want %s", i, text.Quote(p.ID), text.Quote(id)))
		}
	}
	had := map[string]bool{}
	old2, _ := inventory.Parse(file, old) // before's profiles were cleared above
	for _, pr := range inventory.Validate(old2, knownFamily) {
		had[pr.Field+": "+pr.Message] = true
	}
	for _, pr := range inventory.Validate(reparsed, knownFamily) {
		if !had[pr.Field+": "+pr.Message] {
			reasons = append(reasons, text.Printable(pr.Field+": "+pr.Message))
		}
	}
	return reasons
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(b)
}

// refuseInvalid checks every missing row's planned entry with the
// inventory's own validation (inventory.Parse and inventory.Validate, what
// every verb applies when it reads the inventory; knownFamily nil accepts
// any well-formed family name): each entry alone, as the one profile of a
// group whose workload is valid. An entry with any
// problem is refused, naming the manifest and the field; the returned
// report proposes only the others. So nothing --write writes is rejected
// when it is read back.
func refuseInvalid(r *Report, knownFamily func(string) bool, defaults Defaults) (*Report, []Refusal) {
	var refused []Refusal
	kept := *r
	kept.Rows = nil
	for _, row := range r.Rows {
		if row.State == StateMissing {
			if why := entryProblem(row, knownFamily, defaults); why != "" {
				name := row.Profile
				if !text.SafeName(name) {
					name = text.Quote(name)
				}
				refused = append(refused, Refusal{Profile: name, Manifest: row.Manifest, Problem: why})
				continue
			}
		}
		kept.Rows = append(kept.Rows, row)
	}
	return &kept, refused
}

// manifestField names the manifest field an inventory field comes from.
var manifestField = map[string]string{"id": "name", "family": "family", "checkpoint": "checkpoint",
	"precision": "precision", "task": "task", "revision": "revision", "bundle": "bundle"}

func entryProblem(row Row, knownFamily func(string) bool, defaults Defaults) string {
	var list bytes.Buffer
	enc := yaml.NewEncoder(&list)
	enc.SetIndent(2)
	if err := enc.Encode([]plannedEntry{plannedFor(row, defaults)}); err != nil {
		return "the entry does not encode: " + err.Error()
	}
	_ = enc.Close()
	var doc bytes.Buffer
	doc.WriteString("schema: trtmc-qual/inventory/v1\ngroups:\n  proposal:\n")
	doc.WriteString("    workload: {endpoint_type: chat, warmup: 5, measured: 50, concurrency: 1, dataset: {corpus: corpus}}\n")
	doc.WriteString("    profiles:\n")
	for _, line := range strings.SplitAfter(list.String(), "\n") {
		if line != "" {
			doc.WriteString("      " + line)
		}
	}
	name := "manifest " + row.Manifest
	inv, probs := inventory.Parse(name, doc.Bytes())
	if len(probs) == 0 {
		probs = inventory.Validate(inv, knownFamily)
	}
	if len(probs) == 0 {
		return ""
	}
	pr := probs[0]
	field := pr.Field
	if i := strings.LastIndex(field, ": "); i >= 0 {
		field = field[i+2:]
	}
	if mf, ok := manifestField[strings.SplitN(field, ".", 2)[0]]; ok {
		field = mf
	}
	return text.Printable(fmt.Sprintf("%s: %s: %s", row.Manifest, field, pr.Message))
}
