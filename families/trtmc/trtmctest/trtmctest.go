// Package trtmctest builds the fake TRTMC executables of
// families/trtmc/testdata/fake-trtmc for tests: `trtmc`, `trtmc-server`,
// `pytest` and `python3` in one directory to put first on PATH. They are
// test fixtures only; nothing in the product points at them.
package trtmctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once sync.Once
	dir  string
	err  error
	out  []byte
)

// Names are the programs the fake plays.
var Names = []string{"trtmc", "trtmc-server", "pytest", "python3"}

// Bin returns a directory holding the fake executables, building them on
// first use (go build, a few seconds). The directory lives until the test
// binary exits.
func Bin(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		_, self, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(self), "..", "testdata", "fake-trtmc")
		dir, err = os.MkdirTemp("", "fake-trtmc-*")
		if err != nil {
			return
		}
		bin := filepath.Join(dir, "fake-trtmc")
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Dir = src
		if out, err = cmd.CombinedOutput(); err != nil {
			return
		}
		for _, n := range Names {
			if err = os.Symlink(bin, filepath.Join(dir, n)); err != nil {
				return
			}
		}
	})
	if err != nil {
		t.Fatalf("build the fake TRTMC executables: %v\n%s", err, out)
	}
	return dir
}

// OnPath puts the fakes first on PATH for the test.
func OnPath(t *testing.T) string {
	t.Helper()
	d := Bin(t)
	t.Setenv("PATH", d+string(os.PathListSeparator)+os.Getenv("PATH"))
	return d
}

// Cleanup removes the built fakes; call it from TestMain after m.Run.
func Cleanup() {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}
