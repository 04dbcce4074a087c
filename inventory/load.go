package inventory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// Problem is one thing wrong with an inventory, located precisely.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	if p.Field == "" {
		return fmt.Sprintf("%s: %s", loc, p.Message)
	}
	return fmt.Sprintf("%s: %s: %s", loc, p.Field, p.Message)
}

// Problems is every problem found; it is an error when non-empty, a
// configuration error (cmd/trtmc-qual's exit-code table says which status).
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// clean escapes control, bidirectional and invisible characters that a
// YAML key or value carried into a problem, so none reaches a terminal raw.
func (ps Problems) clean() {
	for i := range ps {
		ps[i].File, ps[i].Field, ps[i].Message = text.Printable(ps[i].File), text.Printable(ps[i].Field), text.Printable(ps[i].Message)
	}
}

// Sort orders problems by file, line, field, message.
func (ps Problems) Sort() {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		return a.Message < b.Message
	})
}

// Load reads and merges inventory files, then validates the result. It
// returns the inventory and every problem found (as Problems), never just
// the first. knownFamily reports whether a family name is configured; nil
// skips that check.
func Load(paths []string, knownFamily func(string) bool) (*Inventory, error) {
	inv := &Inventory{Schema: Schema, Groups: map[string]*Group{}}
	var probs Problems
	for _, path := range paths {
		// A regular file of at most MaxConfigBytes: a device, a FIFO or a
		// directory is refused before a byte is read.
		data, err := fileio.ReadFile(context.Background(), path, fileio.MaxConfigBytes)
		if err != nil {
			// The user named a file that cannot be the inventory: a
			// configuration problem (exit 2), naming the file.
			probs = append(probs, Problem{File: path, Message: fileio.ReadProblem("the inventory", path, err)})
			continue
		}
		probs = append(probs, parseInto(inv, path, data)...)
	}
	probs = append(probs, Validate(inv, knownFamily)...)
	probs.clean()
	probs.Sort()
	if len(probs) > 0 {
		return inv, probs
	}
	return inv, nil
}

// Parse reads one inventory document (for tests and fuzzing).
func Parse(path string, data []byte) (*Inventory, Problems) {
	inv := &Inventory{Schema: Schema, Groups: map[string]*Group{}}
	probs := parseInto(inv, path, data)
	probs.clean()
	probs.Sort()
	return inv, probs
}

var yamlLine = regexp.MustCompile(`(?:yaml: )?line (\d+): (.*)`)

