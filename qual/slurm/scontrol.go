package slurm

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// TaskState is what Slurm says about one array task (scontrol show job -o).
type TaskState struct {
	// ArrayJobID and Index name the task: "<ArrayJobID>_<Index>".
	ArrayJobID string
	Index      int
	// State is JobState (PENDING, RUNNING, COMPLETED, FAILED, ...).
	State    string
	Reason   string
	ExitCode string
	// Node is the node the task runs or ran on; "" while it has none.
	Node      string
	StartTime string
	EndTime   string
	RunTime   string
	Restarts  int
	// Comment is the job's --comment: Comment(submission) for the jobs a
	// submission made ("" when the job has none).
	Comment string
}

// restIndex is the Index of an array's record that stands for every task
// without a record of its own: Slurm keeps an array's tasks that never
// started as one record, and once each of them was cancelled while
// pending, that record says ArrayTaskId=4294967294 (NO_VAL) and names no
// task at all (measured on slurm-wlm 22.05: `scancel 12_0 12_1 12_2` of a
// pending array leaves `JobId=12 ArrayJobId=12 ArrayTaskId=4294967294
// JobState=CANCELLED NodeList=`).
const restIndex = -1

// noVal are Slurm's "no value" task ids (NO_VAL, and INFINITE).
var noVal = map[string]bool{"4294967294": true, "4294967295": true}

// ID is the task's job id as scancel and scontrol accept it: "12_3".
func (t TaskState) ID() string { return TaskID(t.ArrayJobID, t.Index) }

// TaskID is "<array job id>_<index>".
func TaskID(arrayJobID string, index int) string { return arrayJobID + "_" + strconv.Itoa(index) }

// Started reports whether the task was ever placed on a node. A task
// cancelled while pending has none.
func (t TaskState) Started() bool { return t.Node != "" }

// terminal states: the task will not run (again) by itself. Anything else
// (PENDING, RUNNING, COMPLETING, SUSPENDED, REQUEUED, CONFIGURING, ...) is
// still active and is followed further; a requeued task comes back as
// PENDING.
var terminal = map[string]bool{
	"BOOT_FAIL": true, "CANCELLED": true, "COMPLETED": true, "DEADLINE": true, "FAILED": true,
	"NODE_FAIL": true, "OUT_OF_MEMORY": true, "PREEMPTED": true, "TIMEOUT": true, "REVOKED": true,
}

// Terminal reports whether the task has ended for good.
func (t TaskState) Terminal() bool { return terminal[t.State] }

// Describe is the state as a progress line or a reason shows it:
// "RUNNING on node1", "FAILED (NonZeroExitCode, exit code 3:0) on node2".
func (t TaskState) Describe() string {
	s := t.State
	var extra []string
	if t.Reason != "" && t.Reason != "None" {
		extra = append(extra, t.Reason)
	}
	if t.Terminal() && t.ExitCode != "" {
		extra = append(extra, "exit code "+t.ExitCode)
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	if t.Node != "" {
		s += " on " + t.Node
	}
	return s
}

// keyRE finds the start of each key=value field of a one-line scontrol
// record: keys are words that may hold ':' or '/' (AllocNode:Sid, CPUs/Task).
var keyRE = regexp.MustCompile(`(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=`)

// parseRecord splits one `scontrol show job -o` line into its fields. A
// value runs to the next " Key=" (values such as Command= may hold spaces).
func parseRecord(line string) map[string]string {
	fields := map[string]string{}
	locs := keyRE.FindAllStringSubmatchIndex(line, -1)
	for i, loc := range locs {
		key := line[loc[2]:loc[3]]
		end := len(line)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		fields[key] = strings.TrimSpace(line[loc[1]:end])
	}
	return fields
}

// ParseShowJob parses `scontrol show job -o ARRAYJOB` into one state per
// array task, in index order. Pending tasks that Slurm still holds as one
// record ("ArrayTaskId=3-9%2") are expanded; the array's record for tasks
// that have none of their own (ArrayTaskId=4294967294: every pending task
// cancelled) comes first with Index restIndex. Records of other jobs are
// ignored; a record it cannot read is an error naming its line.
func ParseShowJob(out, arrayJobID string) ([]TaskState, error) {
	byIndex := map[int]TaskState{}
	for n, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := parseRecord(line)
		if f["JobId"] == "" {
			return nil, fmt.Errorf("scontrol show job: line %d: no JobId field: %q", n+1, text.Clip(line, 200))
		}
		if f["ArrayJobId"] != arrayJobID {
			continue
		}
		var indexes []int
		var err error
		if noVal[strings.TrimSpace(f["ArrayTaskId"])] && f["JobId"] == arrayJobID {
			indexes = []int{restIndex}
		} else {
			indexes, err = parseIndexes(f["ArrayTaskId"])
		}
		if err != nil {
			return nil, fmt.Errorf("scontrol show job: line %d: ArrayTaskId: %w", n+1, err)
		}
		if f["JobState"] == "" {
			return nil, fmt.Errorf("scontrol show job: line %d: no JobState field", n+1)
		}
		restarts, _ := strconv.Atoi(f["Restarts"])
		node := f["NodeList"]
		if node == "(null)" || node == "None" {
			node = ""
		}
		if node == "" && f["BatchHost"] != "" && f["BatchHost"] != "(null)" {
			node = f["BatchHost"]
		}
		for _, i := range indexes {
			byIndex[i] = TaskState{ArrayJobID: arrayJobID, Index: i, State: stateWord(f["JobState"]),
				Reason: f["Reason"], ExitCode: f["ExitCode"], Node: node, StartTime: f["StartTime"],
				EndTime: f["EndTime"], RunTime: f["RunTime"], Restarts: restarts, Comment: f["Comment"]}
		}
	}
	out2 := make([]TaskState, 0, len(byIndex))
	for _, t := range byIndex {
		out2 = append(out2, t)
	}
	sort.Slice(out2, func(a, b int) bool { return out2[a].Index < out2[b].Index })
	return out2, nil
}

// stateWord drops anything after the state name ("CANCELLED by 0").
func stateWord(s string) string {
	if i := strings.IndexAny(s, " +"); i >= 0 {
		return s[:i]
	}
	return s
}

// parseIndexes reads an ArrayTaskId: "3", "0-9", "1-9:2", "3,5,7-9",
// each optionally with a "%N" throttle suffix.
func parseIndexes(s string) ([]int, error) {
	if i := strings.IndexByte(s, '%'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return nil, fmt.Errorf("missing")
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		step := 1
		if i := strings.IndexByte(part, ':'); i >= 0 {
			v, err := strconv.Atoi(part[i+1:])
			if err != nil || v < 1 {
				return nil, fmt.Errorf("bad step in %q", part)
			}
			step, part = v, part[:i]
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad index %q", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad range %q", part)
			}
		}
		if b-a > 1_000_000 {
			return nil, fmt.Errorf("range %q is too large", part)
		}
		for i := a; i <= b; i += step {
			out = append(out, i)
		}
	}
	return out, nil
}
