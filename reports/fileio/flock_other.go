//go:build !unix

package fileio

import (
	"errors"
	"os"
)

// TryLock: without flock there is no lock that dies with its holder, so
// runs refuse to start rather than run unlocked.
func TryLock(*os.File) (bool, error) {
	return false, errors.New("file locking needs flock (Linux or macOS)")
}
