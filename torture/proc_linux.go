package main

import "syscall"

// sysProcAttr makes the kernel kill a worker when the coordinator dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
