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
	passed     bool  // ulock got a signal and passed it on
}

// run runs COMMAND until it exits, with ulock's stdin, passing on the
// signals that come on sigs, and late first when it is not nil, to COMMAND
// (see proc). When ctx ends, which only a lost lock does, run sends
// COMMAND SIGTERM, and SIGKILL after the grace period; it returns once
// COMMAND and, in its own process group, every process left in that group
// have exited, or at the SIGKILL.
func (c *child) run(ctx context.Context, sigs <-chan os.Signal, late os.Signal) ending {
	// Linux sends the Pdeathsig of sysProcAttr when the thread that started
	// the child ends, not the process: keep this goroutine, and so its
	// thread, until COMMAND exits.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd, p, exited, err := c.start()
	if err != nil {
		return startFailure(err)
	}
	var end ending
	if late != nil {
		p.signal(late)
		end.passed = true
	}
	lost := ctx.Done()
	var kill, poll <-chan time.Time
	killed := false // ulock sent SIGKILL: it waits for nothing more
	for {
		select {
		case <-exited: // COMMAND exited: done, unless the lock was lost and some of its group still run
			exited, end.code = nil, exitCode(cmd.ProcessState)
			if !end.terminated || killed || !p.groupRuns() {
				return end
			}
			t := time.NewTicker(straggling)
			defer t.Stop()
			poll = t.C
		case <-poll: // the rest of COMMAND's group, after a loss
			if !p.groupRuns() {
				return end
			}
		case sig := <-sigs: // a signal to ulock: COMMAND's, or its group's
			p.signal(sig)
			end.passed = true
		case <-lost: // the lock was lost: COMMAND must stop
			lost, end.terminated = nil, true
			p.signal(syscall.SIGTERM)
			t := time.NewTimer(c.grace)
			defer t.Stop()
			kill = t.C
		case <-kill: // the grace period after the loss has ended
			kill, killed = nil, true
			p.signal(syscall.SIGKILL)
			if exited == nil { // only the rest of the group ran
				return end
			}
		}
	}
}

// straggling is how often ulock run looks whether processes of COMMAND's
// group still run after the lock was lost and COMMAND exited.
const straggling = 50 * time.Millisecond

// start starts COMMAND in a process group of its own, with the
// attributes of sysProcAttr, and returns exited, closed once it exited
// (then cmd.ProcessState tells how); the caller has locked its OS thread.
func (c *child) start() (cmd *exec.Cmd, p proc, exited chan struct{}, err error) {
	cmd = exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, c.stdout, c.stderr
	cmd.Env = c.env
	group := ownGroup()
	cmd.SysProcAttr = sysProcAttr(group)
	if err := cmd.Start(); err != nil {
		return nil, proc{}, nil, err
	}
	exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	return cmd, proc{cmd.Process, group}, exited, nil
}

// A proc is COMMAND's process as ulock signals it: alone, or with every
// process of its group when it leads a process group of its own.
type proc struct {
	p     *os.Process
	group bool // it leads a group of its own (see ownGroup)
}

// signal sends sig to the process, or to its whole group.
func (p proc) signal(sig os.Signal) {
	if s, ok := sig.(syscall.Signal); ok && p.group {
		_ = signalGroup(p.p.Pid, s)
		return
	}
	_ = p.p.Signal(sig)
}

// groupRuns reports whether any process of the process's own group may
// still run: false when it has none, or when the group is empty.
func (p proc) groupRuns() bool {
	return p.group && !errors.Is(signalGroup(p.p.Pid, 0), syscall.ESRCH)
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
