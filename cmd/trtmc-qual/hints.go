package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual/slurm"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// evidenceGroupHint ends an error about a group that has no evidence under
// the roots (reports.ErrNoEvidence: a misspelled --group) with the group
// of the roots it most likely meant; the error's chain, and so its exit
// status, stays as it is.
func evidenceGroupHint(err error, roots []string, group string) error {
	if !errors.Is(err, reports.ErrNoEvidence) {
		return err
	}
	if h := inventory.DidYouMean(group, evidenceGroups(roots)); h != "" {
		return fmt.Errorf("%w; %s", err, h)
	}
	return err
}

// evidenceGroups are the group directories of the roots: each directory
// whose name is a valid group name.
func evidenceGroups(roots []string) []string {
	var groups []string
	for _, root := range roots {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.IsDir() && text.SafeName(e.Name()) && !slices.Contains(groups, e.Name()) {
				groups = append(groups, e.Name())
			}
		}
	}
	return groups
}

// slurmGroupHint ends slurm.ErrNoRecord for a group with the group of the
// evidence root's Slurm submissions it most likely meant.
func slurmGroupHint(err error, out, group string) error {
	if !errors.Is(err, slurm.ErrNoRecord) {
		return err
	}
	recorded, _ := slurm.RecordedGroups(filepath.Clean(out))
	if h := inventory.DidYouMean(group, recorded); h != "" {
		return fmt.Errorf("%w; %s", err, h)
	}
	return err
}

// setupFailure says what failed for each row with a setup reason: its first
// such reason's code and stage, and the reason's own words (its first
// line), never a generic list of what might have been unavailable.
func setupFailure(rows []*verdict.Result) error {
	what := make([]string, len(rows))
	for i, r := range rows {
		what[i] = r.Profile
		for _, rs := range r.Reasons {
			if rs.Class == verdict.ClassSetup {
				what[i] = fmt.Sprintf("%s: %s (stage %s): %s", r.Profile, rs.Code, rs.Stage, text.FirstLine(rs.Message))
				break
			}
		}
	}
	if len(what) == 1 {
		return fmt.Errorf("setup failed for %s", what[0])
	}
	return fmt.Errorf("setup failed for %d rows:\n  %s", len(what), strings.Join(what, "\n  "))
}
