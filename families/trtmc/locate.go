package trtmc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/trtmc-qual/trtmc-qual/families"
	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/text"
)

// Two executables share the name trtmc-server (docs/trtmc.md "The native
// worker"): the pip console script on PATH is TRTMC's Python control
// plane (pyproject.toml idx@05348945 `trtmc-server =
// "trtmc_server.cli:main"`), which has no `_serve-worker` and exits 2 on
// it; the native C++ binary (apps/server/main.cpp idx@0f958bfb) is the
// worker. The control plane finds the native one itself
// (apps/server/python/trtmc_server/cli.py idx@a9ed5f69
// packaged_runtime_root): tensorrt_model_connect/bin/trtmc-server beside
// its package, where libtrtmc_runtime.so and libtrtmc_backend_trt.so must
// be too, or a hidden --worker-binary. A source build leaves it at
// build/trtmc-server, and there the native binary is also the server
// command: run without `_serve-worker` it is a launcher (main.cpp
// frontend_main) that starts the control plane with `--worker-binary
// <itself>`. So a native trtmc-server first on PATH serves with itself as
// the worker. LocateWorker finds the worker the server on this PATH uses,
// the same way, and never takes a script for it.

// Where a worker binary was found (WorkerBinary.Source).
const (
	WorkerFromFlag    = "--worker-binary"
	WorkerFromEnv     = "TRTMC_WORKER_BINARY"
	WorkerFromPackage = "package"
	WorkerFromBuild   = "source-build"
	// WorkerFromLauncher: the native trtmc-server first on PATH, a source
	// build's launcher, which is its own server's worker.
	WorkerFromLauncher = "launcher"
)

// NativeWorkerName is the native binary's file name.
const NativeWorkerName = "trtmc-server"

// packagedDSOs must sit beside a wheel's native worker (packaged_runtime_root).
var packagedDSOs = []string{"libtrtmc_runtime.so", "libtrtmc_backend_trt.so"}

// MinPython is the TRTMC interpreter's lowest version (pyproject.toml
// idx@05348945 requires-python = ">=3.12").
var MinPython = [2]int{3, 12}

// LocateOptions say where to look for the native worker.
type LocateOptions struct {
	// Explicit is a path given by configuration (--worker-binary, or the
	// TRTMC_WORKER_BINARY environment variable: ExplicitFrom says which).
	Explicit, ExplicitFrom string
	// Python is the TRTMC environment's interpreter (the one whose
	// tensorrt_model_connect package holds the wheel's binaries).
	Python string
	// Repo is the TRTMC checkout ($TRTMC_REPO): build/trtmc-server.
	Repo string
	// LookPath finds trtmc-server on the PATH the server is started with
	// (nil: not looked at): a native binary there is a source build's
	// launcher and its own worker; the console script is skipped.
	LookPath func(string) (string, error)
	Runner   proc.Runner
}

// PythonInfo is what the TRTMC interpreter says about itself.
type PythonInfo struct {
	// Executable is sys.executable; Version is sys.version_info[:3].
	Executable string `json:"executable"`
	Version    [3]int `json:"version"`
	// PackageDir is the directory of tensorrt_model_connect/__init__.py
	// ("" when the package does not import).
	PackageDir string `json:"package_dir,omitempty"`
	// ImportError is why it did not import.
	ImportError string `json:"import_error,omitempty"`
}

// VersionString is "3.12.3".
func (p *PythonInfo) VersionString() string {
	return fmt.Sprintf("%d.%d.%d", p.Version[0], p.Version[1], p.Version[2])
}

// AtLeast reports whether the interpreter is at least major.minor.
func (p *PythonInfo) AtLeast(v [2]int) bool {
	return p.Version[0] > v[0] || p.Version[0] == v[0] && p.Version[1] >= v[1]
}

// pythonProbe prints one JSON line; -I (isolated) as the native frontend
// runs the control plane (main.cpp `python3 -I -m trtmc_server`).
const pythonProbe = `import json, os, sys
info = {"executable": sys.executable, "version": list(sys.version_info[:3])}
try:
    import tensorrt_model_connect as m
    info["file"] = m.__file__
except Exception as e:
    info["error"] = "%s: %s" % (type(e).__name__, e)
print(json.dumps(info))`

