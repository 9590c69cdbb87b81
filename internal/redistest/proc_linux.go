package redistest

import "syscall"

// sysProcAttr makes the kernel kill redis-server if the test binary dies
// without calling Stop.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
