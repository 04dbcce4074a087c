// Package trtmctest builds and installs the fake TRTMC programs of
// families/trtmc/testdata for tests. As in a real TRTMC install they are
// separate programs:
//
//   - bin/trtmc-server: the pip console script (testdata/fake-trtmc-server,
//     the Python control plane), installed as a script with a shebang, as
//     pip installs console scripts;
//   - site-packages/tensorrt_model_connect/bin/trtmc-server: the native
//     binary (testdata/fake-trtmc-native), whose `_serve-worker` is the
//     JSONL worker, beside libtrtmc_runtime.so and libtrtmc_backend_trt.so;
//   - bin/trtmc, bin/pytest, bin/python3, bin/trtmc-qualify:
//     testdata/fake-trtmc (the CLI, TRTMC's e2e cases, the TRTMC
//     environment's interpreter, the family-owned qualification CLI).
//
// SourceBuild lays out the other install form: a checkout built from
// source, whose build/trtmc-server is the native binary and the launcher
// of the control plane.
//
// They are test fixtures only; nothing in the product points at them.
package trtmctest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	once  sync.Once
	built string
	err   error
	out   []byte
)

// Programs are the fixtures' source directories under testdata.
var Programs = []string{"fake-trtmc", "fake-trtmc-server", "fake-trtmc-native"}

// build compiles the three programs once per test binary (a few seconds).
func build(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		_, self, _, _ := runtime.Caller(0)
		testdata := filepath.Join(filepath.Dir(self), "..", "testdata")
		built, err = os.MkdirTemp("", "fake-trtmc-*")
		if err != nil {
			return
		}
		for _, p := range Programs {
			cmd := exec.Command("go", "build", "-o", filepath.Join(built, p), ".")
			cmd.Dir = filepath.Join(testdata, p)
			if out, err = cmd.CombinedOutput(); err != nil {
				err = fmt.Errorf("%s: %w", p, err)
				return
			}
		}
	})
	if err != nil {
		t.Fatalf("build the fake TRTMC programs: %v\n%s", err, out)
	}
	return built
}

// Install is one fake TRTMC installation: a virtual environment's bin
// directory and its site-packages, as `pip install '.[serve]'` from a
// TRTMC checkout lays them out.
type Install struct {
	Root string
	// Bin goes first on PATH: trtmc-server (the console script), trtmc,
	// pytest, python3.
	Bin string
	// SitePackages holds tensorrt_model_connect (Package) and trtmc_server.
	SitePackages string
	Package      string
	// Native is the native worker binary,
	// Package/bin/trtmc-server; RuntimeRoot is its directory.
	Native      string
	RuntimeRoot string
	// ConsoleScript is Bin/trtmc-server.
	ConsoleScript string
}

// Env is the environment the installation's programs need: where the
// fake interpreter finds its site-packages (a real interpreter knows it).
func (in *Install) Env() []string {
	return []string{"FAKE_TRTMC_SITE_PACKAGES=" + in.SitePackages}
}

// New installs the fakes in a fresh directory of the test. Tests may
// remove or replace parts of it (the native binary, a DSO) to break the
// installation on purpose.
func New(t testing.TB) *Install {
	t.Helper()
	src := build(t)
	root := t.TempDir()
	in := &Install{Root: root, Bin: filepath.Join(root, "venv", "bin"),
		SitePackages: filepath.Join(root, "venv", "lib", "python3.12", "site-packages")}
	in.Package = filepath.Join(in.SitePackages, "tensorrt_model_connect")
	in.RuntimeRoot = filepath.Join(in.Package, "bin")
	in.Native = filepath.Join(in.RuntimeRoot, "trtmc-server")
	in.ConsoleScript = filepath.Join(in.Bin, "trtmc-server")
	for _, d := range []string{in.Bin, in.RuntimeRoot, filepath.Join(in.SitePackages, "trtmc_server")} {
		mustDo(t, os.MkdirAll(d, 0o755))
	}
	mustDo(t, os.WriteFile(filepath.Join(in.Package, "__init__.py"), []byte("# fake\n"), 0o644))
	for _, f := range []string{"__init__.py", "__main__.py", "cli.py"} {
		mustDo(t, os.WriteFile(filepath.Join(in.SitePackages, "trtmc_server", f), []byte("# fake\n"), 0o644))
	}
	for _, so := range []string{"libtrtmc_runtime.so", "libtrtmc_backend_trt.so"} {
		mustDo(t, os.WriteFile(filepath.Join(in.RuntimeRoot, so), []byte("\x7fELF fake DSO\n"), 0o644))
	}
	mustDo(t, copyFile(filepath.Join(src, "fake-trtmc-native"), in.Native))
	// The console script: a script with a shebang that starts the control
	// plane, the way pip writes `trtmc-server = "trtmc_server.cli:main"`.
	mustDo(t, writeScript(in.ConsoleScript, "FAKE_TRTMC_SITE_PACKAGES="+shQuote(in.SitePackages)+" exec "+
		shQuote(filepath.Join(src, "fake-trtmc-server"))+` "$@"`))
	mustDo(t, writeScript(filepath.Join(in.Bin, "python3"), "exec "+shQuote(filepath.Join(src, "fake-trtmc"))+` python3 "$@"`))
	for _, n := range []string{"trtmc", "pytest", "trtmc-qualify"} {
		mustDo(t, os.Symlink(filepath.Join(src, "fake-trtmc"), filepath.Join(in.Bin, n)))
	}
	return in
}

