package verdict

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// CorrectnessFile is the correctness result's file name in a checkpoint's
// evidence directory.
const CorrectnessFile = "correctness.json"

// CorrectnessDoc is the contract of correctness.json, which a family's
// correctness case writes and ReadCorrectness reads: passed, and per gate
// name, value, op, threshold and passed, are required (a pointer here);
// metrics are optional; other fields are the family's own.
type CorrectnessDoc struct {
	Passed  *bool              `json:"passed"`
	Metrics map[string]float64 `json:"metrics"`
	Gates   []CorrectnessGate  `json:"gates"`
}

// CorrectnessGate is one gate of correctness.json. Reference, the same
// metric of the reference implementation, is optional; when given it must
// be a number.
type CorrectnessGate struct {
	Name      *string  `json:"name"`
	Value     *float64 `json:"value"`
	Op        *string  `json:"op"`
	Threshold *float64 `json:"threshold"`
	Passed    *bool    `json:"passed"`
	Reference *float64 `json:"reference,omitempty"`
}

// ReadCorrectness reads a correctness case's result file
// (docs/design.md), strictly: `passed` must be a boolean, and every gate
// must carry its name, value, op, threshold and outcome (passed), each of
// its type; a gate's reference, when given, is a number (JSON null is no
// reference). Metrics are kept as given. Errors are *EvidenceError naming the
// file, line and field. The correctness stage and `report --rejudge` both
// read it through here.
func ReadCorrectness(path string) (*Correctness, error) {
	data, err := fileio.ReadFile(context.Background(), path, fileio.MaxDocumentBytes)
	if err != nil {
		return nil, &EvidenceError{File: path, Err: err}
	}
	var raw CorrectnessDoc
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, DecodeError(path, data, err)
	}
	missing := func(field string) error {
		return &EvidenceError{File: path, Line: lineOfKey(data, strings.TrimPrefix(field[strings.LastIndexByte(field, '.')+1:], ".")),
			Field: field, Err: errors.New("is missing")}
	}
	if raw.Passed == nil {
		return nil, missing("passed")
	}
	c := &Correctness{Ran: true, Passed: *raw.Passed, Metrics: raw.Metrics, Output: CorrectnessFile}
	for i, g := range raw.Gates {
		f := func(name string) string { return fmt.Sprintf("gates[%d].%s", i, name) }
		switch {
		case g.Name == nil:
			return nil, missing(f("name"))
		case g.Value == nil:
			return nil, missing(f("value"))
		case g.Op == nil:
			return nil, missing(f("op"))
		case g.Threshold == nil:
			return nil, missing(f("threshold"))
		case g.Passed == nil:
			return nil, missing(f("passed"))
		}
		c.Gates = append(c.Gates, Gate{Name: *g.Name, Value: *g.Value, Op: *g.Op, Threshold: *g.Threshold, Passed: *g.Passed, Reference: g.Reference})
	}
	return c, nil
}
