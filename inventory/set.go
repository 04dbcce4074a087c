package inventory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Assignment is one FIELD=VALUE of `trtmc-qual inventory set`: a field of a
// profile (or of a group) named by its YAML keys, dotted for a nested one
// (bundle.sha256, exclusion.reason, workload.dataset.sha256). A list field
// (hardware, controls, gaps) takes its items separated by commas.
type Assignment struct {
	Field string `json:"field"`
	Value string `json:"value"`
}

// ParseAssignment reads FIELD=VALUE.
func ParseAssignment(s string) (Assignment, error) {
	f, v, ok := strings.Cut(s, "=")
	if !ok || f == "" {
		return Assignment{}, fmt.Errorf("%s: want FIELD=VALUE", showValue(s))
	}
	return Assignment{Field: f, Value: v}, nil
}

// Target is what an edit changes: the profile with id Profile, or, with
// Profile empty, the group named Group.
type Target struct {
	Profile string
	Group   string
}

// Pins an edit can compute, each by its rule (pins.go): the bundle file's
// and the tokenizer's of a profile, the corpus's of a group.
const (
	PinBundle    = "bundle"
	PinTokenizer = "tokenizer"
	PinCorpus    = "corpus"
)

// SetOptions is one `inventory set`.
type SetOptions struct {
	// Path names the file (in problems, and to resolve relative paths);
	// Data is its content.
	Path string
	Data []byte
	// Target and Assignments say what to change; Pins what to compute and
	// set after the assignments (from the entry's paths as they then are).
	Target      Target
	Assignments []Assignment
	Pins        []string
	// KnownFamily checks family names (nil: any well-formed name).
	KnownFamily func(string) bool
}

// SetResult is what an edit did: the new content, and every assignment
// made (the pins computed included), in order.
type SetResult struct {
	Data        []byte
	Assignments []Assignment
}

// Set edits one inventory file's content: each assignment changes or adds
// one key of the target, byte for byte in place — every other byte
// (comments, blank lines, key order, quoting, flow or block style) stays
// as it was, as `inventory reconcile --write` appends. Then it computes the
// pins asked for, from the entry's own paths, through the rules the run
// checks them by. It proves the result before returning it: the new
// content parses and validates with no problem the old content did not
// have, the target reads back with exactly the assigned values, and
// nothing else of the inventory changed.
//
// Bad input (a target or field the file does not have, a value of the
// wrong type, a result that does not validate, a layout it cannot edit in
// place) is Problems naming file, line and field; nothing is returned to
// write.
func Set(ctx context.Context, o SetOptions) (*SetResult, error) {
	out := &SetResult{Data: o.Data}
	var err error
	if out.Data, err = applyAll(o, o.Data, o.Assignments); err != nil {
		return nil, err
	}
	out.Assignments = append(out.Assignments, o.Assignments...)
	if len(o.Pins) > 0 {
		pins, err := computePins(ctx, o, out.Data)
		if err != nil {
			return nil, err
		}
		if out.Data, err = applyAll(o, out.Data, pins); err != nil {
			return nil, err
		}
		out.Assignments = append(out.Assignments, pins...)
	}
	if err := verifySet(o, out); err != nil {
		return nil, err
	}
	return out, nil
}

// applyAll applies the assignments one by one, the file read again after
// each, so that a later one sees what an earlier one added.
func applyAll(o SetOptions, data []byte, as []Assignment) ([]byte, error) {
	for _, a := range as {
		var err error
		if data, err = apply(o, data, a); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// setField is an assignment checked against the Go types: the field's
// YAML keys and its value as YAML text.
type setField struct {
	segs []string
	text string
}

// apply makes one assignment.
func apply(o SetOptions, data []byte, a Assignment) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		_, probs := Parse(o.Path, data)
		if len(probs) > 0 {
			return nil, probs
		}
		return nil, Problems{{File: o.Path, Message: "does not parse as YAML"}}
	}
	m, fieldName, line, err := findTarget(o, doc.Content[0])
	if err != nil {
		return nil, err
	}
	f, err := checkAssignment(o.Target, a)
	if err != nil {
		return nil, Problems{{File: o.Path, Line: keyLine(m, strings.Split(a.Field, "."), line), Field: fieldName(a.Field), Message: err.Error()}}
	}
	src := newSource(data)
	out, err := editPath(src, m, structOf(o.Target), f)
	var ee *editError
	if errors.As(err, &ee) {
		return nil, Problems{{File: o.Path, Line: ee.line, Field: fieldName(a.Field),
			Message: "cannot be edited in place: " + ee.msg + "; edit the file by hand"}}
	}
	return out, err
}

