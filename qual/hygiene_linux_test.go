//go:build linux

package qual

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A process the server started in a session of its own, with none of the
// server's environment (trtmc-server's native worker: worker.py
// start_new_session and its environment allowlist), is still the
// checkpoint's: its parent is in the server's process group. A process
// that is not the server's descendant is not.
func TestOursFollowsTheServersDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "env -i setsid sleep 30 & echo $!; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	var child int
	_, err = fmt.Fscan(out, &child)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	// setsid(1) runs after the shell printed the pid: wait until it has.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		pg, _, ok := statOf(child)
		require.True(t, ok)
		if pg != cmd.Process.Pid {
			break
		}
		require.True(t, time.Now().Before(deadline), "the child never left the server's group")
	}
	cr := &checkpointRun{serverPID: cmd.Process.Pid, marker: "m"}
	assert.True(t, cr.ours(child))
	assert.True(t, cr.ours(cmd.Process.Pid))
	assert.False(t, cr.ours(os.Getpid()), "the harness is not the server's")
	assert.False(t, (&checkpointRun{marker: "m"}).ours(child), "no server, no descendants")
}
