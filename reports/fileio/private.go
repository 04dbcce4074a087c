package fileio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Where outputs go, and scratch space nobody else sees.
//
// No writer inside an evidence tree: every file a command writes for
// people (--output-file, --junit, --summary, --update-doc, the pack) is
// resolved through its symbolic links and refused when it lies inside a
// tree of evidence the command reads or writes (CheckOutside), so that no
// output can overwrite a sealed row or land in a row's directory.
//
// Staging and children's temporary files go to a private directory
// (PrivateDir: mode 0700, in the system's temporary directory, named after
// the process), removed when the command ends — a signal included, since
// every verb that writes handles SIGINT, SIGTERM, SIGHUP and SIGQUIT by
// unwinding. What a SIGKILL leaves is removed by the next command of the
// same kind (RemoveStale: the directories of processes that no longer
// run).

// InsideError is an output path that lies inside an evidence tree.
type InsideError struct {
	// Path is the path as given; Resolved it with its links resolved;
	// Tree the evidence tree it lies in, as given.
	Path, Resolved, Tree string
}

func (e *InsideError) Error() string {
	s := fmt.Sprintf("%s lies inside the evidence tree %s", e.Path, e.Tree)
	if e.Resolved != "" && e.Resolved != e.Path {
		s += " (it resolves to " + e.Resolved + ")"
	}
	return s + "; nothing may be written there: write it elsewhere"
}

// Resolve is path made absolute with the symbolic links of the part that
// exists resolved (the part that does not exist yet is kept, cleaned).
func Resolve(path string) (string, error) {
	if !filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		path = wd + string(filepath.Separator) + path
	}
	var rest []string
	for p := path; ; {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Clean(path), nil
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// CheckOutside returns an *InsideError when path, resolved, is one of
// trees or lies inside one (each tree resolved too; "" is ignored).
func CheckOutside(path string, trees ...string) error {
	p, err := Resolve(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, tree := range trees {
		if tree == "" {
			continue
		}
		t, err := Resolve(tree)
		if err != nil {
			return fmt.Errorf("%s: %w", tree, err)
		}
		if Within(p, t) {
			return &InsideError{Path: path, Resolved: p, Tree: tree}
		}
	}
	return nil
}

// Within reports whether the clean absolute path p is dir or lies under it.
func Within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// PrivateDir creates a directory only this user may enter, in base (the
// system's temporary directory when ""), named prefix + PID + "-" +
// random: what the process that made it leaves there is its own, and
// RemoveStale knows whose it is.
func PrivateDir(base, prefix string) (string, error) {
	if base == "" {
		base = os.TempDir()
	}
	dir, err := os.MkdirTemp(base, prefix+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// StaleName is the name of a file or directory made with PrivateDir's
// naming (prefix + PID + "-" ...) beside others, for a temporary file.
func StaleName(prefix string) string { return prefix + strconv.Itoa(os.Getpid()) + "-*" }

// RemoveStale removes, in dir, what was named prefix + PID + "-" ... by a
// process of this user that no longer runs (killed by SIGKILL, or by a
// second signal before it could clean up), and returns what it removed.
// What belongs to a live process or to another user is left alone.
func RemoveStale(dir, prefix string) []string {
	if dir == "" {
		dir = os.TempDir()
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if info, err := os.Lstat(p); err != nil || !ownedByMe(info) {
			continue
		}
		if os.RemoveAll(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

// Abs is p made absolute (filepath.Abs), or p itself where that fails (the
// working directory is gone): the one spelling of "absolute if it can be"
// for the paths a run records and the roots publishing names.
func Abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