// keyLine is the line of the deepest key of the path that m has (def
// when it has none).
func keyLine(m *yaml.Node, segs []string, def int) int {
	for _, seg := range segs {
		if m == nil || m.Kind != yaml.MappingNode {
			break
		}
		k, v := mapKeyValue(m, seg)
		if k == nil {
			break
		}
		def, m = k.Line, v
	}
	return def
}

func structOf(t Target) reflect.Type {
	if t.Profile != "" {
		return reflect.TypeOf(Profile{})
	}
	return reflect.TypeOf(Group{})
}

// findTarget is the mapping node of the target, how its problems name a
// field, and its line.
func findTarget(o SetOptions, root *yaml.Node) (*yaml.Node, func(string) string, int, error) {
	t := o.Target
	groups := mapValue(root, "groups")
	var names, ids []string
	if groups != nil && groups.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(groups.Content); i += 2 {
			k, g := groups.Content[i], groups.Content[i+1]
			names = append(names, k.Value)
			if t.Profile == "" && k.Value == t.Group && g.Kind == yaml.MappingNode {
				return g, func(f string) string { return "groups." + orUnnamed(t.Group) + "." + f }, k.Line, nil
			}
			if t.Group != "" && k.Value != t.Group {
				continue
			}
			if ps := mapValue(g, "profiles"); ps != nil && ps.Kind == yaml.SequenceNode {
				for _, item := range ps.Content {
					id := scalarValue(item, "id")
					ids = append(ids, id)
					if t.Profile != "" && id == t.Profile && item.Kind == yaml.MappingNode {
						return item, func(f string) string { return "profile " + orUnnamed(id) + ": " + f }, item.Line, nil
					}
				}
			}
		}
	}
	if t.Profile == "" {
		return nil, nil, 0, Problems{{File: o.Path, Message: WithHint(fmt.Sprintf("no group %s in the file", showValue(t.Group)), t.Group, names)}}
	}
	in := ""
	if t.Group != "" {
		in = " of group " + showValue(t.Group)
	}
	return nil, nil, 0, Problems{{File: o.Path, Message: WithHint(fmt.Sprintf("no profile %s%s in the file", showValue(t.Profile), in), t.Profile, ids)}}
}

// checkAssignment resolves an assignment's field against the target's Go
// type (each key a declared one: a misspelled key gets the one it most
// likely meant) and checks its value for the field's type.
func checkAssignment(t Target, a Assignment) (setField, error) {
	f := setField{segs: strings.Split(a.Field, ".")}
	typ := structOf(t)
	for i, seg := range f.segs {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct {
			return f, fmt.Errorf("%s is not a mapping", strings.Join(f.segs[:i], "."))
		}
		fields := yamlFields(typ)
		ft, ok := fields[seg]
		if !ok {
			if h := DidYouMean(seg, sortedKeys(fields)); h != "" {
				return f, fmt.Errorf("unknown field; %s", h)
			}
			return f, fmt.Errorf("unknown field (known: %s)", strings.Join(sortedKeys(fields), ", "))
		}
		typ = ft
	}
	switch {
	case t.Profile != "" && a.Field == "id":
		return f, errors.New("the profile's id names it everywhere (rows, evidence); rename it by hand")
	case t.Profile == "" && (a.Field == "profiles" || a.Field == "workload.generation"):
		return f, fmt.Errorf("not a field inventory set changes; edit the file by hand")
	}
	for typ.Kind() == reflect.Pointer { // an optional mapping (exclusion) is a mapping
		typ = typ.Elem()
	}
	text, err := valueText(typ, a.Value)
	f.text = text
	return f, err
}

