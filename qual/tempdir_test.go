package qual

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The run's temporary directory is private (0700), short enough for
// AIPerf's socket paths, and removes what killed runs left; a TMPDIR too
// long for AIPerf's sockets is refused before anything runs (exit 3), not
// found as AIPerf failing to start.
func TestRunTemp(t *testing.T) {
	tmp, err := os.MkdirTemp("/tmp", "tq")
	require.NoError(t, err)
	defer os.RemoveAll(tmp)
	t.Setenv("TMPDIR", tmp)
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	stale := filepath.Join(tmp, runTempPrefix+strconv.Itoa(p.Pid)+"-7")
	require.NoError(t, os.MkdirAll(filepath.Join(stale, "1", "aiperf_mmap_x"), 0o700))

	dir, err := runTemp()
	require.NoError(t, err)
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	assert.LessOrEqual(t, len(dir)+len("/1/tmpabcdefgh/aiperf/dataset_manager_proxy_frontend.ipc"), 107)
	assert.NoDirExists(t, stale)
	env := strings.Join(TempEnv(dir), "\n")
	for _, k := range []string{"TMPDIR=", "TMP=", "TEMP=", "AIPERF_DATASET_MMAP_BASE_PATH=", "AIPERF_DATASET_MMAP_CACHE_DIR="} {
		assert.Contains(t, env, k+dir)
	}
	assert.Empty(t, TempEnv(""))

	long := filepath.Join(tmp, strings.Repeat("d", 40))
	require.NoError(t, os.Mkdir(long, 0o700))
	t.Setenv("TMPDIR", long)
	_, err = runTemp()
	var se *SetupError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Contains(t, err.Error(), "set TMPDIR to a shorter directory")
	entries, _ := os.ReadDir(long)
	assert.Empty(t, entries, "nothing left behind")
}
