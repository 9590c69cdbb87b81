package ulockcli

import "syscall"

// sysProcAttr makes Linux send COMMAND SIGTERM when ulock dies, so that a
// killed ulock does not leave COMMAND running without the lock.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
