package redistest

import (
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr makes the kernel kill redis-server if the test binary dies
// without calling Stop.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

const sigStop, sigCont = syscall.SIGSTOP, syscall.SIGCONT

func signal(p *os.Process, sig syscall.Signal) error { return p.Signal(sig) }

// alive reports whether the process pid runs.
func alive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}
