//go:build unix && !linux

package proc

import "os"

// becomeSubreaper: there is no child subreaper outside Linux.
func becomeSubreaper() {}

// sweep: outside Linux (macOS, the BSDs) nothing finds a process that left
// its group; qualification runs belong on Linux (see sysproc_other.go).
func sweep(int, marks) []Survivor { return nil }

// childMarks: the environment token only.
func childMarks(token string) (marks, *os.File, error) { return marks{token: token}, nil, nil }
