package ulockcli

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// A child is COMMAND, which ulock run runs while it holds the lock.
type child struct {
	argv           []string
	env            []string
	stdout, stderr io.Writer
	grace          time.Duration // from SIGTERM to SIGKILL when the lock is lost
}

// An ending is how COMMAND ended.
type ending struct {
	code       int   // ulock's exit code for it: its status, 128+signal, 126 or 127
	err        error // why it did not start; nil when it did
	terminated bool  // ulock sent it SIGTERM because the lock was lost
}

// run runs COMMAND until it exits, with ulock's stdin, passing on the
// signals that come on sigs, and late first when it is not nil. When ctx
// ends, which only a lost lock does, run sends COMMAND SIGTERM, and
// SIGKILL after the grace period.
func (c *child) run(ctx context.Context, sigs <-chan os.Signal, late os.Signal) ending {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, c.stdout, c.stderr
	cmd.Env = c.env
	cmd.SysProcAttr = sysProcAttr()
	// Linux sends the Pdeathsig of sysProcAttr when the thread that started
	// the child ends, not the process: keep this goroutine, and so its
	// thread, until COMMAND exits.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return startFailure(err)
	}
	if late != nil {
		_ = cmd.Process.Signal(late)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }() // ProcessState tells how it ended
	var end ending
	lost := ctx.Done()
	var kill <-chan time.Time
	for {
		select {
		case <-exited:
			end.code = exitCode(cmd.ProcessState)
			return end
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig)
		case <-lost:
			lost, end.terminated = nil, true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			t := time.NewTimer(c.grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			_ = cmd.Process.Kill()
		}
	}
}

// exitCode is ulock's exit code for COMMAND that ended as ps tells: its
// exit status, or 128 and the number of the signal that killed it.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return exitFailure
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignal + int(ws.Signal())
	}
	return ps.ExitCode()
}

// startFailure is the ending of COMMAND that could not start: 127 when
// it was not found, as sh(1) exits, and 126 otherwise (not executable).
func startFailure(err error) ending {
	code := exitNotExec
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, exec.ErrDot) || errors.Is(err, fs.ErrNotExist) {
		code = exitNotFound
	}
	return ending{code: code, err: err}
}
