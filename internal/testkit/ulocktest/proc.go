package ulocktest

import (
	"bytes"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A Proc is a running ulock, the binary that Main built. It is safe for
// concurrent use.
type Proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	started        time.Time
	done           chan struct{} // closed when it has exited
}

// Start starts ulock with args, and env added to the test's environment,
// its stdin /dev/null; it is killed at the test's end if it still runs.
// When ulock cannot start, Start stops the test with Fatal.
func Start(tb testing.TB, env []string, args ...string) *Proc {
	tb.Helper()
	return StartStdin(tb, nil, env, args...)
}

// StartStdin is Start with stdin as ulock's stdin, such as a terminal;
// nil is /dev/null.
func StartStdin(tb testing.TB, stdin *os.File, env []string, args ...string) *Proc {
	tb.Helper()
	p := &Proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	if stdin != nil {
		p.cmd.Stdin = stdin
	}
	// A -race build sleeps a second at exit unless told not to.
	p.cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	tb.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.done })
	return p
}

// Run runs ulock with args, and env added to the test's environment, as
// Start and Wait do.
func Run(tb testing.TB, env []string, args ...string) Result {
	tb.Helper()
	return Start(tb, env, args...).Wait(tb)
}

// Wait waits, at most 20 s, for p to exit. When p still runs then, Wait
// kills it, fails the test and returns what p wrote until then.
func (p *Proc) Wait(tb testing.TB) Result {
	tb.Helper()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		tb.Errorf("ulock %q still ran after 20s; killed it; stderr:\n%s", p.cmd.Args[1:], &p.stderr)
	}
	return Result{p.cmd.ProcessState.ExitCode(), p.stdout.String(), p.stderr.String(), time.Since(p.started)}
}

// Exited reports whether p has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to p, or stops the test with Fatal when it cannot.
func (p *Proc) Signal(tb testing.TB, sig syscall.Signal) {
	tb.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		tb.Fatal(err)
	}
}

// Kill kills p and waits for it to exit, or stops the test with Fatal when
// it cannot, as when p has already exited.
func (p *Proc) Kill(tb testing.TB) {
	tb.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		tb.Fatal(err)
	}
	<-p.done
}

// Terminal returns a terminal for a ulock's stdin: the master side of a
// new pseudo-terminal, which answers the terminal ioctls as the slave side
// does. It is closed at the test's end; without /dev/ptmx the test is
// skipped.
func Terminal(tb testing.TB) *os.File {
	tb.Helper()
	f, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		tb.Skipf("no pseudo-terminal: %v", err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}