// OnPath installs the fakes and puts their bin directory first on PATH
// (and their environment into the test's).
func OnPath(t *testing.T) *Install {
	t.Helper()
	in := New(t)
	t.Setenv("PATH", in.Bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, kv := range in.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return in
}

// Cleanup removes the built fakes; call it from TestMain after m.Run.
func Cleanup() {
	if built != "" {
		_ = os.RemoveAll(built)
	}
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("install the fake TRTMC: %v", err)
	}
}

func writeScript(path, body string) error {
	return os.WriteFile(path, []byte("#!/bin/sh\n# fake TRTMC console script (test fixture)\n"+body+"\n"), 0o755)
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// SourceBuild is TRTMC built from its checkout instead of installed as a
// wheel: Repo/build/trtmc-server is the native binary (testdata/fake-trtmc-
// native), both the JSONL worker and the launcher (apps/server/main.cpp
// idx@0f958bfb frontend_main: with build/server/python/trtmc_server beside
// it, it runs `python3 -P -m trtmc_server ARGS --worker-binary ITSELF` with
// that directory on PYTHONPATH); build/server/python/trtmc_server is the
// control plane's package; build/trtmc the CLI. The TRTMC environment
// (Bin: python3, pytest, trtmc-qualify) has tensorrt_model_connect
// importable (an editable install of the checkout) but no wheel: no console
// script, no tensorrt_model_connect/bin.
type SourceBuild struct {
	Repo, Build string
	// Native is Build/trtmc-server: the worker and the server command.
	Native string
	// Bin holds the environment's python3 and pytest (no trtmc-server).
	Bin, SitePackages string
}

// Env is the environment the build's programs need (where the fake
// interpreter's site-packages are).
func (sb *SourceBuild) Env() []string {
	return []string{"FAKE_TRTMC_SITE_PACKAGES=" + sb.SitePackages}
}

// Path puts the build first (so trtmc-server is the launcher), then Bin.
func (sb *SourceBuild) Path() string {
	return sb.Build + string(os.PathListSeparator) + sb.Bin
}

// NewSourceBuild builds the fakes into repo/build as a source build lays
// them out (repo is the TRTMC checkout, a git repository or not).
func NewSourceBuild(t testing.TB, repo string) *SourceBuild {
	t.Helper()
	src := build(t)
	root := t.TempDir()
	sb := &SourceBuild{Repo: repo, Build: filepath.Join(repo, "build"), Bin: filepath.Join(root, "env", "bin"),
		SitePackages: filepath.Join(root, "env", "lib", "python3.12", "site-packages")}
	sb.Native = filepath.Join(sb.Build, "trtmc-server")
	pkg := filepath.Join(sb.Build, "server", "python", "trtmc_server")
	for _, d := range []string{sb.Bin, pkg, filepath.Join(sb.SitePackages, "tensorrt_model_connect"), filepath.Join(sb.Build, "models")} {
		mustDo(t, os.MkdirAll(d, 0o755))
	}
	for _, f := range []string{"__init__.py", "__main__.py", "cli.py"} {
		mustDo(t, os.WriteFile(filepath.Join(pkg, f), []byte("# fake\n"), 0o644))
	}
	mustDo(t, os.WriteFile(filepath.Join(sb.SitePackages, "tensorrt_model_connect", "__init__.py"), []byte("# fake (editable)\n"), 0o644))
	mustDo(t, copyFile(filepath.Join(src, "fake-trtmc-native"), sb.Native))
	mustDo(t, os.Symlink(filepath.Join(src, "fake-trtmc"), filepath.Join(sb.Build, "trtmc")))
	mustDo(t, writeScript(filepath.Join(sb.Bin, "python3"), "exec "+shQuote(filepath.Join(src, "fake-trtmc"))+` python3 "$@"`))
	for _, n := range []string{"pytest", "trtmc-qualify"} {
		mustDo(t, os.Symlink(filepath.Join(src, "fake-trtmc"), filepath.Join(sb.Bin, n)))
	}
	return sb
}
