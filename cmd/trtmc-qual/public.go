package main

import (
	"bytes"
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"

	"github.com/spf13/cobra"

	"github.com/trtmc-qual/trtmc-qual/reports"
)

// What published text (reports.Scrubber) needs to know beyond the
// evidence: the named roots of this host and its identity. Shared by run
// (which records its roots in every row), report and export.

// addRootFlag adds --root NAME=DIR (repeatable).
func addRootFlag(cmd *cobra.Command, roots *[]string) {
	cmd.Flags().StringArrayVar(roots, "root", nil, "a named root NAME=DIR: published text writes paths under DIR as $NAME/... (repeatable; see docs/reports.md \"Publishing results\")")
}

// parseRoots reads --root values.
func parseRoots(values []string) ([]verdict.Root, error) {
	var out []verdict.Root
	for _, v := range values {
		r, err := reports.ParseRoot(v)
		if err != nil {
			return nil, flagErrorf("--root: %v", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// hostRoots are the roots this host's configuration names: the trtmc-qual
// checkout (the module root above the config file or the executable),
// $TRTMC_REPO, each directory of $TRTMC_BUNDLE_DIR, and the virtual
// environment of the configured aiperf.
func hostRoots(cfg *Config, getenv func(string) string) []verdict.Root {
	var out []verdict.Root
	add := func(name, path string) {
		if path == "" {
			return
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		r := verdict.Root{Name: name, Path: filepath.Clean(path)}
		if reports.CheckRoot(r) == nil {
			out = append(out, r)
		}
	}
	var starts []string
	if cfg != nil && cfg.File != "" {
		starts = append(starts, filepath.Dir(absPath(cfg.File)))
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, s := range starts {
		if root := moduleRoot(s); root != "" {
			add(reports.RootHarness, root)
			break
		}
	}
	add(reports.RootTRTMC, getenv("TRTMC_REPO"))
	for _, d := range strings.Split(getenv("TRTMC_BUNDLE_DIR"), ":") {
		add(reports.RootBundles, d)
	}
	if cfg != nil && strings.ContainsRune(cfg.AIPerf, '/') {
		add(reports.RootAIPerfVenv, reports.AIPerfVenv(absPath(cfg.AIPerf)))
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

// withResolved adds each root again under the path its links resolve to
// (/tmp is /private/tmp on macOS), so that both spellings are mapped.
func withResolved(roots []verdict.Root) []verdict.Root {
	out := append([]verdict.Root{}, roots...)
	for _, r := range roots {
		if real, err := filepath.EvalSymlinks(r.Path); err == nil && real != r.Path {
			out = append(out, verdict.Root{Name: r.Name, Path: real})
		}
	}
	return out
}

// hostIdentity names this host and its users: the host name, the user
// running this and the owner of $HOME, and the entries of /.
func hostIdentity(getenv func(string) string) reports.Identity {
	var id reports.Identity
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

// publicOptions are what report and export publish with: the declared
// roots first (they name a directory before anything the evidence shows),
// then this host's roots (of the configuration cfg and the environment),
// and its identity.
func publicOptions(cfg *Config, getenv func(string) string, declared []verdict.Root) reports.PublicOptions {
	roots := withResolved(append(append([]verdict.Root{}, declared...), hostRoots(cfg, getenv)...))
	return reports.PublicOptions{Roots: roots, Identity: hostIdentity(getenv)}
}
