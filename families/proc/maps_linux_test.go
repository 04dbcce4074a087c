//go:build linux

package proc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMappedFilesOfARealGroup: a started program's group maps the program
// itself (its exe) and the C library it is linked against.
func TestMappedFilesOfARealGroup(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := OS{}.Start(ctx, Spec{Name: "sleep", Argv: []string{sleep, "30"}, Grace: time.Second})
	require.NoError(t, err)
	defer p.Stop()
	real, err := filepath.EvalSymlinks(sleep)
	require.NoError(t, err)
	// The dynamic loader maps the C library after the program and itself:
	// a busy host can be read in between, so wait until it is there (or
	// time out, failing the test).
	var ms []Mapping
	var exe, libc bool
	require.Eventually(t, func() bool {
		ms, err = MappedFiles(p.Pid())
		exe, libc = false, false
		for _, m := range ms {
			exe = exe || (m.Executable && m.Path == real)
			libc = libc || strings.Contains(filepath.Base(m.Path), "libc")
		}
		return err == nil && exe && libc
	}, 10*time.Second, 10*time.Millisecond, "the program %s and the C library are mapped", real)
	for _, m := range ms {
		assert.True(t, strings.HasPrefix(m.Path, "/"), m.Path)
	}
}

// TestMappedFilesParse reads a /proc tree laid out by hand: each file once,
// executables marked, deleted ones named, pseudo-files and anonymous
// mappings left out, a path with spaces whole.
func TestMappedFilesParse(t *testing.T) {
	root := t.TempDir()
	proc := func(pid, pgid, exe, maps string) {
		d := filepath.Join(root, pid)
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "stat"), []byte(pid+" (x y) S 1 "+pgid+" 0 0"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(d, "maps"), []byte(maps), 0o644))
		require.NoError(t, os.Symlink(exe, filepath.Join(d, "exe")))
	}
	proc("100", "100", "/usr/bin/python3.12", `55d0-55d1 r--p 00000000 08:01 1234 /usr/bin/python3.12
7f00-7f01 r-xp 00000000 08:01 555 /opt/trtmc/lib/libtrtmc_runtime.so
7f01-7f02 rw-p 00000000 00:00 0 
7f02-7f03 r--p 00000000 00:05 77 /dev/nvidia0
7f03-7f04 r--p 00000000 08:01 556 /opt/my models/libplugin.so (deleted)
7fff-8000 rw-p 00000000 00:00 0                          [stack]
`)
	proc("101", "100", "/opt/trtmc/bin/trtmc-server", `5600-5601 r-xp 00000000 08:01 900 /opt/trtmc/bin/trtmc-server
7f00-7f01 r-xp 00000000 08:01 555 /opt/trtmc/lib/libtrtmc_runtime.so
`)
	proc("200", "200", "/usr/bin/other", "5600-5601 r-xp 00000000 08:01 1 /usr/bin/other\n")
	ms, err := mappedFiles(root, 100)
	require.NoError(t, err)
	assert.Equal(t, []Mapping{
		{Path: "/opt/my models/libplugin.so", Deleted: true},
		{Path: "/opt/trtmc/bin/trtmc-server", Executable: true},
		{Path: "/opt/trtmc/lib/libtrtmc_runtime.so"},
		{Path: "/usr/bin/python3.12", Executable: true},
	}, ms)
	_, err = mappedFiles(root, 999)
	assert.Error(t, err)
}
