package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// object is a decoded JSON object whose keys were checked: exact spelling,
// no repeats, only allowed names. Values that are null count as absent.
type object map[string]json.RawMessage

// decodeObject decodes raw as a JSON object with only the allowed keys.
// where names the object in error messages ("" for the request body).
func decodeObject(raw json.RawMessage, where string, allowed ...string) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, reqErr(where, "is not valid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, reqErr(where, "must be a JSON object")
	}
	obj := object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, reqErr(where, "is not valid JSON: %v", err)
		}
		key := tok.(string) // object keys are always strings
		if !slices.Contains(allowed, key) {
			return nil, reqErr(where, "unknown field %q", key)
		}
		if _, dup := obj[key]; dup {
			return nil, reqErr(where, "field %q is repeated", key)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, reqErr(where, "is not valid JSON: %v", err)
		}
		obj[key] = value
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, reqErr(where, "is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, reqErr(where, "has trailing data after the JSON object")
	}
	for k, v := range obj {
		if string(v) == "null" {
			delete(obj, k)
		}
	}
	return obj, nil
}

// has reports whether the field is present (and not null).
func (o object) has(key string) bool {
	_, ok := o[key]
	return ok
}

// str decodes a string field; a missing field gives "".
func (o object) str(where, key string) (string, error) {
	v, ok := o[key]
	if !ok {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", reqErr(where, "field %q must be a string", key)
	}
	return s, nil
}

// array decodes an array field; a missing field gives nil.
func (o object) array(where, key string) ([]json.RawMessage, error) {
	v, ok := o[key]
	if !ok {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, reqErr(where, "field %q must be an array", key)
	}
	return items, nil
}

// integer decodes an integer field.
func (o object) integer(where, key string) (int64, error) {
	var n int64
	if err := json.Unmarshal(o[key], &n); err != nil {
		return 0, reqErr(where, "field %q must be an integer", key)
	}
	return n, nil
}

// number decodes a number field.
func (o object) number(where, key string) (float64, error) {
	var f float64
	if err := json.Unmarshal(o[key], &f); err != nil {
		return 0, reqErr(where, "field %q must be a number", key)
	}
	return f, nil
}

// boolean decodes a boolean field.
func (o object) boolean(where, key string) (bool, error) {
	var b bool
	if err := json.Unmarshal(o[key], &b); err != nil {
		return false, reqErr(where, "field %q must be a boolean", key)
	}
	return b, nil
}

// RequestError is a payload the Task rejects: the HTTP route answers 400.
type RequestError struct{ Msg string }

func (e *RequestError) Error() string { return e.Msg }

func reqErr(where, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if where != "" {
		msg = where + ": " + msg
	} else if strings.HasPrefix(msg, "is ") || strings.HasPrefix(msg, "must ") || strings.HasPrefix(msg, "has ") {
		msg = "request body " + msg
	}
	return &RequestError{Msg: msg}
}
