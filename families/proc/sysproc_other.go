//go:build unix && !linux

package proc

import "syscall"

// sysProcAttr puts the child in its own process group, so one signal
// reaches it and everything it forked. Outside Linux (macOS, the BSDs)
// there is no PR_SET_PDEATHSIG: a graceful stop (Ctrl-C, SIGTERM) still
// stops every child's process group, a kill -9 of the harness does not.
// `report`, `inventory` and `ci` start no long-lived children;
// qualification runs belong on the Linux machines that hold the servers.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