// valueText is the YAML text of a value for a field of type t, checked:
// an integer for an int, a number for a float, true or false for a bool,
// one line of printable text for a string (plain when it reads back as the
// same string, else double-quoted), a flow list for a list of strings.
func valueText(t reflect.Type, v string) (string, error) {
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return "", fmt.Errorf("%s: not an integer", showValue(v))
		}
		return v, nil
	case reflect.Float64:
		if f, err := strconv.ParseFloat(v, 64); err != nil || f != f {
			return "", fmt.Errorf("%s: not a number", showValue(v))
		}
		return v, nil
	case reflect.Bool:
		if v != "true" && v != "false" {
			return "", fmt.Errorf("%s: not true or false", showValue(v))
		}
		return v, nil
	case reflect.String:
		return stringText(v)
	case reflect.Slice:
		if t.Elem().Kind() != reflect.String {
			break
		}
		var items []string
		for _, it := range strings.Split(v, ",") {
			if it = strings.TrimSpace(it); it == "" {
				continue
			}
			s, err := stringText(it)
			if err != nil {
				return "", err
			}
			items = append(items, s)
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	}
	return "", fmt.Errorf("a %s field: not one inventory set changes; edit the file by hand", t.Kind())
}

func stringText(v string) (string, error) {
	if strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) || !utf8.ValidString(v) {
		return "", fmt.Errorf("%s: must be one line of printable text", showValue(v))
	}
	if plain(v) {
		return v, nil
	}
	return strconv.Quote(v), nil
}

// editPath sets the field's value in mapping m (of struct type t): the
// value in place when the key is there, else a new key — after the key
// before it in the type's order, with the missing parents as a flow
// mapping (exclusion: {reason: ...}).
func editPath(src *source, m *yaml.Node, t reflect.Type, f setField) ([]byte, error) {
	for i, seg := range f.segs {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		k, v := mapKeyValue(m, seg)
		if k == nil {
			return src.insertKey(m, keyBefore(t, seg, m), seg, nested(f.segs[i+1:], f.text))
		}
		if i == len(f.segs)-1 {
			return src.setValue(k, v, f.text)
		}
		switch {
		case v.Kind == yaml.MappingNode:
			m, t = v, yamlFields(t)[seg]
		case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null":
			return src.setValue(k, v, nested(f.segs[i+1:], f.text))
		default:
			return nil, cannot(k, "%s is a %s, not a mapping", seg, kindName(v))
		}
	}
	return nil, errors.New("empty field")
}

// nested is the value text for the keys still missing: "{b: {c: V}}".
func nested(segs []string, text string) string {
	for i := len(segs) - 1; i >= 0; i-- {
		text = "{" + segs[i] + ": " + text + "}"
	}
	return text
}

// keyBefore is the key of m that comes last before name in the type's
// field order ("" when none): a new key goes after it.
func keyBefore(t reflect.Type, name string, m *yaml.Node) string {
	prev := ""
	for i := 0; i < t.NumField(); i++ {
		tag := yamlKey(t.Field(i))
		if tag == name {
			return prev
		}
		if k, _ := mapKeyValue(m, tag); k != nil {
			prev = tag
		}
	}
	return prev
}

