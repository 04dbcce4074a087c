//go:build unix

package fileio

import (
	"errors"
	"os"
	"syscall"
)

// TryLock takes an exclusive flock on f without waiting: false when
// another open file description holds it. flock locks belong to the open
// file description: the kernel drops it when the last descriptor closes,
// including when the process dies (kill -9 too), so a lock is never stale.
func TryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		default:
			return false, err
		}
	}
}
