//go:build !unix

package evidence

import (
	"errors"
	"os"
)

// tryLock: without flock there is no lock that dies with its holder, so
// runs refuse to start rather than run unlocked.
func tryLock(*os.File) (bool, error) {
	return false, errors.New("evidence locking needs flock (Linux or macOS)")
}
