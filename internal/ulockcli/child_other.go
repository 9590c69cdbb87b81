//go:build !linux

package ulockcli

import "syscall"

// sysProcAttr is nil: only Linux can tie COMMAND's life to ulock's
// (Pdeathsig), so elsewhere a killed ulock leaves COMMAND running.
func sysProcAttr() *syscall.SysProcAttr { return nil }
