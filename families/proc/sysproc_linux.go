//go:build linux

package proc

import "syscall"

// sysProcAttr puts the child in its own process group, so one signal
// reaches it and everything it forked, and gives it SIGKILL as its
// parent-death signal, so it dies if the harness is killed with -9.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
