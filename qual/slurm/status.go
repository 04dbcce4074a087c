package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/qual"
	"github.com/trtmc-qual/trtmc-qual/reports"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// ErrNoRecord is returned by Status for an evidence root without a Slurm
// submission of the group.
var ErrNoRecord = errors.New("no Slurm submission recorded")

// StatusOptions configure one `trtmc-qual status` of a group.
type StatusOptions struct {
	Runner      proc.Runner
	CommandsDir string
	Out         string
	Group       string
	// Wait follows the tasks until every one has ended.
	Wait bool
	Poll time.Duration
	// WaitFn pauses between polls (nil: a timer).
	WaitFn func(ctx context.Context, d time.Duration) error
	Log    io.Writer
	Now    func() time.Time
	// RowExits are the exit statuses of a task that wrote its row
	// (Follower.RowExits).
	RowExits []int
}

// GroupStatus is what status found for one group.
type GroupStatus struct {
	Group  string
	Record *Record
	Tasks  []TaskStatus
	// Done is true when every task has ended and has its row; the group
	// tables were then (re)written.
	Done bool
}

// TaskStatus is one task: Slurm's last word on it and its row once settled.
type TaskStatus struct {
	Ref   TaskRef
	State *TaskState
	Row   *verdict.Result
}

// Status reads a group's submission, asks Slurm about its tasks and
// settles the ones that ended exactly as the driver would (their own row,
// or an error / not-run row naming the job); once every task has ended it
// writes the group tables, as the driver does. With Wait it follows the
// tasks to their end; an interrupted status only stops watching and never
// cancels anything.
func Status(ctx context.Context, o StatusOptions) (*GroupStatus, error) {
	rec, err := ReadRecord(o.Out, o.Group)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, fmt.Errorf("%w for group %s under %s", ErrNoRecord, o.Group, o.Out)
	}
	// The tasks write where the record says; status may be given the same
	// root by another path.
	rec.Out = o.Out
	profiles, err := snapshotProfiles(o.Out, o.Group)
	if err != nil {
		return nil, err
	}
	f := &Follower{Runner: o.Runner, CommandsDir: o.CommandsDir, Record: rec, Profiles: profiles, Log: o.Log,
		Now: o.Now, Poll: o.Poll, Wait: o.WaitFn, Watch: o.Wait, RowExits: o.RowExits}
	rows, ferr := f.Follow(ctx)
	gs := &GroupStatus{Group: o.Group, Record: rec, Done: f.Pending == 0}
	for _, t := range rec.Tasks {
		ts := TaskStatus{Ref: t, Row: rows[t.Profile]}
		if st, ok := f.States[t.ID()]; ok {
			ts.State = &st
		}
		gs.Tasks = append(gs.Tasks, ts)
	}
	if gs.Done {
		if err := qual.WriteGroupTables(o.Out, o.Group); err != nil {
			return gs, err
		}
	}
	return gs, ferr
}

// snapshotProfiles reads OUT/<group>/inventory.json, the inventory the
// submission ran with.
func snapshotProfiles(out, group string) (map[string]*inventory.Profile, error) {
	path := filepath.Join(out, group, reports.InventoryFile)
	data, err := fileio.ReadFile(context.Background(), path, fileio.MaxDocumentBytes)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]*inventory.Profile{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s", path, fileio.ReadProblem("the inventory snapshot", path, err))
	}
	var ps []*inventory.Profile
	if err := json.Unmarshal(data, &ps); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return profileMap(ps), nil
}
