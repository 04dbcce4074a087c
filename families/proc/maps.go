package proc

import "errors"

// Mapping is a file a process group had mapped: a program one of its
// processes runs (Executable) or a file it mapped (a shared library).
// Deleted files are mapped under the name they had.
type Mapping struct {
	Path       string
	Executable bool
	Deleted    bool
}

// ErrMapsUnavailable is returned by MappedFiles where a process's mappings
// cannot be read (not Linux).
var ErrMapsUnavailable = errors.New("the mapped files of a process cannot be read on this platform")