func parseInto(inv *Inventory, path string, data []byte) Problems {
	var probs Problems
	add := func(line int, field, format string, args ...any) {
		probs = append(probs, Problem{File: path, Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		line := 0
		msg := err.Error()
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			fmt.Sscanf(m[1], "%d", &line)
			msg = m[2]
			// yaml.v3 reports an unclosed flow collection at its opening
			// line counted from zero; make it the 1-based opening line.
			if strings.HasPrefix(msg, "did not find expected ',' or") {
				line++
				msg += " (unclosed flow collection opened here)"
			}
		}
		if errors.Is(err, io.EOF) {
			msg = "empty document"
		}
		add(line, "", "yaml syntax: %s", strings.TrimPrefix(msg, "yaml: "))
		return probs
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		add(doc.Line, "", "top level must be a mapping with `schema` and `groups`")
		return probs
	}
	root := doc.Content[0]
	for _, fp := range checkNode(root, reflect.TypeOf(Inventory{}), "") {
		if fp.field != "groups" { // its own check below
			add(fp.line, fp.field, "%s", fp.msg)
		}
	}
	schemaNode := mapValue(root, "schema")
	switch {
	case schemaNode == nil:
		add(root.Line, "schema", "missing (want %+q)", Schema)
	case schemaNode.Value != Schema:
		add(schemaNode.Line, "schema", "unsupported schema %+q (want %+q)", schemaNode.Value, Schema)
	}
	groupsNode := mapValue(root, "groups")
	if groupsNode == nil {
		add(root.Line, "groups", "missing")
		return probs
	}
	if groupsNode.Kind != yaml.MappingNode {
		add(groupsNode.Line, "groups", "must be a mapping of group name to group")
		return probs
	}
	for i := 0; i+1 < len(groupsNode.Content); i += 2 {
		keyN, valN := groupsNode.Content[i], groupsNode.Content[i+1]
		name := keyN.Value
		field := "groups." + name
		if !text.SafeName(name) {
			field = "groups." + text.Quote(name)
		}
		if _, dup := inv.Groups[name]; dup {
			add(keyN.Line, field, "group %+q is defined twice", name)
			continue
		}
		if valN.Kind != yaml.MappingNode {
			add(valN.Line, field, "must be a mapping")
			continue
		}
		if g := parseGroup(path, name, field, keyN, valN, add); g != nil {
			inv.Groups[name] = g
		}
	}
	return probs
}

// parseGroup reads one group and its profiles. Every key and value is
// checked against the Go types first (checkNode), each problem once, at
// its own line, and the field it concerns is marked so that validation
// does not report that field again (a misspelled key is not also a
// missing one; "measured: 5O" is not also "must be > 0"). yaml's own type
// errors are reported only if that check found nothing: it fails closed.
func parseGroup(path, name, field string, keyN, valN *yaml.Node, add func(int, string, string, ...any)) *Group {
	g := &Group{}
	found := 0
	for _, fp := range checkNode(valN, reflect.TypeOf(Group{}), "") {
		add(fp.line, field+"."+fp.field, "%s", fp.msg)
		g.shadow = shadowFields(g.shadow, fp)
		found++
	}
	err := valN.Decode(g)
	g.Name, g.File, g.Line = name, path, keyN.Line
	g.FieldLines = fieldLines(valN, "")
	g.Profiles = nil
	if pn := mapValue(valN, "profiles"); pn != nil {
		if pn.Kind != yaml.SequenceNode {
			add(pn.Line, field+".profiles", "must be a list")
		} else {
			for j, item := range pn.Content {
				if item.Kind != yaml.MappingNode {
					add(item.Line, fmt.Sprintf("%s.profiles[%d]", field, j), "must be a mapping")
					continue
				}
				p := &Profile{}
				pfield := "profile " + orUnnamed(scalarValue(item, "id")) + ": "
				for _, fp := range checkNode(item, reflect.TypeOf(Profile{}), "") {
					add(fp.line, pfield+fp.field, "%s", fp.msg)
					p.shadow = shadowFields(p.shadow, fp)
					found++
				}
				_ = item.Decode(p) // its type errors are the group's, below
				p.Group, p.File, p.Line = name, path, item.Line
				p.FieldLines = fieldLines(item, "")
				g.Profiles = append(g.Profiles, p)
			}
		}
	}
	if err != nil && found == 0 {
		addDecodeError(add, valN.Line, field, err)
	}
	return g
}

// scalarValue is the value of a scalar key of mapping n ("" when absent or
// not a scalar).
func scalarValue(n *yaml.Node, key string) string {
	if v := mapValue(n, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// shadowFields adds the fields a parse problem stands for: the field
// itself and, for a misspelled key, the field it most likely meant.
func shadowFields(shadow map[string]bool, fp fieldProblem) map[string]bool {
	if shadow == nil {
		shadow = map[string]bool{}
	}
	shadow[fp.field] = true
	if fp.meant != "" {
		shadow[fp.meant] = true
	}
	return shadow
}

// shadowed reports whether a validation problem about field is the
// consequence of a parse problem already reported: about the field, one
// of its parents, or one of its children.
func shadowed(shadow map[string]bool, field string) bool {
	for b := range shadow {
		if field == b || strings.HasPrefix(field, b+".") || strings.HasPrefix(b, field+".") || strings.HasPrefix(b, field+"[") {
			return true
		}
	}
	return false
}

func addDecodeError(add func(int, string, string, ...any), line int, field string, err error) {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		for _, e := range te.Errors {
			l := line
			msg := e
			if m := yamlLine.FindStringSubmatch(e); m != nil {
				fmt.Sscanf(m[1], "%d", &l)
				msg = m[2]
			}
			add(l, field, "%s", msg)
		}
		return
	}
	add(line, field, "%v", err)
}

// yamlKey is the YAML key of a struct field: its yaml tag's name.
func yamlKey(f reflect.StructField) string { return strings.Split(f.Tag.Get("yaml"), ",")[0] }

// yamlFields are the YAML keys of struct type t and their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := yamlKey(f)
		if tag == "" || tag == "-" {
			continue
		}
		out[tag] = f.Type
	}
	return out
}

func fieldLines(n *yaml.Node, prefix string) map[string]int {
	out := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := join(prefix, k.Value)
		out[name] = k.Line
		if v.Kind == yaml.MappingNode {
			for kk, l := range fieldLines(v, name) {
				out[kk] = l
			}
		}
	}
	return out
}

// mapValue is the value of key in mapping n (nil when absent).
func mapValue(n *yaml.Node, key string) *yaml.Node {
	_, v := mapKeyValue(n, key)
	return v
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ResolvePath makes a path from the inventory relative to the inventory
// file's directory, unless it is absolute.
func ResolvePath(inventoryFile, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(inventoryFile), p)
}
