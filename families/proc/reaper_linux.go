//go:build linux

package proc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

var subreaperOnce sync.Once

// becomeSubreaper makes this process a child subreaper (once): a process
// our children leave behind — its parent died, it called setsid or
// setpgid — is re-parented to us instead of to init, so it stays in our
// tree until the sweep finds it, and its zombie is ours to reap.
func becomeSubreaper() {
	subreaperOnce.Do(func() {
		_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	})
}

// procInfo is one line of /proc/PID/stat, what the sweep needs.
type procInfo struct {
	pid, ppid, pgrp, sid int
	state                byte
}

// scanProcs lists every process of /proc.
func scanProcs() []procInfo {
	procs, _ := readProcs("/proc")
	return procs
}

// readProcs lists every process of the proc file system at procRoot, as
// its PID/stat describes it: the one reader of that file in the package
// (the sweep, GroupAlive and groupPids use it).
func readProcs(procRoot string) ([]procInfo, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, err
	}
	out := make([]procInfo, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...; comm may hold anything, even ")".
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 4 || len(f[0]) != 1 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		sid, _ := strconv.Atoi(f[3])
		out = append(out, procInfo{pid: pid, ppid: ppid, pgrp: pgrp, sid: sid, state: f[0][0]})
	}
	return out, nil
}

// markedBy reports whether process pid carries the marks of the child m:
// its token in the TRTMC_QUAL_PROC environment variable, or the marker
// pipe inherited as an open file. Processes of other users cannot be read
// and carry no mark.
func markedBy(pid int, m marks) string {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	if env, err := readCapped(filepath.Join(dir, "environ"), 1<<20); err == nil {
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte(markerEnv+"=")); ok && hasToken(string(v), m.token) {
				return "its environment carries " + markerEnv + "=…" + m.token
			}
		}
	}
	if m.pipe == "" {
		return ""
	}
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return ""
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil && target == m.pipe {
			return "it holds the child's marker pipe (" + m.pipe + ")"
		}
	}
	return ""
}

func readCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var out []byte
	for int64(len(out)) < max {
		n, err := f.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			break
		}
	}
	return out, nil
}

// cmdline is a process's argv as one line, clipped.
func cmdline(pid int) string {
	data, err := readCapped(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"), 4096)
	if err != nil || len(data) == 0 {
		return "?"
	}
	s := strings.TrimRight(string(bytes.ReplaceAll(data, []byte{0}, []byte{' '})), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// sweepTimeout bounds one sweep: SIGKILL takes effect in milliseconds; a
// process in uninterruptible sleep (D) may take longer, and is reported.
const sweepTimeout = 3 * time.Second

// sweep runs when a child has exited and its process group was sent
// SIGKILL. It waits for the group's processes to die and reaps those
// re-parented to us; it finds every process that carries the child's
// marks outside its group (it called setsid or setpgid), and every process
// in the group or session of one found, kills each with SIGKILL, reaps
// them, and returns them.
func sweep(pgid int, m marks) []Survivor {
	self := os.Getpid()
	var found []Survivor
	killed := map[int]bool{}
	groups := map[int]bool{}   // process groups of the survivors
	sessions := map[int]bool{} // sessions the survivors lead
	deadline := time.Now().Add(sweepTimeout)
	pause := time.Millisecond
	for {
		pending := false
		for _, p := range scanProcs() {
			if p.pid == self {
				continue
			}
			ours := p.pgrp == pgid || killed[p.pid]
			if p.state == 'Z' {
				if p.ppid == self && ours {
					var ws syscall.WaitStatus
					_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
				}
				continue
			}
			if ours {
				pending = true // dying of the SIGKILL it was sent
				if p.pgrp == pgid {
					// The group still exists (so its id is not reused):
					// whatever joined it since the first SIGKILL gets one too.
					_ = syscall.Kill(-pgid, syscall.SIGKILL)
				}
				continue
			}
			why := ""
			switch {
			case groups[p.pgrp] || sessions[p.sid]:
				why = "it is in the process group or session of a survivor"
			default:
				why = markedBy(p.pid, m)
			}
			if why == "" {
				continue
			}
			found = append(found, Survivor{Pid: p.pid, Argv: cmdline(p.pid), Group: p.pgrp, Session: p.sid, Why: why})
			killed[p.pid], groups[p.pgrp] = true, true
			if p.sid == p.pid {
				sessions[p.sid] = true
			}
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
			pending = true
		}
		if !pending || time.Now().After(deadline) {
			return found
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// groupAlive is GroupAlive, waiting at most wait: a member of the group
// that is not a zombie is alive; the group's zombies whose parent is this
// process are reaped (the group's leader, the child, was reaped by its
// Wait, so each is a descendant re-parented here, never another child's
// exec.Cmd); a zombie of another parent is dead and holds nothing. When
// /proc cannot be read, only the signal can tell, and a group that exists
// at the deadline is alive.
func groupAlive(pgid int, wait time.Duration) bool {
	self := os.Getpid()
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		if !signalable(pgid) {
			return false
		}
		procs := scanProcs()
		live := len(procs) == 0 // nothing readable: trust the signal
		for _, p := range procs {
			if p.pgrp != pgid {
				continue
			}
			if p.state == 'Z' || p.state == 'X' {
				if p.ppid == self {
					var ws syscall.WaitStatus
					_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
				}
				continue
			}
			live = true
		}
		if !live {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// childMarks makes the marks of a new child: its token for the
// environment, and a pipe whose read end it inherits as an extra file.
// Nothing is ever written to the pipe (its write end is closed at once), so
// a child that reads it sees end-of-file; a descendant that empties its
// environment still holds it until it closes it.
func childMarks(token string) (marks, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return marks{}, nil, err
	}
	_ = w.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(r.Fd()), &st); err != nil {
		r.Close()
		return marks{}, nil, err
	}
	return marks{token: token, pipe: "pipe:[" + strconv.FormatUint(st.Ino, 10) + "]"}, r, nil
}
