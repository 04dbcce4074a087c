package trtmc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/families/trtmc/trtmctest"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
)

// The native worker is found as TRTMC's control plane finds it: beside
// the tensorrt_model_connect package the TRTMC interpreter imports (with
// both DSOs), else a source build's build/trtmc-server; a configured path
// first. Never the console script on PATH, which is a script.
func TestLocateWorker(t *testing.T) {
	ctx := context.Background()
	t.Run("beside the package", func(t *testing.T) {
		in := trtmctest.OnPath(t)
		w, err := LocateWorker(ctx, LocateOptions{Runner: proc.OS{}})
		require.NoError(t, err)
		assert.Equal(t, in.Native, w.Path)
		assert.Equal(t, WorkerFromPackage, w.Source)
		assert.Equal(t, in.RuntimeRoot, w.RuntimeRoot)
		sum, err := fileio.FileSHA256(ctx, in.Native)
		require.NoError(t, err)
		assert.Equal(t, sum, w.SHA256)
	})
	t.Run("a DSO missing beside it", func(t *testing.T) {
		in := trtmctest.OnPath(t)
		require.NoError(t, os.Remove(filepath.Join(in.RuntimeRoot, "libtrtmc_backend_trt.so")))
		_, err := LocateWorker(ctx, LocateOptions{Runner: proc.OS{}})
		var nf *WorkerNotFound
		require.ErrorAs(t, err, &nf)
		assert.ErrorContains(t, err, "lacks libtrtmc_backend_trt.so")
		assert.ErrorContains(t, err, "pip install '.[serve]'")
	})
	t.Run("the package not installed, a source build", func(t *testing.T) {
		in := trtmctest.OnPath(t)
		t.Setenv("FAKE_TRTMC_SITE_PACKAGES", "")
		repo := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(repo, "build"), 0o755))
		data, err := os.ReadFile(in.Native)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(repo, "build", "trtmc-server"), data, 0o755))
		w, err := LocateWorker(ctx, LocateOptions{Runner: proc.OS{}, Repo: repo})
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(repo, "build", "trtmc-server"), w.Path)
		assert.Equal(t, WorkerFromBuild, w.Source)
		assert.Empty(t, w.RuntimeRoot, "a source build's worker finds its runtime root itself")
	})
	t.Run("the console script on PATH: its worker is the package's", func(t *testing.T) {
		in := trtmctest.OnPath(t)
		w, err := LocateWorker(ctx, LocateOptions{Runner: proc.OS{}, LookPath: exec.LookPath})
		require.NoError(t, err)
		assert.Equal(t, in.Native, w.Path)
		assert.Equal(t, WorkerFromPackage, w.Source)
	})
	t.Run("a source build's launcher on PATH is its own worker", func(t *testing.T) {
		in := trtmctest.OnPath(t) // a wheel too: the server on PATH decides
		sb := trtmctest.NewSourceBuild(t, t.TempDir())
		t.Setenv("PATH", sb.Build+string(os.PathListSeparator)+os.Getenv("PATH"))
		w, err := LocateWorker(ctx, LocateOptions{Runner: proc.OS{}, LookPath: exec.LookPath})
		require.NoError(t, err)
		assert.Equal(t, sb.Native, w.Path)
		assert.NotEqual(t, in.Native, w.Path)
		assert.Equal(t, WorkerFromLauncher, w.Source)
		assert.Empty(t, w.RuntimeRoot, "the launcher's control plane passes no runtime root")
		assert.True(t, IsLauncher(w.Path))
		assert.False(t, IsLauncher(in.Native))
	})
	t.Run("nowhere", func(t *testing.T) {
		trtmctest.OnPath(t)
		t.Setenv("FAKE_TRTMC_SITE_PACKAGES", "")
		_, err := LocateWorker(ctx, LocateOptions{Runner: proc.OS{}, Repo: t.TempDir()})
		assert.ErrorContains(t, err, "does not import tensorrt_model_connect (ModuleNotFoundError")
		assert.ErrorContains(t, err, "build/trtmc-server: not found")
		assert.ErrorContains(t, err, "--worker-binary / TRTMC_WORKER_BINARY")
	})
	t.Run("configured", func(t *testing.T) {
		in := trtmctest.OnPath(t)
		w, err := LocateWorker(ctx, LocateOptions{Explicit: in.Native, ExplicitFrom: WorkerFromEnv, Runner: proc.OS{}})
		require.NoError(t, err)
		assert.Equal(t, WorkerFromEnv, w.Source)
		assert.Empty(t, w.RuntimeRoot)
	})
	t.Run("the console script is refused", func(t *testing.T) {
		in := trtmctest.OnPath(t)
		path, err := exec.LookPath("trtmc-server")
		require.NoError(t, err)
		require.Equal(t, in.ConsoleScript, path, "trtmc-server on PATH is the console script")
		_, err = LocateWorker(ctx, LocateOptions{Explicit: path, Runner: proc.OS{}})
		require.ErrorIs(t, err, ErrScript)
		assert.ErrorContains(t, err, "--worker-binary "+path+": is a script")
		assert.ErrorContains(t, err, "has no _serve-worker")
	})
}

// The interpreter's version and where the package lives.
func TestProbePython(t *testing.T) {
	in := trtmctest.OnPath(t)
	py, err := ProbePython(context.Background(), proc.OS{}, "python3")
	require.NoError(t, err)
	assert.Equal(t, "3.12.3", py.VersionString())
	assert.True(t, py.AtLeast(MinPython))
	assert.Equal(t, in.Package, py.PackageDir)
	t.Setenv("FAKE_PYTHON_VERSION", "3.11.9")
	py, err = ProbePython(context.Background(), proc.OS{}, "python3")
	require.NoError(t, err)
	assert.False(t, py.AtLeast(MinPython))
	_, err = ProbePython(context.Background(), proc.OS{}, filepath.Join(t.TempDir(), "python-missing"))
	assert.ErrorContains(t, err, "the TRTMC interpreter")
}
