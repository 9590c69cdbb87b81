package ulockcli

import (
	"os"
	"syscall"
	"unsafe"
)

// ownGroup reports whether COMMAND gets a process group of its own: when
// ulock's stdin is not a terminal. COMMAND that reads a terminal must stay
// in ulock's group, the terminal's foreground group, or reading stops it
// (SIGTTIN).
func ownGroup() bool {
	return !isTerminal(os.Stdin)
}

// isTerminal reports whether f is a terminal: whether it answers the ioctl
// TCGETS, as isatty(3) asks. /dev/null, a pipe or a file does not.
func isTerminal(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}

// sysProcAttr starts COMMAND in a process group of its own when group is
// true, and makes Linux send COMMAND SIGTERM when ulock dies, so that a
// killed ulock does not leave COMMAND running without the lock. That
// SIGTERM (Pdeathsig) reaches COMMAND alone, not the processes it started.
func sysProcAttr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: group}
}

// signalGroup sends sig to every process of the process group pgid.
func signalGroup(pgid int, sig syscall.Signal) error {
	return syscall.Kill(-pgid, sig)
}
