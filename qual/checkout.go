package qual

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/inventory/specs/gitread"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/publish"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// Limits on what a checkout's untracked files may hold: beyond them the
// checkout is recorded dirty with an error instead of a digest (a build
// tree nobody ignored is not hashed for every run).
const (
	maxUntrackedFiles = 20000
	maxUntrackedBytes = 4 << 30
)

// checkoutRoots are the named roots whose git state every row records:
// the harness's checkout and TRTMC's.
var checkoutRoots = []string{publish.RootHarness, publish.RootTRTMC}

// readCheckouts reads the state of the run's checkouts (the roots named
// in checkoutRoots), once per group run.
func readCheckouts(ctx context.Context, runner proc.Runner, roots []verdict.Root) []verdict.Checkout {
	var out []verdict.Checkout
	for _, name := range checkoutRoots {
		i := slices.IndexFunc(roots, func(r verdict.Root) bool { return r.Name == name })
		if i < 0 {
			continue
		}
		out = append(out, readCheckout(ctx, runner, name, roots[i].Path))
	}
	return out
}

// readCheckout is a git checkout's state as TRTMC's own profiler records
// it: the commit, and digests of what the work tree adds to it — the
// uncommitted diff of tracked files (`git diff --binary HEAD`, staged or
// not) and the untracked files that are not ignored (their names and
// contents). git runs through gitread's one safe command line, with the
// checkout's filter and diff drivers emptied (a foreign checkout runs no
// command of its own).
func readCheckout(ctx context.Context, runner proc.Runner, name, dir string) verdict.Checkout {
	c := verdict.Checkout{Name: name, Path: dir}
	var drivers []string
	git := func(args ...string) ([]byte, error) {
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		_, err := runner.Run(ctx, proc.Spec{Name: "git", Argv: gitread.Args("git", dir, drivers, args...), Env: gitread.SafeEnv(), Stdout: &out, Stderr: &errb})
		if err != nil {
			return nil, fmt.Errorf("git %s: %v%s", args[0], err, tail(errb.String()))
		}
		return out.Bytes(), nil
	}
	head, err := git("rev-parse", "--verify", "HEAD")
	if err != nil {
		c.Error = "not a readable git checkout: " + err.Error()
		return c
	}
	c.Commit = strings.TrimSpace(string(head))
	list, _ := git(gitread.DriverConfigArgs...) // exit 1 when none are configured
	drivers = gitread.DriverOverrides(list)
	diff, err := git("diff", "--binary", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all", "HEAD", "--")
	if err != nil {
		c.Error, c.Dirty = err.Error(), true
		return c
	}
	if len(diff) > 0 {
		c.Dirty, c.DiffSHA256 = true, fileio.SHA256(diff)
		c.ChangedFiles = bytes.Count(diff, []byte("\ndiff --git ")) + boolInt(bytes.HasPrefix(diff, []byte("diff --git ")))
	}
	others, err := git("ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		c.Error, c.Dirty = err.Error(), true
		return c
	}
	var names []string
	for _, n := range bytes.Split(others, []byte{0}) {
		if len(n) > 0 {
			names = append(names, string(n))
		}
	}
	c.UntrackedFiles = len(names)
	if len(names) == 0 {
		return c
	}
	c.Dirty = true
	sum, err := untrackedDigest(ctx, dir, names)
	if err != nil {
		c.Error = err.Error()
		return c
	}
	c.UntrackedSHA256 = sum
	return c
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func tail(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return ""
	}
	return ": " + text.FirstLine(s)
}

// untrackedDigest is the sha256 over the untracked files in name order:
// for each, its name, a NUL, then the sha256 of its content (a link: of
// its target, prefixed "link:"), and a newline.
func untrackedDigest(ctx context.Context, dir string, names []string) (string, error) {
	if len(names) > maxUntrackedFiles {
		return "", fmt.Errorf("%d untracked files, more than the %d digested: ignore the build outputs (.gitignore) or remove them", len(names), maxUntrackedFiles)
	}
	slices.Sort(names)
	h := sha256.New()
	var total int64
	for _, n := range names {
		path := filepath.Join(dir, filepath.FromSlash(n))
		fi, err := os.Lstat(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed since git listed it
			}
			return "", err
		}
		var sum string
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return "", err
			}
			sum = "link:" + target
		case fi.Mode().IsRegular():
			if total += fi.Size(); total > maxUntrackedBytes {
				return "", fmt.Errorf("the untracked files hold more than %d GiB: ignore the build outputs (.gitignore) or remove them", maxUntrackedBytes>>30)
			}
			if sum, err = fileio.FileSHA256(ctx, path); err != nil {
				return "", err
			}
		default:
			sum = "special:" + fi.Mode().Type().String()
		}
		fmt.Fprintf(h, "%s\x00%s\n", n, sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
