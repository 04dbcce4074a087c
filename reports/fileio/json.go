package fileio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// JSONError is a JSON document that is not what its reader takes: the
// file, the line (1-based, 0 when unknown) and the field, when known.
type JSONError struct {
	Path  string
	Line  int
	Field string
	Err   error
}

func (e *JSONError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *JSONError) Unwrap() error { return e.Err }

// ReadJSON reads path (ReadFile, at most limit bytes) and decodes it into
// v closed (DecodeJSON). It returns the bytes read, so that a caller can
// name the line of a field it checks (KeyLine). A read error is
// ReadFile's; a decoding one is a *JSONError.
func ReadJSON(ctx context.Context, path string, limit int64, v any) ([]byte, error) {
	data, err := ReadFile(ctx, path, limit)
	if err != nil {
		return nil, err
	}
	return data, DecodeJSON(path, data, v)
}

// DecodeJSON decodes data, the whole text of path, into v, closed: a
// field v has no place for, a value of the wrong type, a truncated text
// and anything after the one value are each a *JSONError with the line
// (and, where it can be told, the field).
func DecodeJSON(path string, data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		e := &JSONError{Path: path, Line: JSONLine(data, err), Err: err}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			e.Field, e.Err = te.Field, fmt.Errorf("is %s, want %s", te.Value, te.Type)
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			e.Err = errors.New("unknown field " + name)
			e.Line, e.Field = unknownField(data, reflect.TypeOf(v))
		}
		return e
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &JSONError{Path: path, Line: LineAt(data, dec.InputOffset()+int64(skipSpace(data[dec.InputOffset():]))),
			Err: errors.New("trailing data after the JSON value")}
	}
	return nil
}

// LineAt is the 1-based line of a byte offset of data.
func LineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// JSONLine is the line a JSON decoding error points at: the offset of a
// syntax or type error, the end of the text for a truncated one; 0 for
// any other error.
func JSONLine(data []byte, err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return LineAt(data, se.Offset)
	case errors.As(err, &te):
		return LineAt(data, te.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return LineAt(data, int64(len(bytes.TrimRight(data, " \t\r\n"))))
	}
	return 0
}

// KeyLine is the line of the top-level key of data's JSON object, or of
// the object's first byte when there is no such key.
func KeyLine(data []byte, key string) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	start := skipSpace(data)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return LineAt(data, int64(start))
	}
	for dec.More() {
		off := dec.InputOffset()
		off += int64(skipSpace(data[off:]))
		t, err := dec.Token()
		if err != nil {
			break
		}
		if t == key {
			return LineAt(data, off)
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
	}
	return LineAt(data, int64(start))
}

// skipSpace counts the bytes of white space and separators (, :) at the
// start of b.
func skipSpace(b []byte) int {
	n := 0
	for n < len(b) && bytes.IndexByte([]byte(" \t\r\n:,"), b[n]) >= 0 {
		n++
	}
	return n
}

// unknownField finds the first object key of data that type t has no
// field for, walking the text and the type together: its line and path
// (changes[2].colour). It returns 0 and "" when it finds none.
func unknownField(data []byte, t reflect.Type) (int, string) {
	w := &keyWalk{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	if w.value(t, "") {
		return w.line, w.field
	}
	return 0, ""
}

// keyWalk walks one JSON text with the Go type it decodes into.
type keyWalk struct {
	data  []byte
	dec   *json.Decoder
	line  int
	field string
}

func (w *keyWalk) offset() int64 {
	off := w.dec.InputOffset()
	return off + int64(skipSpace(w.data[off:]))
}

// value walks the next value as t; true once an unknown key is found (or
// the text ends in a way that stops the walk).
func (w *keyWalk) value(t reflect.Type, path string) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	off := w.offset()
	if off >= int64(len(w.data)) {
		return true
	}
	switch {
	case w.data[off] == '{' && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
		return w.object(t, path)
	case w.data[off] == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		if _, err := w.dec.Token(); err != nil {
			return true
		}
		for i := 0; w.dec.More(); i++ {
			if w.value(t.Elem(), fmt.Sprintf("%s[%d]", path, i)) {
				return true
			}
		}
		_, err := w.dec.Token()
		return err != nil
	}
	var skip json.RawMessage
	return w.dec.Decode(&skip) != nil
}

// object walks an object as a struct or map type t.
func (w *keyWalk) object(t reflect.Type, path string) bool {
	if _, err := w.dec.Token(); err != nil {
		return true
	}
	for w.dec.More() {
		off := w.offset()
		tok, err := w.dec.Token()
		if err != nil {
			return true
		}
		key, _ := tok.(string)
		name := key
		if path != "" {
			name = path + "." + key
		}
		elem := t
		if t.Kind() == reflect.Map {
			elem = t.Elem()
		} else if f, ok := structField(t, key); ok {
			elem = f
		} else {
			w.line, w.field = LineAt(w.data, off), name
			return true
		}
		if w.value(elem, name) {
			return true
		}
	}
	_, err := w.dec.Token()
	return err != nil
}

// structField is the type of t's field that encoding/json decodes key
// into (its name matched without regard to case, embedded structs
// included).
func structField(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" && !strings.HasPrefix(f.Tag.Get("json"), "-,") {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && tag == "" && ft.Kind() == reflect.Struct {
			if et, ok := structField(ft, key); ok {
				return et, true
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		name := tag
		if name == "" {
			name = f.Name
		}
		if strings.EqualFold(name, key) {
			return f.Type, true
		}
	}
	return nil, false
}
