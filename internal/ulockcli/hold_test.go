//go:build unix

package ulockcli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// A signal that comes once COMMAND has ended, while the hold is given
// back, is not lost: hold reports it, so that ulock elect --again stops
// rather than lead again.
func TestHold_signalAfterCommand(t *testing.T) {
	seen := make(chan os.Signal, 1) // keeps SIGHUP from ending the test once hold stops listening
	signal.Notify(seen, syscall.SIGHUP)
	defer signal.Stop(seen)
	s := &session{stdout: io.Discard, stderr: io.Discard, cmd: "ulock elect"}
	l := lockable{name: "scheduler", do: func(ctx context.Context, fn func(context.Context) error) error {
		if err := fn(ctx); err != nil {
			return err
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil { // while the hold is given back
			return err
		}
		select {
		case <-seen: // hold's channel has it by the time hold stops listening (os/signal)
		case <-time.After(5 * time.Second):
			t.Error("SIGHUP not delivered within 5s")
		}
		return nil
	}}
	h := s.hold(context.Background(), l, &runFlags{wait: -1, grace: time.Second}, []string{"true"})
	if h.err != nil || !h.entered || h.end.code != 0 {
		t.Fatalf("hold: err %v, entered %v, COMMAND's code %d; want COMMAND run, exit 0", h.err, h.entered, h.end.code)
	}
	if h.after != syscall.SIGHUP || h.end.passed {
		t.Errorf("after %v, passed %v; want SIGHUP, which came after COMMAND, reported and not passed on", h.after, h.end.passed)
	}
}
