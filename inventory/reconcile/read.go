package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// ReadReport reads a saved `inventory reconcile -o json` of group, closed:
// its schema first (another document is named as such), then the whole
// document with no field it does not define, no value of the wrong type
// and nothing after it; the group must be group's and the commit given.
// A problem of the document is a *fileio.JSONError naming the file and
// the line; a read error (missing, not a regular file, over
// fileio.MaxDocumentBytes) is fileio.ReadFile's.
func ReadReport(ctx context.Context, path, group string) (*Report, error) {
	data, err := fileio.ReadFile(ctx, path, fileio.MaxDocumentBytes)
	if err != nil {
		return nil, err
	}
	// bad is a field of the document that is not what it must be, at the
	// line of its key; the message names the field.
	bad := func(key, format string, args ...any) error {
		return &fileio.JSONError{Path: path, Line: fileio.KeyLine(data, key), Err: fmt.Errorf(format, args...)}
	}
	var probe struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(data, &probe) == nil && probe.Schema != Schema {
		return nil, bad("schema", "schema is %q, want %q (inventory reconcile -o json)", probe.Schema, Schema)
	}
	var r Report
	if err := fileio.DecodeJSON(path, data, &r); err != nil {
		var je *fileio.JSONError
		if errors.As(err, &je) {
			je.Err = fmt.Errorf("not the JSON of inventory reconcile -o json: %w", je.Err)
		}
		return nil, err
	}
	switch {
	case r.Group != group:
		return nil, bad("group", "group is %q, want %q", r.Group, group)
	case r.Commit == "":
		return nil, bad("commit", "commit is missing")
	}
	return &r, nil
}
