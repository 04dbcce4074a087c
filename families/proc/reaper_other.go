//go:build unix && !linux

package proc

import (
	"os"
	"time"
)

// becomeSubreaper: there is no child subreaper outside Linux.
func becomeSubreaper() {}

// sweep: outside Linux (macOS, the BSDs) nothing finds a process that left
// its group; qualification runs belong on Linux (see sysproc_other.go).
func sweep(int, marks) []Survivor { return nil }

// childMarks: the environment token only.
func childMarks(token string) (marks, *os.File, error) { return marks{token: token}, nil, nil }

// groupAlive: outside Linux only the signal can tell whether the group
// exists (zombies included); a group that still exists at the deadline is
// alive.
func groupAlive(pgid int, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for signalable(pgid) {
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
