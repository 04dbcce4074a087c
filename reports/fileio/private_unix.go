//go:build unix

package fileio

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// processAlive reports whether a process with this id runs (a process of
// another user counts: signal 0 is refused with EPERM).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ownedByMe reports whether this process's user owns the file.
func ownedByMe(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
