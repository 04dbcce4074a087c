//go:build linux

package proc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// alive reports whether pid runs (a zombie is dead).
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && !strings.HasPrefix(strings.TrimSpace(string(stat[i+1:])), "Z")
}

// pidsOf finds the live processes whose command line is exactly argv.
func pidsOf(t *testing.T, argv string) []int {
	t.Helper()
	var out []int
	for _, p := range scanProcs() {
		if p.state != 'Z' && cmdline(p.pid) == argv {
			out = append(out, p.pid)
		}
	}
	return out
}

func sh(script string) Spec {
	return Spec{Name: "server", Argv: []string{"sh", "-c", script}, Grace: time.Second}
}

// Every process a child starts, and every descendant, is gone when it
// ends — whatever it did to its group or session (issue 25, item 11): the
// sweep finds it, kills it and names it.
func TestSurvivorsOfEveryKindAreFoundAndKilled(t *testing.T) {
	for _, c := range []struct {
		name, script string
		// argvs of the processes that must be found
		want []string
	}{
		{"setsid (issue 25's server argv)", "setsid sleep 301 & sleep 0.2", []string{"sleep 301"}},
		{"setsid with the environment emptied", "setsid env -i sleep 302 & sleep 0.2", []string{"sleep 302"}},
		{"a new process group (setpgid) only", "perl -e 'setpgrp(0,0); exec qw(sleep 303)' & sleep 0.2", []string{"sleep 303"}},
		{"a session leader whose child drops every mark", `setsid sh -c 'exec 3<&-; env -i sleep 304 & exec sleep 305' & sleep 0.2`,
			[]string{"sleep 304", "sleep 305"}},
		{"a stopped survivor", `setsid sh -c 'kill -STOP $$; sleep 306' & sleep 0.2`, []string{`sh -c kill -STOP $$; sleep 306`}},
		{"double fork, the middle one gone", "(setsid sleep 307 &) ; sleep 0.2", []string{"sleep 307"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if strings.Contains(c.script, "perl") {
				// Never a skip: perl (perl-base) is Essential on Debian,
				// and only it calls setpgid alone from a script here.
				_, err := exec.LookPath("perl")
				require.NoError(t, err, "the setpgid case needs perl")
			}
			res, err := OS{}.Run(context.Background(), sh(c.script))
			require.NoError(t, err)
			var got []string
			for _, s := range res.Survivors {
				got = append(got, s.Argv)
				assert.False(t, alive(s.Pid), "%s is gone", s)
				assert.NotEmpty(t, s.Why)
			}
			for _, w := range c.want {
				assert.Contains(t, got, w, "survivors: %+v", res.Survivors)
				assert.Empty(t, pidsOf(t, w), "%s lives on", w)
			}
		})
	}
}

// The server path: Start, then Stop (SIGTERM to the group, SIGKILL): the
// helper that called setsid is swept too, and the group leaves no zombie
// behind (the orphan check, GroupAlive, still holds).
func TestStopSweepsWhatLeftTheGroup(t *testing.T) {
	p, err := OS{}.Start(context.Background(), sh("setsid sleep 311 & sleep 312 & exec sleep 313"))
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	res, err := p.Stop()
	require.NoError(t, err)
	require.Len(t, res.Survivors, 1, "%+v", res.Survivors)
	assert.Equal(t, "sleep 311", res.Survivors[0].Argv)
	assert.Empty(t, pidsOf(t, "sleep 311"))
	assert.Empty(t, pidsOf(t, "sleep 312"), "the group's own member is killed with the group, not a survivor")
	assert.False(t, GroupAlive(p.Pid()), "no zombie of the group is left unreaped")
}

