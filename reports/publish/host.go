package publish

import (
	"bytes"
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// What published text needs to know beyond the evidence: the named roots
// of this host and its identity. run (which records its roots in every
// row), report, export and ci publish with ForHost.

// ForHost is the Publisher of this host: the declared roots first (they
// name a directory before anything the evidence shows), then this host's
// roots (HostRoots: of the configuration file, the configured aiperf and
// the environment), each also under the path its links resolve to, and
// this host's identity (HostIdentity).
func ForHost(configFile, aiperf string, getenv func(string) string, declared []verdict.Root) Publisher {
	roots := WithResolved(append(append([]verdict.Root{}, declared...), HostRoots(configFile, aiperf, getenv)...))
	return Publisher{Roots: roots, Identity: HostIdentity(getenv)}
}

// HostRoots are the roots this host's configuration names: the trtmc-qual
// checkout (the module root above the configuration file or the
// executable), $TRTMC_REPO, each directory of $TRTMC_BUNDLE_DIR, and the
// virtual environment of the configured aiperf (when it is a path).
func HostRoots(configFile, aiperf string, getenv func(string) string) []verdict.Root {
	var out []verdict.Root
	add := func(name, path string) {
		if path == "" {
			return
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		r := verdict.Root{Name: name, Path: filepath.Clean(path)}
		if CheckRoot(r) == nil {
			out = append(out, r)
		}
	}
	var starts []string
	if configFile != "" {
		starts = append(starts, filepath.Dir(fileio.Abs(configFile)))
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, s := range starts {
		if root := moduleRoot(s); root != "" {
			add(RootHarness, root)
			break
		}
	}
	add(RootTRTMC, getenv("TRTMC_REPO"))
	for _, d := range strings.Split(getenv("TRTMC_BUNDLE_DIR"), ":") {
		add(RootBundles, d)
	}
	if strings.ContainsRune(aiperf, '/') {
		add(RootAIPerfVenv, AIPerfVenv(fileio.Abs(aiperf)))
	}
	return out
}

// moduleRoot is the trtmc-qual checkout holding dir: the nearest directory
// at or above it whose go.mod declares this module ("" if none).
func moduleRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		data, err := fileio.ReadFile(context.Background(), filepath.Join(d, "go.mod"), 1<<16)
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(data), []byte("module github.com/trtmc-qual/trtmc-qual\n")) {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// WithResolved adds each root again under the path its links resolve to
// (/tmp is /private/tmp on macOS), so that both spellings are mapped.
func WithResolved(roots []verdict.Root) []verdict.Root {
	out := append([]verdict.Root{}, roots...)
	for _, r := range roots {
		if real, err := filepath.EvalSymlinks(r.Path); err == nil && real != r.Path {
			out = append(out, verdict.Root{Name: r.Name, Path: real})
		}
	}
	return out
}

// HostIdentity names this host and its users: the host name, the user
// running this and the owner of $HOME, and the entries of /.
func HostIdentity(getenv func(string) string) Identity {
	var id Identity
	if h, err := os.Hostname(); err == nil {
		id.Hosts = append(id.Hosts, h)
	}
	for _, k := range []string{"USER", "LOGNAME", "SUDO_USER"} {
		if v := getenv(k); v != "" {
			id.Users = append(id.Users, v)
		}
	}
	if home := getenv("HOME"); home != "" && home != "/" {
		id.Users = append(id.Users, filepath.Base(home))
	}
	if u, err := user.Current(); err == nil {
		id.Users = append(id.Users, u.Username)
		if u.HomeDir != "" && u.HomeDir != "/" {
			id.Users = append(id.Users, filepath.Base(u.HomeDir))
		}
	}
	if entries, err := os.ReadDir("/"); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				id.TopDirs = append(id.TopDirs, e.Name())
			}
		}
	}
	return id
}
