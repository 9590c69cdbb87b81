package ulockcli

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// newGate returns a gate and the ctx that its giving up ends.
func newGate(t *testing.T) (*gate, context.Context) {
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	return &gate{cancel: cancel}, ctx
}

func TestGate_giveUpFirst(t *testing.T) {
	g, ctx := newGate(t)
	if !g.giveUp(errWaitEnded) || g.enter() || g.giveUp(errGaveUp) {
		t.Fatal("giveUp, enter, giveUp = !true, true or true; want true, false, false")
	}
	if !errors.Is(context.Cause(ctx), errWaitEnded) || g.reason() != errWaitEnded {
		t.Errorf("cause %v, reason %v; want both errWaitEnded", context.Cause(ctx), g.reason())
	}
}

func TestGate_enterFirst(t *testing.T) {
	g, ctx := newGate(t)
	if !g.enter() || g.giveUp(errWaitEnded) || g.enter() {
		t.Fatal("enter, giveUp, enter = !true, true or true; want true, false, false")
	}
	if ctx.Err() != nil || g.reason() != nil {
		t.Errorf("ctx %v, reason %v; want COMMAND's ctx alive, no reason", ctx.Err(), g.reason())
	}
}

func TestGate_watch(t *testing.T) {
	cases := []struct {
		name    string
		wait    time.Duration
		signal  bool // a signal comes while waiting
		enter   bool // COMMAND enters before the signal
		why     error
		late    os.Signal // what end returns, or leaves on sigs, for COMMAND
		running bool
	}{
		{name: "--wait ends", wait: 10 * time.Millisecond, why: errWaitEnded},
		{name: "signal while waiting", wait: -1, signal: true, why: signalled{syscall.SIGHUP}},
		{name: "signal once COMMAND runs", wait: -1, signal: true, enter: true, late: syscall.SIGHUP, running: true},
		{name: "nothing", wait: time.Hour, enter: true, running: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, ctx := newGate(t)
			sigs := make(chan os.Signal, 1)
			end := g.watch(sigs, tc.wait)
			defer end()
			if tc.enter && !g.enter() {
				t.Fatal("enter() = false")
			}
			if tc.signal {
				sigs <- syscall.SIGHUP
			}
			if !tc.running {
				select {
				case <-ctx.Done():
				case <-time.After(5 * time.Second):
					t.Fatal("the wait did not end")
				}
			}
			late := end()
			if late == nil && len(sigs) == 1 { // the watch ended before it read the signal: COMMAND reads it
				late = <-sigs
			}
			if g.reason() != tc.why || late != tc.late || (ctx.Err() == nil) != tc.running {
				t.Errorf("reason %v, late %v, ctx %v; want %v, %v, running %t", g.reason(), late, ctx.Err(), tc.why, tc.late, tc.running)
			}
			if again := end(); again != nil {
				t.Errorf("end() again = %v; want nil", again)
			}
		})
	}
}
