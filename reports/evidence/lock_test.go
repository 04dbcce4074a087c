package evidence

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 13, finding 2: two runs into the same --out destroyed each
// other's evidence. The second LockDir of a group directory fails at once,
// naming the holder; after Unlock the lock can be taken again.
func TestLockDirIsExclusiveAndNamesItsHolder(t *testing.T) {
	dir := t.TempDir()
	h := Holder{PID: os.Getpid(), Host: "host-a", Started: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC),
		Command: []string{"trtmc-qual", "run", "--group", "vlm", "--out", "out dir"}}
	first, err := LockDir(dir, h)
	require.NoError(t, err)
	_, err = LockDir(dir, ThisProcess(time.Now()))
	var le *LockedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, dir+" is in use by another trtmc-qual run: pid "+strconv.Itoa(os.Getpid())+
		" on host-a, started 2026-12-01T08:00:00Z, command trtmc-qual run --group vlm --out 'out dir'; "+
		"wait for it to finish, or write to another --out", err.Error())
	require.NoError(t, first.Unlock())
	again, err := LockDir(dir, h)
	require.NoError(t, err, "released by Unlock")
	require.NoError(t, again.Unlock())
}

// A lock is never stale: the kernel drops the flock when its holder dies,
// even by SIGKILL, and the next run takes it.
func TestLockDiesWithItsHolder(t *testing.T) {
	if os.Getenv("TRTMC_LOCK_HELPER") != "" {
		if _, err := LockDir(os.Getenv("TRTMC_LOCK_HELPER"), ThisProcess(time.Now())); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		select {} // hold it until killed
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockDiesWithItsHolder$")
	cmd.Env = append(os.Environ(), "TRTMC_LOCK_HELPER="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)

	_, err = LockDir(dir, ThisProcess(time.Now()))
	var le *LockedError
	require.ErrorAs(t, err, &le, "held by the helper")
	require.NotNil(t, le.Holder)
	assert.Equal(t, cmd.Process.Pid, le.Holder.PID)
	assert.True(t, strings.HasSuffix(le.Holder.Command[0], ".test"), le.Holder.Command)

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	l, err := LockDir(dir, ThisProcess(time.Now()))
	require.NoError(t, err, "the lock died with its holder")
	require.NoError(t, l.Unlock())
}
