//go:build linux

package qual

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trtmc-qual/trtmc-qual/families/proc"
	"github.com/trtmc-qual/trtmc-qual/reports/fileio"
	"github.com/trtmc-qual/trtmc-qual/reports/verdict"
)

// TestServerLoadedFilesAreDigested: the stop-server stage records, before
// it stops the server, every file the server's process group had mapped
// with its sha256 (server_loaded.json), the program it ran among the
// executables, and the list's own digest in the row.
func TestServerLoadedFilesAreDigested(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	real, err := filepath.EvalSymlinks(sleep)
	require.NoError(t, err)
	start := stageDef{name: "server", run: func(cr *checkpointRun, ctx context.Context) error {
		p, err := proc.OS{}.Start(context.WithoutCancel(ctx), proc.Spec{Name: "server", Argv: []string{sleep, "60"}, Grace: time.Second})
		if err != nil {
			return err
		}
		cr.server = p
		// Wait until the program is running (exec done), not the test binary's fork.
		for i := 0; i < 500; i++ {
			if exe, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(p.Pid()), "exe")); exe == real {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}}
	e, p := stageEnv(t, []stageDef{start, {name: "stop-server", run: (*checkpointRun).stopAndCollect, always: true}})
	e.opts.Security.AllowNonLoopback = true
	res := e.checkpoint(context.Background(), p, Slot{Name: "cpu0"}, placement{})

	lf := res.Provenance.ServerLoaded
	require.NotNil(t, lf)
	require.Empty(t, lf.Error)
	want, err := fileio.FileSHA256(context.Background(), real)
	require.NoError(t, err)
	assert.Contains(t, lf.Executables, verdict.FileIdentity{Path: real, SHA256: want})
	dir := filepath.Join(e.opts.Out, "g", "p")
	data, err := os.ReadFile(filepath.Join(dir, verdict.LoadedFile))
	require.NoError(t, err)
	assert.Equal(t, fileio.SHA256(data), lf.SHA256)
	var list verdict.LoadedList
	require.NoError(t, json.Unmarshal(data, &list))
	assert.Equal(t, verdict.LoadedListSchema, list.Schema)
	assert.Equal(t, lf.Count, len(list.Files))
	assert.Greater(t, lf.Count, 1, "the program and its libraries")
	for _, f := range list.Files {
		assert.Empty(t, f.Error, f.Path)
		assert.Len(t, f.SHA256, 64, f.Path)
	}
}
