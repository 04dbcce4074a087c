package inventory

import (
	"context"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// ReadSnapshot reads a group's inventory snapshot in the evidence
// (OUT/<group>/inventory.json, the JSON list of its profiles the run
// wrote), closed: a field a profile does not define, a value of the wrong
// type or anything after the list is a *fileio.JSONError naming the file
// and the line; a read error (missing, not a regular file, over
// fileio.MaxDocumentBytes) is fileio.ReadFile's.
func ReadSnapshot(ctx context.Context, path string) ([]*Profile, error) {
	var profiles []*Profile
	if _, err := fileio.ReadJSON(ctx, path, fileio.MaxDocumentBytes, &profiles); err != nil {
		return nil, err
	}
	return profiles, nil
}
