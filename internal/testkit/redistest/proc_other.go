//go:build !linux

package redistest

import (
	"errors"
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// Pause and Resume need SIGSTOP and SIGCONT, which only the Linux build
// sends.
const sigStop, sigCont syscall.Signal = 0, 0

func signal(*os.Process, syscall.Signal) error {
	return errors.New("redistest: Pause and Resume need Linux")
}

// alive reports that no other process runs: without /proc, each test
// binary that skipped tests may tell its own total.
func alive(int) bool { return false }
