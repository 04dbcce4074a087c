package aiperf

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// OutputEntry is one element of outputs.json (--export-outputs-json). The
// metrics are plain numbers in display units (ms, tokens).
type OutputEntry struct {
	SessionNum     *int               `json:"session_num,omitempty"`
	ConversationID string             `json:"conversation_id"`
	TurnIndex      *int               `json:"turn_index,omitempty"`
	XRequestID     string             `json:"x_request_id"`
	RequestStartNs *int64             `json:"request_start_ns,omitempty"`
	RequestEndNs   *int64             `json:"request_end_ns,omitempty"`
	Metrics        map[string]float64 `json:"metrics,omitempty"`
	ResponseText   *string            `json:"response_text"`
	// BenchmarkPhase is set by schema 1.1 only.
	BenchmarkPhase string `json:"benchmark_phase,omitempty"`
}

// Outputs is outputs.json. AIPerf 0.13.0 writes schema "1.0" (profiling
// records only, in "data"); schema "1.1" (later AIPerf) adds a "warmup"
// array and a benchmark_phase per entry. Both are accepted.
type Outputs struct {
	SchemaVersion string        `json:"schema_version"`
	Data          []OutputEntry `json:"data"`
	Warmup        []OutputEntry `json:"warmup,omitempty"`
}

// ParseOutputs reads outputs.json, streaming its arrays element by element.
func ParseOutputs(path string) (*Outputs, error) {
	out := &Outputs{}
	seenData := false
	err := scanObject(path, func(key string, dec *json.Decoder) error {
		switch key {
		case "schema_version":
			if err := decodeElem(path, key, dec, &out.SchemaVersion); err != nil {
				return err
			}
		case "data", "warmup":
			seenData = seenData || key == "data"
			return scanArray(path, key, dec, func(i int, dec *json.Decoder) error {
				var e OutputEntry
				if err := decodeElem(path, fmt.Sprintf("%s[%d]", key, i), dec, &e); err != nil {
					return err
				}
				field := ""
				switch {
				case e.XRequestID == "":
					field = "x_request_id"
				case e.ConversationID == "":
					field = "conversation_id"
				}
				if field != "" {
					return &ParseError{File: path, Field: fmt.Sprintf("%s[%d].%s", key, i, field), Err: errMissing}
				}
				if key == "data" {
					out.Data = append(out.Data, e)
				} else {
					out.Warmup = append(out.Warmup, e)
				}
				return nil
			})
		default:
			var skip json.RawMessage
			return dec.Decode(&skip)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch out.SchemaVersion {
	case "1.0", "1.1":
	case "":
		return nil, &ParseError{File: path, Field: "schema_version", Err: errMissing}
	default:
		return nil, &ParseError{File: path, Field: "schema_version", Err: fmt.Errorf("unsupported %q (want 1.0 or 1.1)", out.SchemaVersion)}
	}
	if !seenData {
		return nil, &ParseError{File: path, Field: "data", Err: errMissing}
	}
	return out, nil
}

// InputEntry is one conversation of inputs.json: the payloads AIPerf
// formatted from the dataset, one per turn, before per-request additions.
type InputEntry struct {
	SessionID string            `json:"session_id"`
	Payloads  []json.RawMessage `json:"payloads"`
}

// ScanInputs streams inputs.json ({"data":[{session_id, payloads}]}), in
// dataset order, one conversation at a time.
func ScanInputs(path string, fn func(i int, e *InputEntry) error) error {
	seenData := false
	err := scanObject(path, func(key string, dec *json.Decoder) error {
		if key != "data" {
			var skip json.RawMessage
			return dec.Decode(&skip)
		}
		seenData = true
		return scanArray(path, key, dec, func(i int, dec *json.Decoder) error {
			var e InputEntry
			if err := decodeElem(path, fmt.Sprintf("data[%d]", i), dec, &e); err != nil {
				return err
			}
			if e.SessionID == "" {
				return &ParseError{File: path, Field: fmt.Sprintf("data[%d].session_id", i), Err: errMissing}
			}
			return fn(i, &e)
		})
	})
	if err == nil && !seenData {
		err = &ParseError{File: path, Field: "data", Err: errMissing}
	}
	return err
}

// scanObject walks the top-level keys of a JSON object file, handing the
// decoder to fn positioned at each key's value. fn must consume the value.
func scanObject(path string, fn func(key string, dec *json.Decoder) error) error {
	f, _, err := fileio.OpenRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(f, readBufferSize))
	if err := expectDelim(path, dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return streamError(path, dec, err)
		}
		key, ok := tok.(string)
		if !ok {
			return &ParseError{File: path, Err: fmt.Errorf("expected an object key, got %v", tok)}
		}
		if err := fn(key, dec); err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				return err
			}
			return streamError(path, dec, err)
		}
	}
	if err := expectDelim(path, dec, '}'); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &ParseError{File: path, Err: errors.New("trailing data after the top-level object")}
	}
	return nil
}

func scanArray(path, key string, dec *json.Decoder, fn func(i int, dec *json.Decoder) error) error {
	tok, err := dec.Token()
	if err != nil {
		return streamError(path, dec, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return &ParseError{File: path, Field: key, Err: fmt.Errorf("want an array, got %v", tok)}
	}
	for i := 0; dec.More(); i++ {
		if err := fn(i, dec); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // ']'
		return streamError(path, dec, err)
	}
	return nil
}

func expectDelim(path string, dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return streamError(path, dec, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return &ParseError{File: path, Err: fmt.Errorf("invalid JSON: want %q, got %v", want, tok)}
	}
	return nil
}

// decodeElem decodes the next value, naming the field on failure.
func decodeElem(path, field string, dec *json.Decoder, v any) error {
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return streamError(path, dec, err)
	}
	return &ParseError{File: path, Field: field, Err: err}
}

func streamError(path string, dec *json.Decoder, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &ParseError{File: path, Err: fmt.Errorf("invalid JSON: unexpected end of file at byte %d (truncated?)", dec.InputOffset())}
	}
	return &ParseError{File: path, Err: fmt.Errorf("invalid JSON near byte %d: %w", dec.InputOffset(), err)}
}
