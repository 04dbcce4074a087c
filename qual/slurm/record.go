package slurm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/trtmc-qual/trtmc-qual/inventory"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// RecordSchema is the schema id of OUT/.slurm/<group>/job.json.
const RecordSchema = "trtmc-qual/slurm-job/v1"

// dirName is the evidence root's directory for Slurm bookkeeping: the job
// record, the batch scripts and the tasks' logs, per group. It sits beside
// the group directories, never inside one, so a report never mistakes it
// for a profile's evidence.
const dirName = ".slurm"

// Record is what a Slurm run of a group submitted: written before the
// driver follows the tasks, read by `status`, by `run --resume` (to adopt
// tasks still queued or running) and by a driver that must refuse to start
// a second submission over a live one.
type Record struct {
	Schema string `json:"schema"`
	Group  string `json:"group"`
	// Out is the evidence root (absolute) the tasks write into.
	Out         string    `json:"out"`
	SubmittedAt time.Time `json:"submitted_at"`
	// Submission is this submission's nonce: random, written here before
	// sbatch runs, given to Slurm as the jobs' --comment and to every task
	// in its environment (TRTMC_QUAL_SLURM_SUBMISSION), which writes it
	// into its row's provenance. Job ids alone repeat (a second cluster on
	// the same root, a reset slurmctld); the nonce does not.
	Submission string `json:"submission"`
	// Workload is the group's workload (for the rows the driver writes).
	Workload inventory.Workload `json:"workload"`
	// Arrays are the array jobs this submission made.
	Arrays []Array `json:"arrays"`
	// Tasks are every task followed: this submission's and the ones a
	// --resume adopted from an earlier submission.
	Tasks []TaskRef `json:"tasks"`
}

// Array is one submitted array job: one task per profile of one resource
// request.
type Array struct {
	JobID      string   `json:"job_id"`
	Script     string   `json:"script"`
	Sbatch     []string `json:"sbatch"`
	GPUs       int      `json:"gpus"`
	TimeLimit  string   `json:"time_limit"`
	Constraint string   `json:"constraint,omitempty"`
	Profiles   []string `json:"profiles"`
}

// TaskRef maps an array task to the profile it qualifies.
type TaskRef struct {
	Profile    string `json:"profile"`
	ArrayJobID string `json:"array_job_id"`
	Index      int    `json:"index"`
	// Submission is the nonce of the submission that started the task
	// (an adopted task keeps its own submission's).
	Submission string `json:"submission"`
	// Adopted is set for a task of an earlier submission that --resume
	// followed instead of submitting the profile again.
	Adopted bool `json:"adopted,omitempty"`
}

// SubmissionEnv is the variable through which a task learns the nonce of
// the submission that started it (see Record.Submission).
const SubmissionEnv = "TRTMC_QUAL_SLURM_SUBMISSION"

// commentPrefix starts the --comment of every array job: the comment is
// how the driver, status and --resume tell their jobs from another
// cluster's or submission's jobs that reuse the same ids.
const commentPrefix = "trtmc-qual:"

// Comment is the --comment a submission's jobs carry.
func Comment(submission string) string { return commentPrefix + submission }

// newSubmission is a fresh submission nonce: 128 random bits, hex.
func newSubmission() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("submission nonce: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// ID is the task's Slurm id, "12_3".
func (t TaskRef) ID() string { return TaskID(t.ArrayJobID, t.Index) }

// groupDir is OUT/.slurm/<group>.
func groupDir(out, group string) string { return filepath.Join(out, dirName, group) }

func recordPath(out, group string) string { return filepath.Join(groupDir(out, group), "job.json") }

// logPattern is the tasks' --output: OUT/.slurm/<group>/logs/<job>_<task>.out.
func logPattern(out, group string) string {
	return filepath.Join(groupDir(out, group), "logs", "%A_%a.out")
}

// TaskLog is where a task's stdout and stderr went.
func TaskLog(out, group string, t TaskRef) string {
	return filepath.Join(groupDir(out, group), "logs", t.ID()+".out")
}

// RecordError is a job record that cannot be read or does not hold a
// submission: the root's bookkeeping is broken, not the harness (a usage
// error in cmd/trtmc-qual's exit-code table).
type RecordError struct{ Err error }

func (e *RecordError) Error() string { return e.Err.Error() }
func (e *RecordError) Unwrap() error { return e.Err }

// ReadRecord reads a group's job record; (nil, nil) when there is none.
func ReadRecord(out, group string) (*Record, error) {
	path := recordPath(out, group)
	// A regular file under the cap: a FIFO or a device as the record must
	// not hang or exhaust status.
	data, err := fileio.ReadFile(context.Background(), path, fileio.MaxDocumentBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &RecordError{fmt.Errorf("%s: %s", path, fileio.ReadProblem("the job record", path, err))}
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, &RecordError{fmt.Errorf("%s: %w", path, err)}
	}
	if r.Schema != RecordSchema {
		return nil, &RecordError{fmt.Errorf("%s: schema is %q, want %q", path, r.Schema, RecordSchema)}
	}
	if r.Group != group {
		return nil, &RecordError{fmt.Errorf("%s: group is %q, want %q", path, r.Group, group)}
	}
	for i, t := range r.Tasks {
		if t.Profile == "" || t.ArrayJobID == "" || t.Index < 0 {
			return nil, &RecordError{fmt.Errorf("%s: tasks[%d]: profile, array_job_id and index are required", path, i)}
		}
	}
	return &r, nil
}

// writeRecord writes the record atomically.
func writeRecord(r *Record) error {
	if err := os.MkdirAll(groupDir(r.Out, r.Group), 0o755); err != nil {
		return err
	}
	return fileio.WriteJSON(recordPath(r.Out, r.Group), r)
}

// RecordedGroups lists the groups with a job record under out, sorted.
func RecordedGroups(out string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(out, dirName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var groups []string
	for _, e := range entries {
		// Only a directory a valid group name names is a submission's.
		if e.IsDir() && text.SafeName(e.Name()) {
			if _, err := os.Stat(recordPath(out, e.Name())); err == nil {
				groups = append(groups, e.Name())
			}
		}
	}
	sort.Strings(groups)
	return groups, nil
}

// arrayJobIDs are the distinct array job ids of the tasks, in first-seen
// order.
func arrayJobIDs(tasks []TaskRef) []string {
	seen := map[string]bool{}
	var ids []string
	for _, t := range tasks {
		if !seen[t.ArrayJobID] {
			seen[t.ArrayJobID] = true
			ids = append(ids, t.ArrayJobID)
		}
	}
	return ids
}