// A descendant of a child still running is none of an ending child's
// business: the sweep of one child never touches another's tree.
func TestSweepLeavesOtherChildrenAlone(t *testing.T) {
	a, err := OS{}.Start(context.Background(), sh("setsid sleep 321 & exec sleep 322"))
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	res, err := OS{}.Run(context.Background(), sh("setsid sleep 323 & sleep 0.1"))
	require.NoError(t, err)
	require.Len(t, res.Survivors, 1)
	assert.Equal(t, "sleep 323", res.Survivors[0].Argv)
	assert.NotEmpty(t, pidsOf(t, "sleep 321"), "a's own helper still runs")
	ra, err := a.Stop()
	require.NoError(t, err)
	require.Len(t, ra.Survivors, 1)
	assert.Equal(t, "sleep 321", ra.Survivors[0].Argv)
}

// A well-behaved child leaves nothing: no survivor, nothing killed.
func TestNoSurvivorsOfACleanChild(t *testing.T) {
	res, err := OS{}.Run(context.Background(), sh("sleep 0.05 & wait"))
	require.NoError(t, err)
	assert.Empty(t, res.Survivors)
	// The marks are there for descendants to carry.
	var out strings.Builder
	_, err = OS{}.Run(context.Background(), Spec{Name: "env", Argv: []string{"sh", "-c", "echo $" + markerEnv + "; ls -l /proc/self/fd/3"}, Stdout: &out})
	require.NoError(t, err)
	assert.Regexp(t, `^\d+\.\d+\n`, out.String())
	assert.Contains(t, out.String(), "pipe:[")
}

// This process is a child subreaper once it has started a child.
func TestHarnessIsASubreaper(t *testing.T) {
	_, err := OS{}.Run(context.Background(), sh("true"))
	require.NoError(t, err)
	var v int32
	const prGetChildSubreaper = 37
	_, _, errno := syscall.Syscall(syscall.SYS_PRCTL, prGetChildSubreaper, uintptr(unsafe.Pointer(&v)), 0)
	require.Zero(t, errno)
	assert.Equal(t, int32(1), v)
}

// BenchmarkSweepNothingLeft is what the sweep costs a child that leaves
// nothing behind: one pass over /proc (stat, environ and fds of every
// process this user may read).
func BenchmarkSweepNothingLeft(b *testing.B) {
	m := marks{token: "0.0", pipe: "pipe:[0]"}
	n := len(scanProcs())
	for b.Loop() {
		if s := sweep(1<<30, m); len(s) > 0 {
			b.Fatal(s)
		}
	}
	b.ReportMetric(float64(n), "procs")
}

// The orphan check waits for reaped children before it calls a group
// alive (issue 32 item 17): a zombie of the group whose parent is this
// process keeps kill(-pgid, 0) answering "exists" until it is reaped, and
// was taken for a live orphan. GroupAlive reaps it and says the group is
// gone; a member that runs is still alive.
func TestGroupAliveReapsTheGroupsZombies(t *testing.T) {
	// A zombie of our own, alone in its process group: its parent (this
	// test) never waits for it.
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	pgid := cmd.Process.Pid
	require.NoError(t, syscall.Kill(pgid, syscall.SIGKILL))
	require.Eventually(t, func() bool { return !alive(pgid) }, 5*time.Second, time.Millisecond)
	require.True(t, signalable(pgid), "the zombie holds its group: the signal alone calls it alive")
	assert.False(t, GroupAlive(pgid), "a group of zombies is not alive")
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pgid)))
	assert.True(t, os.IsNotExist(err), "the zombie was reaped")

	// A member that runs is alive, however long the check waits.
	live := exec.Command("sleep", "30")
	live.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, live.Start())
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	assert.True(t, groupAlive(live.Process.Pid, 50*time.Millisecond))
}

// The case, through the runner: a server wrapper SIGKILLs its
// child and exits at once, again and again; the check never reports the
// group alive.
func TestGroupAliveAfterAWrapperKillsItsChild(t *testing.T) {
	for i := range 20 {
		p, err := OS{}.Start(context.Background(), sh("sleep 30 & kill -KILL $!; exit 0"))
		require.NoError(t, err)
		_, _ = p.Wait()
		assert.False(t, GroupAlive(p.Pid()), "try %d: a false orphan", i)
	}
}
