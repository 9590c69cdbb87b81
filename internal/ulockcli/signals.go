package ulockcli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// The signals that ulock handles: ulock run passes them on to COMMAND, or
// gives up its wait on one; status, list and release stop on one.

// signals are the signals that ulock handles.
var signals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// signalled is why ulock stopped, or gave up a wait, on a signal.
type signalled struct{ sig os.Signal }

func (s signalled) Error() string { return "ulock: got " + signalName(s.sig) }

// interruptible returns a ctx that the first of signals to come cancels,
// with signalled as its cause, and the function that stops listening for
// them and cancels ctx. Until then such a signal no longer ends ulock.
func interruptible(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, signals...)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case sig := <-sigs:
			cancel(signalled{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		<-stopped
		cancel(nil)
	}
}

// failIn is fail for err, of a call under ctx, which interruptible made:
// when a signal cancelled ctx, it says so instead, in a line that ends
// with hint ("" for none), and returns 128 and the signal's number.
func (s *session) failIn(ctx context.Context, err error, hint string) int {
	sig, ok := context.Cause(ctx).(signalled)
	if !ok {
		return s.fail(err)
	}
	s.say("interrupted by %s%s", signalName(sig.sig), hint)
	return exitSignal + signalNumber(sig.sig)
}

// signalName returns the name of sig: "SIGTERM" rather than Go's
// "terminated".
func signalName(sig os.Signal) string {
	names := map[os.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"}
	if name, ok := names[sig]; ok {
		return name
	}
	return sig.String()
}

// signalNumber returns sig's number, 1 for a signal without one.
func signalNumber(sig os.Signal) int {
	if n, ok := sig.(syscall.Signal); ok {
		return int(n)
	}
	return 1
}