// mapKeyValue is the key node and the value node of key in mapping m
// (nil, nil when absent): the one lookup of a key in a YAML mapping of the
// package (mapValue is its value).
func mapKeyValue(m *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// computePins are the assignments of the pins asked for, each computed by
// its rule from the target's paths in data (after the assignments).
func computePins(ctx context.Context, o SetOptions, data []byte) ([]Assignment, error) {
	inv, probs := Parse(o.Path, data)
	if len(probs) > 0 {
		return nil, probs
	}
	var out []Assignment
	for _, pin := range o.Pins {
		a, err := pinFor(ctx, o, inv, pin)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func pinFor(ctx context.Context, o SetOptions, inv *Inventory, pin string) (Assignment, error) {
	bad := func(line int, field, format string, args ...any) (Assignment, error) {
		return Assignment{}, Problems{{File: o.Path, Line: line, Field: field, Message: fmt.Sprintf(format, args...)}}
	}
	if pin == PinCorpus {
		g := inv.Groups[o.Target.Group]
		if g == nil || o.Target.Profile != "" {
			return bad(0, "", "--pin corpus pins a group's workload.dataset.sha256: name the group (--group), not a profile")
		}
		field := "groups." + g.Name + ".workload.dataset.sha256"
		sum, err := CorpusSHA256(ctx, g.CorpusPath())
		if err != nil {
			return bad(lineIn(g.FieldLines, "workload.dataset", g.Line), field, "cannot pin the corpus: %v", err)
		}
		return Assignment{Field: "workload.dataset.sha256", Value: sum}, nil
	}
	p, ok := inv.Find(o.Target.Profile)
	if !ok || o.Target.Profile == "" {
		return bad(0, "", "--pin %s pins a profile's: name the profile", pin)
	}
	field := "profile " + p.ID + ": " + pin + ".sha256"
	switch pin {
	case PinBundle:
		sum, err := BundleSHA256(ctx, p.BundlePath())
		if err != nil {
			return bad(lineIn(p.FieldLines, "bundle.path", p.Line), field, "cannot pin the bundle: %v", err)
		}
		return Assignment{Field: "bundle.sha256", Value: sum}, nil
	case PinTokenizer:
		if p.Tokenizer.Path == "" {
			return bad(p.Line, field, "the profile names no tokenizer directory: set tokenizer.path first (tokenizer.path=DIR)")
		}
		sum, err := TokenizerSHA256(ctx, p.TokenizerPath())
		if err != nil {
			return bad(lineIn(p.FieldLines, "tokenizer.path", p.Line), field, "cannot pin the tokenizer: %v", err)
		}
		return Assignment{Field: "tokenizer.sha256", Value: sum}, nil
	}
	return bad(0, "", "unknown pin %s (bundle, tokenizer or corpus)", showValue(pin))
}

// verifySet proves the edit: the new content has no parse or validation
// problem the old one did not have (those it has are returned, naming
// file, line and field), the target reads back as the old one with the
// assignments made, and everything else is as it was.
func verifySet(o SetOptions, r *SetResult) error {
	before, probs := Parse(o.Path, o.Data)
	had := map[string]bool{}
	for _, p := range append(probs, Validate(before, o.KnownFamily)...) {
		had[p.Field+": "+p.Message] = true
	}
	after, probs := Parse(o.Path, r.Data)
	var fresh Problems
	for _, p := range append(probs, Validate(after, o.KnownFamily)...) {
		if !had[p.Field+": "+p.Message] {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) > 0 {
		fresh.clean()
		fresh.Sort()
		return fresh
	}
	want, err := expected(o.Target, before, r.Assignments)
	if err != nil {
		return err
	}
	if got, want := jsonOf(after), jsonOf(want); got != want {
		return fmt.Errorf("inventory set: %s: the edit does not read back as asked (a bug; nothing written):\n got %s\nwant %s", o.Path, got, want)
	}
	return nil
}

// expected is the inventory before, with the assignments made to the
// target through the Go types.
func expected(t Target, before *Inventory, as []Assignment) (*Inventory, error) {
	var cp Inventory
	if err := json.Unmarshal([]byte(jsonOf(before)), &cp); err != nil {
		return nil, err
	}
	var target reflect.Value
	if t.Profile != "" {
		p, ok := cp.Find(t.Profile)
		if !ok {
			return nil, fmt.Errorf("inventory set: no profile %s before the edit", t.Profile)
		}
		target = reflect.ValueOf(p).Elem()
	} else if g := cp.Groups[t.Group]; g != nil {
		target = reflect.ValueOf(g).Elem()
	}
	for _, a := range as {
		if err := assign(target, strings.Split(a.Field, "."), a.Value); err != nil {
			return nil, err
		}
	}
	return &cp, nil
}

// assign sets a field given by YAML keys to a value, as a YAML decode
// of the value's text would.
func assign(v reflect.Value, segs []string, val string) error {
	for _, seg := range segs {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		i := fieldIndex(v.Type(), seg)
		if i < 0 {
			return fmt.Errorf("no field %s", seg)
		}
		v = v.Field(i)
	}
	text, err := valueText(v.Type(), val)
	if err != nil {
		return err
	}
	return yaml.Unmarshal([]byte(text), v.Addr().Interface())
}

func fieldIndex(t reflect.Type, tag string) int {
	for i := 0; i < t.NumField(); i++ {
		if yamlKey(t.Field(i)) == tag {
			return i
		}
	}
	return -1
}

func jsonOf(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "error: " + err.Error()
	}
	return b.String()
}
