// Package schemas generates the JSON Schemas (draft 2020-12) of every JSON
// document trtmc-qual writes from the Go types that encode them, so the
// shipped files under schemas/ never drift from the code: a test in
// cmd/trtmc-qual regenerates them and fails on any difference (`-update`
// rewrites them), and other tests validate real outputs against them.
//
// The rules follow encoding/json: a field's name is its json tag; a field
// without omitempty is required; a pointer, slice or map without
// omitempty may be null; time.Time is an RFC 3339 string; json.RawMessage
// and interface values are any JSON value. Objects allow no properties
// beyond the type's, so a field written but not declared is caught too.
package schemas

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// Draft is the JSON Schema dialect of the generated files.
const Draft = "https://json-schema.org/draft/2020-12/schema"

// Doc is one document trtmc-qual writes.
type Doc struct {
	// Name is the file's stem: schemas/<Name>.schema.json.
	Name string
	// Title says what the document is and where it is written.
	Title string
	// Type is the Go type encoded (a struct, a slice of one...).
	Type reflect.Type
	// Lines is true for JSON Lines files: the schema is one line's.
	Lines bool
	// Input is a document others write and trtmc-qual reads (a family's
	// correctness.json): a pointer field is required and not null (the
	// reader refuses a missing one) unless it is omitempty (optional, and
	// may be null), any other field is optional, and properties beyond the
	// type's are allowed.
	Input bool
}

// Generate returns the schema of d, indented, ending in a newline. Only
// tests call it (cmd/trtmc-qual's schema tests, which check and -update
// the shipped files): the schemas are data the binary never generates.
func Generate(d Doc) ([]byte, error) {
	g := &gen{defs: map[string]any{}, names: map[reflect.Type]string{}, input: d.Input}
	root, err := g.schema(d.Type, false)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", d.Name, err)
	}
	out := map[string]any{
		"$schema": Draft,
		"$id":     "https://github.com/trtmc-qual/trtmc-qual/schemas/" + d.Name + ".schema.json",
		"title":   d.Title,
	}
	if d.Lines {
		out["description"] = "One line of a JSON Lines file."
	}
	for k, v := range root {
		out[k] = v
	}
	if len(g.defs) > 0 {
		out["$defs"] = g.defs
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

type gen struct {
	defs  map[string]any
	names map[reflect.Type]string
	input bool
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

// schema is the schema of t; nullable adds null (a nil pointer, slice or
// map that is not omitted).
func (g *gen) schema(t reflect.Type, nullable bool) (map[string]any, error) {
	s, err := g.base(t)
	if err != nil {
		return nil, err
	}
	if !nullable {
		return s, nil
	}
	if len(s) == 0 {
		return s, nil // any value, null included
	}
	if typ, ok := s["type"].(string); ok {
		s["type"] = []string{typ, "null"}
		return s, nil
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}, nil
}

func (g *gen) base(t reflect.Type) (map[string]any, error) {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case t == rawType:
		return map[string]any{}, nil
	case t.Kind() != reflect.Pointer && (t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType)):
		// A custom encoding the types cannot describe; the known ones are
		// strings (aiperf.Body).
		if t.Kind() == reflect.String {
			return map[string]any{"type": "string"}, nil
		}
		return map[string]any{}, nil
	case t.Kind() != reflect.Pointer && t.Implements(textType):
		return map[string]any{"type": "string"}, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Interface:
		return map[string]any{}, nil
	case reflect.Pointer:
		return g.base(t.Elem())
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}, nil
		}
		items, err := g.schema(t.Elem(), t.Elem().Kind() == reflect.Pointer)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("%s: map keys must be strings", t)
		}
		vals, err := g.schema(t.Elem(), nullableKind(t.Elem()))
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": vals}, nil
	case reflect.Struct:
		return g.ref(t)
	}
	return nil, fmt.Errorf("%s: no JSON encoding", t)
}

func nullableKind(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return t != rawType
	}
	return false
}

// ref puts a named struct into $defs and refers to it; an anonymous one
// is inlined.
func (g *gen) ref(t reflect.Type) (map[string]any, error) {
	if t.Name() == "" {
		return g.object(t)
	}
	name, ok := g.names[t]
	if !ok {
		name = defName(t, g.names)
		g.names[t] = name
		g.defs[name] = map[string]any{} // a placeholder for recursion
		obj, err := g.object(t)
		if err != nil {
			return nil, err
		}
		g.defs[name] = obj
	}
	return map[string]any{"$ref": "#/$defs/" + name}, nil
}

// defName is pkg.Type, unique within one schema.
func defName(t reflect.Type, used map[reflect.Type]string) string {
	pkg := t.PkgPath()
	if i := strings.LastIndex(pkg, "/"); i >= 0 {
		pkg = pkg[i+1:]
	}
	name := pkg + "." + t.Name()
	if pkg == "" {
		name = t.Name()
	}
	for _, n := range used {
		if n == name {
			return name + fmt.Sprintf("_%d", len(used))
		}
	}
	return name
}

func (g *gen) object(t reflect.Type) (map[string]any, error) {
	props := map[string]any{}
	var required []string
	if err := g.fields(t, props, &required); err != nil {
		return nil, err
	}
	obj := map[string]any{"type": "object", "properties": props, "additionalProperties": g.input}
	if len(required) > 0 {
		obj["required"] = required
	}
	return obj, nil
}

func (g *gen) fields(t reflect.Type, props map[string]any, required *[]string) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if err := g.fields(ft, props, required); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		omit := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		nullable := !omit && nullableKind(f.Type)
		if g.input {
			// A pointer field is required and not null, unless it is
			// marked omitempty: then it is optional and may be null
			// (correctness.json's gate reference).
			ptr := f.Type.Kind() == reflect.Pointer
			nullable = (!ptr || omit) && nullableKind(f.Type)
			omit = !ptr || omit
		}
		s, err := g.schema(f.Type, nullable)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
		}
		if strings.Contains(","+opts+",", ",string,") {
			s = map[string]any{"type": "string"}
		}
		props[name] = s
		if !omit {
			*required = append(*required, name)
		}
	}
	return nil
}
