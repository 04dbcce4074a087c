package drift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// ReadReport reads a saved `inventory drift -o json` that checked group,
// closed: its schema first (another document is named as such), then the
// whole document with no field it does not define, no value of the wrong
// type and nothing after it; group must be among the groups it checked
// and both commits given. A problem of the document is a
// *fileio.JSONError naming the file and the line; a read error (missing,
// not a regular file, over fileio.MaxDocumentBytes) is fileio.ReadFile's.
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
		return nil, bad("schema", "schema is %q, want %q (inventory drift -o json)", probe.Schema, Schema)
	}
	var r Report
	if err := fileio.DecodeJSON(path, data, &r); err != nil {
		var je *fileio.JSONError
		if errors.As(err, &je) {
			je.Err = fmt.Errorf("not the JSON of inventory drift -o json: %w", je.Err)
		}
		return nil, err
	}
	switch {
	case !slices.Contains(r.Groups, group):
		return nil, bad("groups", "checked groups %q, not %q (inventory drift --group %s -o json)", r.Groups, group, group)
	case r.BaseCommit == "":
		return nil, bad("base_commit", "base_commit or head_commit is missing")
	case r.HeadCommit == "":
		return nil, bad("head_commit", "base_commit or head_commit is missing")
	}
	return &r, nil
}

// GroupChanges counts the changes that are group's: those of its
// families, and those no group could be told for (fail closed), in all
// and by category.
func (r *Report) GroupChanges(group string) (n int, byCategory map[string]int) {
	byCategory = map[string]int{}
	for _, c := range r.Changes {
		if gs := strings.Split(c.Groups, ","); slices.Contains(gs, group) || slices.Contains(gs, unattributedGroup) || c.Groups == "" {
			n++
			byCategory[c.Category]++
		}
	}
	return n, byCategory
}
