package inventory

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// fieldProblem is one thing wrong with a key of an inventory mapping, found
// by walking the YAML nodes against the Go types: a key the type does not
// declare (with the declared key it most likely meant), or a value of the
// wrong kind. Its field is relative to the mapping walked ("workload.measured",
// "bundle.sha256").
type fieldProblem struct {
	line  int
	field string
	msg   string
	// meant is the declared field an unknown key most likely stands for
	// ("" when none is close): a problem about that field being missing
	// is this one's consequence, not a problem of its own.
	meant string
}

// checkNode checks the keys and values of mapping n against struct type t,
// recursing into nested structs (Group and Profile values are left to the
// caller, which names them itself). Every unknown key and every value of
// the wrong kind is one problem, at its own line.
func checkNode(n *yaml.Node, t reflect.Type, prefix string) []fieldProblem {
	fields := yamlFields(t)
	present := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		present[n.Content[i].Value] = true
	}
	var out []fieldProblem
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := join(prefix, k.Value)
		ft, ok := fields[k.Value]
		if !ok {
			out = append(out, unknownKey(k, name, prefix, fields, present))
			continue
		}
		out = append(out, checkValue(v, ft, name)...)
	}
	return out
}

// unknownKey is the problem of a key t does not declare: with the declared
// key it most likely meant when one is close and absent from the mapping,
// else with the list of declared keys.
func unknownKey(k *yaml.Node, name, prefix string, fields map[string]reflect.Type, present map[string]bool) fieldProblem {
	var absent []string
	for f := range fields {
		if !present[f] {
			absent = append(absent, f)
		}
	}
	if s := Suggest(k.Value, absent); len(s) == 1 {
		return fieldProblem{line: k.Line, field: name, msg: WithHint("unknown field", k.Value, absent), meant: join(prefix, s[0])}
	} else if len(s) > 1 {
		return fieldProblem{line: k.Line, field: name, msg: WithHint("unknown field", k.Value, absent)}
	}
	return fieldProblem{line: k.Line, field: name, msg: fmt.Sprintf("unknown field (known: %s)", strings.Join(sortedKeys(fields), ", "))}
}

// checkValue checks one value node against its field's type. A null value
// is the field's zero value, what leaving the key out gives, and passes.
func checkValue(v *yaml.Node, t reflect.Type, name string) []fieldProblem {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
		return nil
	}
	bad := func(msg string) []fieldProblem { return []fieldProblem{{line: v.Line, field: name, msg: msg}} }
	switch t.Kind() {
	case reflect.Struct:
		if t == reflect.TypeOf(Group{}) || t == reflect.TypeOf(Profile{}) {
			return nil
		}
		if v.Kind != yaml.MappingNode {
			return bad(describe(v) + "must be a mapping (" + strings.Join(sortedKeys(yamlFields(t)), ", ") + ")")
		}
		return checkNode(v, t, name)
	case reflect.Map:
		if v.Kind != yaml.MappingNode {
			return bad(describe(v) + "must be a mapping")
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Pointer || t.Elem().Kind() == reflect.Struct {
			return nil // the profiles list: the caller's
		}
		if v.Kind != yaml.SequenceNode {
			return bad(describe(v) + "must be a list")
		}
		var out []fieldProblem
		for i, e := range v.Content {
			out = append(out, checkValue(e, t.Elem(), fmt.Sprintf("%s[%d]", name, i))...)
		}
		return out
	default:
		return checkScalar(v, t, bad)
	}
	return nil
}

// checkScalar checks a scalar field's value: an integer for an int (never
// a float yaml would truncate), a number for a float, true or false for a
// bool, and any scalar for a string.
func checkScalar(v *yaml.Node, t reflect.Type, bad func(string) []fieldProblem) []fieldProblem {
	if v.Kind != yaml.ScalarNode {
		return bad(describe(v) + "must be " + kindWord(t))
	}
	tag := v.ShortTag()
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if tag != "!!int" {
			return bad(describe(v) + "not an integer")
		}
	case reflect.Float32, reflect.Float64:
		if tag != "!!int" && tag != "!!float" {
			return bad(describe(v) + "not a number")
		}
	case reflect.Bool:
		if tag != "!!bool" {
			return bad(describe(v) + "not true or false")
		}
	}
	return nil
}

// kindWord names what a scalar field takes.
func kindWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "an integer"
}

// describe is the start of a message about a value: the scalar itself
// ("5O: "), or what the node is when it is not a scalar.
func describe(v *yaml.Node) string {
	switch v.Kind {
	case yaml.MappingNode:
		return "a mapping: "
	case yaml.SequenceNode:
		return "a list: "
	}
	return showValue(v.Value) + ": "
}

// showValue renders a value of the inventory in a message: as it is when it is
// one plain word, else quoted (every non-ASCII and non-printable character
// escaped), cut to 64 characters.
func showValue(s string) string {
	s = text.Clip(s, 64)
	if s == "" || strings.ContainsAny(s, " \t:#\"'`,[]{}") || text.Printable(s) != s || strings.ContainsFunc(s, func(r rune) bool { return r > 0x7e }) {
		return text.Quote(s)
	}
	return s
}
