// Package gitread reads a repository at a commit through the git command
// line: nothing here looks at a work tree.
//
// Repo is the read-only view of a repository at a commit; CLI implements it
// with `git -C`; its errors are ErrUnknownRef, ErrNotRepository and
// ErrGitUnavailable. Args, SafeEnv and DriverOverrides are the one git
// command line for a foreign checkout (its hooks, fsmonitor, pager, drivers
// and system and user configuration disabled), which doctor and the run's
// provenance of the checkouts use too.
package gitread

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// Repo is the read-only view of a repository that the spec source needs.
// Every read names a commit: nothing here looks at a work tree, so local
// edits in a checkout never leak into a reconcile or a drift check.
type Repo interface {
	// Commit resolves a ref (branch, tag, sha, HEAD~1...) to a full commit sha.
	Commit(ctx context.Context, ref string) (string, error)
	// ListFiles lists the files under dir (repository-relative, "/"-separated)
	// at the commit, recursively.
	ListFiles(ctx context.Context, commit, dir string) ([]string, error)
	// ReadFiles returns the contents of the given files at the commit. A path
	// that does not exist there is absent from the map, not an error.
	ReadFiles(ctx context.Context, commit string, paths []string) (map[string][]byte, error)
	// Diff lists the files under paths that differ between two commits.
	Diff(ctx context.Context, base, head string, paths []string) ([]FileChange, error)
}

// FileChange is one file that differs between two commits.
type FileChange struct {
	Path string `json:"path"`
	// Status is git's letter: A added, D deleted, M modified, T type changed.
	Status string `json:"status"`
	// Added and Deleted count lines; both are -1 for a binary file.
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
}

// CLI runs the git command line against a repository: a work tree or a
// bare repository (both work with `git -C`).
type CLI struct {
	// Repo is the repository path given to `git -C`.
	Repo string
	// Bin is the git executable; "git" when empty.
	Bin string
}

// Error is a failed git command with its arguments and stderr.
type Error struct {
	Args     []string
	ExitCode int
	Stderr   string
	Err      error
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Errors a caller may want to tell apart (usage, not a bug).
var (
	// ErrNotRepository: the path given as the repository is not one.
	ErrNotRepository = errors.New("not a git repository")
	// ErrUnknownRef: the ref does not name a commit of the repository.
	ErrUnknownRef = errors.New("unknown ref")
	// ErrGitUnavailable: the git executable cannot be run.
	ErrGitUnavailable = errors.New("git is not available")
)

func (g CLI) bin() string {
	if g.Bin == "" {
		return "git"
	}
	return g.Bin
}

// safeConfig are the settings every git of a foreign repository runs with,
// given with -c so they win over the repository's own configuration: no
// fsmonitor (a command the checkout names, run by anything that looks at
// the work tree), no hooks, no untracked cache, no pager, no external diff,
// no ssh command, no protocol that could fetch, unquoted paths.
var safeConfig = []string{
	"core.fsmonitor=false", "core.hooksPath=/dev/null", "core.untrackedCache=false", "core.pager=cat",
	"core.sshCommand=", "core.askPass=", "diff.external=", "protocol.allow=never", "status.submoduleSummary=false",
	"core.quotepath=off",
}

// SafeEnv is what git's environment gets for a foreign repository: no
// system or user configuration (only the repository's own, overridden by
// Args), no prompts, no optional locks (git writes nothing it need not),
// a fixed locale so its messages are stable.
func SafeEnv() []string {
	return []string{"LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_OPTIONAL_LOCKS=0", "GIT_NO_REPLACE_OBJECTS=1", "GIT_ATTR_NOSYSTEM=1"}
}

// Args is the one git command line for a foreign repository (doctor,
// reconcile, drift, ci: everything that runs git): `git -C repo
// --no-pager`, the safe settings, the driver overrides (see
// DriverOverrides; nil for commands that never touch the work tree), then
// args. argv[0] is bin.
func Args(bin, repo string, drivers []string, args ...string) []string {
	argv := []string{bin, "-C", repo, "--no-pager"}
	for _, c := range append(slices.Clone(safeConfig), drivers...) {
		argv = append(argv, "-c", c)
	}
	return append(argv, args...)
}

// DriverConfigArgs lists the configured commands of filter, diff and
// merge drivers: run it (through Args, without drivers) and hand its
// output to DriverOverrides.
var DriverConfigArgs = []string{"config", "--null", "--name-only", "--get-regexp", `^(filter|diff|merge)\..*\.(clean|smudge|process|textconv|command|driver)$`}

// DriverOverrides turns the output of DriverConfigArgs into -c settings
// that empty every one of those commands, so a command that reads the work
// tree (status hashes a changed file through its clean filter) runs none of
// them. A file whose content only a filter makes equal to the commit is
// then reported as differing: fail closed.
func DriverOverrides(out []byte) []string {
	var o []string
	for _, k := range bytes.Split(out, []byte{0}) {
		if k := strings.TrimSpace(string(k)); k != "" && !strings.ContainsAny(k, "=\n") {
			o = append(o, k+"=")
		}
	}
	return o
}

// run executes git with args and returns its stdout.
func (g CLI) run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	argv := Args(g.bin(), g.Repo, nil, args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), SafeEnv()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &stdout, &stderr, stdin
	err := cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	ge := &Error{Args: args, Stderr: stderr.String(), Err: err}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ge.ExitCode = ee.ExitCode()
	} else {
		ge.Err = fmt.Errorf("%w: %v", ErrGitUnavailable, err)
	}
	if strings.Contains(ge.Stderr, "not a git repository") || strings.Contains(ge.Stderr, "cannot change to") {
		ge.Err = fmt.Errorf("%w: %s", ErrNotRepository, g.Repo)
	}
	return nil, ge
}

