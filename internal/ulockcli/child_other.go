//go:build !linux

package ulockcli

import (
	"errors"
	"syscall"
)

// ownGroup is false: elsewhere than on Linux ulock treats its stdin as a
// terminal, and COMMAND stays in ulock's process group.
func ownGroup() bool { return false }

// sysProcAttr is nil: only Linux can tie COMMAND's life to ulock's
// (Pdeathsig), so elsewhere a killed ulock leaves COMMAND running.
func sysProcAttr(bool) *syscall.SysProcAttr { return nil }

// signalGroup is never called, as ownGroup is false.
func signalGroup(int, syscall.Signal) error { return errors.ErrUnsupported }