// ProbePython asks the TRTMC interpreter for its version and where it
// imports tensorrt_model_connect from. An interpreter that cannot run at
// all is an error; a package that does not import is PythonInfo.ImportError.
func ProbePython(ctx context.Context, r proc.Runner, python string) (*PythonInfo, error) {
	if python == "" {
		python = "python3"
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	_, err := r.Run(ctx, proc.Spec{Name: "python probe", Argv: []string{python, "-I", "-c", pythonProbe}, Stdout: &stdout, Stderr: &stderr})
	var raw struct {
		Executable string `json:"executable"`
		Version    []int  `json:"version"`
		File       string `json:"file"`
		Error      string `json:"error"`
	}
	line := strings.TrimSpace(text.LastLines(stdout.String(), 1))
	if jerr := json.Unmarshal([]byte(line), &raw); jerr != nil || len(raw.Version) < 2 {
		if err == nil {
			err = fmt.Errorf("printed %q, not its version", text.Clip(line, 200))
		}
		if msg := strings.TrimSpace(text.LastLines(stderr.String(), 1)); msg != "" {
			// An interpreter that runs but lacks the package exits 1 with
			// ModuleNotFoundError (a probe that cannot catch it: too old).
			if strings.Contains(msg, "tensorrt_model_connect") {
				return &PythonInfo{Executable: python, ImportError: msg}, nil
			}
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return nil, fmt.Errorf("the TRTMC interpreter %s: %w", python, err)
	}
	info := &PythonInfo{Executable: raw.Executable, ImportError: raw.Error}
	copy(info.Version[:], raw.Version)
	if raw.File != "" {
		info.PackageDir = filepath.Dir(raw.File)
	} else if info.ImportError == "" {
		info.ImportError = "tensorrt_model_connect has no __file__"
	}
	return info, nil
}

// WorkerBinary is the native worker that was found, and how.
type WorkerBinary = families.NativeWorkerBinary

// LocateWorker finds the native worker: a configured path first (it must
// be the native binary); else trtmc-server on PATH when it is the native
// binary (a source build's launcher, whose server runs it as the worker);
// else beside the tensorrt_model_connect package that the TRTMC
// interpreter imports (the wheel's bin/, with both DSOs, the worker the
// console script's control plane starts); else
// $TRTMC_REPO/build/trtmc-server. The console script on PATH is never
// taken. The error lists everywhere it looked, with the fix.
func LocateWorker(ctx context.Context, o LocateOptions) (*WorkerBinary, error) {
	if o.Explicit != "" {
		from := o.ExplicitFrom
		if from == "" {
			from = WorkerFromFlag
		}
		p, err := filepath.Abs(o.Explicit)
		if err != nil {
			return nil, err
		}
		if err := CheckNativeBinary(p); err != nil {
			return nil, noWorker{fmt.Errorf("%s %s: %w", from, o.Explicit, err)}
		}
		return identify(ctx, &WorkerBinary{Path: p, Source: from})
	}
	var looked []string
	if w, note := launcherOnPath(o.LookPath); w != nil {
		return identify(ctx, w)
	} else if note != "" {
		looked = append(looked, note)
	}
	if o.Runner != nil {
		py, err := ProbePython(ctx, o.Runner, o.Python)
		switch {
		case err != nil:
			looked = append(looked, err.Error())
		case py.ImportError != "":
			looked = append(looked, fmt.Sprintf("the TRTMC interpreter %s does not import tensorrt_model_connect (%s)", orDefault(o.Python, "python3"), py.ImportError))
		default:
			dir := filepath.Join(py.PackageDir, "bin")
			cand := filepath.Join(dir, NativeWorkerName)
			var missing []string
			for _, f := range append([]string{NativeWorkerName}, packagedDSOs...) {
				if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || !fi.Mode().IsRegular() {
					missing = append(missing, f)
				}
			}
			switch {
			case len(missing) > 0:
				looked = append(looked, fmt.Sprintf("%s lacks %s (a wheel installs the worker there beside its DSOs)", dir, strings.Join(missing, ", ")))
			default:
				if err := CheckNativeBinary(cand); err != nil {
					looked = append(looked, fmt.Sprintf("%s: %v", cand, err))
					break
				}
				return identify(ctx, &WorkerBinary{Path: cand, Source: WorkerFromPackage, RuntimeRoot: dir})
			}
		}
	}
	if o.Repo != "" {
		cand := filepath.Join(o.Repo, "build", NativeWorkerName)
		if err := CheckNativeBinary(cand); err == nil {
			abs, _ := filepath.Abs(cand)
			return identify(ctx, &WorkerBinary{Path: abs, Source: WorkerFromBuild})
		} else {
			looked = append(looked, fmt.Sprintf("%s: %v", cand, err))
		}
	} else {
		looked = append(looked, "no TRTMC checkout (TRTMC_REPO) for build/"+NativeWorkerName)
	}
	return nil, &WorkerNotFound{Looked: looked}
}

// launcherOnPath is the native trtmc-server first on PATH, if it is one;
// note says what was there otherwise ("" when nothing was looked at).
func launcherOnPath(lookPath func(string) (string, error)) (*WorkerBinary, string) {
	if lookPath == nil {
		return nil, ""
	}
	p, err := lookPath(NativeWorkerName)
	if err != nil {
		return nil, "no " + NativeWorkerName + " on PATH"
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, err.Error()
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved // the launcher passes /proc/self/exe, resolved
	}
	switch err := CheckNativeBinary(abs); {
	case errors.Is(err, ErrScript):
		return nil, "" // the console script: its worker is the package's
	case err != nil:
		return nil, fmt.Sprintf("%s on PATH: %v", abs, err)
	}
	return &WorkerBinary{Path: abs, Source: WorkerFromLauncher}, ""
}

// IsLauncher reports whether path is a source build's launcher: a native
// trtmc-server with server/python/trtmc_server beside it (main.cpp
// frontend_main then runs `python3 -P -m trtmc_server` from there).
func IsLauncher(path string) bool {
	fi, err := os.Stat(filepath.Join(filepath.Dir(path), "server", "python", "trtmc_server"))
	return err == nil && fi.IsDir()
}

// ErrNoWorker is a native worker that is missing or is not one (a setup
// problem of the node, never a qualification outcome).
var ErrNoWorker = errors.New("no native worker")

// noWorker is an error that is an ErrNoWorker.
type noWorker struct{ error }

func (e noWorker) Is(target error) bool { return target == ErrNoWorker }
func (e noWorker) Unwrap() error        { return e.error }

// WorkerNotFound says where the native worker was looked for.
type WorkerNotFound struct{ Looked []string }

// Unwrap makes a WorkerNotFound an ErrNoWorker.
func (e *WorkerNotFound) Unwrap() error { return ErrNoWorker }

func (e *WorkerNotFound) Error() string {
	return "the native worker (the native trtmc-server binary, not the console script on PATH) was not found: " +
		strings.Join(e.Looked, "; ") +
		"; install TRTMC from its checkout into the TRTMC interpreter (pip install '.[serve]', which puts it at " +
		"tensorrt_model_connect/bin/trtmc-server), build it there (build/trtmc-server with TRTMC_REPO set), " +
		"or name it with --worker-binary / TRTMC_WORKER_BINARY"
}

func identify(ctx context.Context, w *WorkerBinary) (*WorkerBinary, error) {
	sum, err := fileio.FileSHA256(ctx, w.Path)
	if err != nil {
		return nil, fmt.Errorf("native worker %s: %w", w.Path, err)
	}
	w.SHA256 = sum
	return w, nil
}

// ErrScript is a "native worker" that is a script: the pip console script
// of TRTMC's control plane is one (a shebang wrapper of
// trtmc_server.cli:main), the native worker never is.
var ErrScript = errors.New("is a script (#!), not the native worker binary: the pip console script trtmc-server is TRTMC's Python control plane, which has no _serve-worker")

// CheckNativeBinary checks that path is an executable regular file that
// is not a script.
func CheckNativeBinary(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("not found (%w)", errors.Unwrap(err))
	}
	if !fi.Mode().IsRegular() {
		return errors.New("is not a regular file")
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return errors.New("is not executable")
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 2)
	if _, err := io.ReadFull(f, head); err == nil && string(head) == "#!" {
		return ErrScript
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