// Commit implements Repo.
func (g CLI) Commit(ctx context.Context, ref string) (string, error) {
	if ref == "" || strings.HasPrefix(ref, "-") {
		return "", fmt.Errorf("%w %q", ErrUnknownRef, ref)
	}
	out, err := g.run(ctx, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && !errors.Is(err, ErrNotRepository) && !errors.Is(err, ErrGitUnavailable) {
			return "", fmt.Errorf("%w %q in %s", ErrUnknownRef, ref, g.Repo)
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// ListFiles implements Repo.
func (g CLI) ListFiles(ctx context.Context, commit, dir string) ([]string, error) {
	args := []string{"ls-tree", "-r", "-z", "--name-only", "--full-tree", commit}
	if dir != "" {
		args = append(args, "--", literal(strings.TrimSuffix(dir, "/")))
	}
	out, err := g.run(ctx, nil, args...)
	if err != nil {
		return nil, err
	}
	return splitZ(out), nil
}

// ReadFiles implements Repo with one `git cat-file --batch` process.
func (g CLI) ReadFiles(ctx context.Context, commit string, paths []string) (map[string][]byte, error) {
	files := map[string][]byte{}
	if len(paths) == 0 {
		return files, nil
	}
	var in bytes.Buffer
	for _, p := range paths {
		if strings.ContainsAny(p, "\n\r") {
			return nil, fmt.Errorf("read %s: path contains a line break", strconv.Quote(p))
		}
		fmt.Fprintf(&in, "%s:%s\n", commit, p)
	}
	out, err := g.run(ctx, &in, "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(bytes.NewReader(out))
	for _, p := range paths {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("git cat-file: short output reading %s", p)
		}
		fields := strings.Fields(header)
		if len(fields) >= 2 && (fields[len(fields)-1] == "missing" || fields[len(fields)-1] == "ambiguous") {
			continue
		}
		if len(fields) != 3 {
			return nil, fmt.Errorf("git cat-file: unexpected header %q for %s", strings.TrimSpace(header), p)
		}
		if fields[1] != "blob" {
			// A directory (tree) or a submodule: not a file.
			size, _ := strconv.Atoi(fields[2])
			if _, err := r.Discard(size + 1); err != nil {
				return nil, fmt.Errorf("git cat-file: short output reading %s", p)
			}
			continue
		}
		size, err := strconv.Atoi(fields[2])
		if err != nil {
			return nil, fmt.Errorf("git cat-file: bad size in %q", strings.TrimSpace(header))
		}
		buf := make([]byte, size+1)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("git cat-file: short content for %s", p)
		}
		files[p] = buf[:size]
	}
	return files, nil
}

// Diff implements Repo. Renames are not detected: a renamed manifest is a
// deleted one and an added one, which is what a reviewer needs to see.
func (g CLI) Diff(ctx context.Context, base, head string, paths []string) ([]FileChange, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	spec := make([]string, len(paths))
	for i, p := range paths {
		spec[i] = literal(p)
	}
	args := func(mode string) []string {
		a := []string{"diff", mode, "--no-renames", "--no-ext-diff", "--no-textconv", "-z", base, head, "--"}
		return append(a, spec...)
	}
	ns, err := g.run(ctx, nil, args("--name-status")...)
	if err != nil {
		return nil, err
	}
	num, err := g.run(ctx, nil, args("--numstat")...)
	if err != nil {
		return nil, err
	}
	var changes []FileChange
	index := map[string]int{}
	fields := splitZ(ns)
	for i := 0; i+1 < len(fields); i += 2 {
		index[fields[i+1]] = len(changes)
		changes = append(changes, FileChange{Path: fields[i+1], Status: fields[i][:1]})
	}
	// numstat -z: "added\tdeleted\tpath\0" per file.
	for _, rec := range splitZ(num) {
		parts := strings.SplitN(rec, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		i, ok := index[parts[2]]
		if !ok {
			continue
		}
		changes[i].Added, changes[i].Deleted = atoiOr(parts[0], -1), atoiOr(parts[1], -1)
	}
	return changes, nil
}

// literal turns a path into a pathspec without glob magic.
func literal(p string) string { return ":(literal)" + p }

func splitZ(b []byte) []string {
	var out []string
	for _, s := range strings.Split(string(b), "\x00") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func atoiOr(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}
