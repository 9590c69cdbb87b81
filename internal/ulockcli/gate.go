package ulockcli

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"
)

// A gate decides, once, between running COMMAND and giving up the wait,
// so that nothing but a lost lock ever cancels COMMAND's ctx: the end of
// --wait and a signal give the wait up only while ulock waits, and fn
// runs COMMAND only if nobody gave up first.
type gate struct {
	cancel context.CancelCauseFunc // ends the wait

	mu    sync.Mutex // guards state and why
	state int        // waiting, running or gaveUp
	why   error      // why the wait was given up
}

// The states of a gate.
const (
	waiting = iota
	running
	gaveUp
)

// errGaveUp is what fn returns when the wait was given up before it ran.
var errGaveUp = errors.New("ulock: gave up waiting")

// errWaitEnded is why a wait was given up when --wait ended.
var errWaitEnded = errors.New("ulock: --wait ended")

// giveUp ends the wait for why, unless COMMAND runs or the wait was given
// up already; it reports whether it did.
func (g *gate) giveUp(why error) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != waiting {
		return false
	}
	g.state, g.why = gaveUp, why
	g.cancel(why)
	return true
}

// enter reports whether COMMAND may run: nobody gave the wait up.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != waiting {
		return false
	}
	g.state = running
	return true
}

// reason returns why the wait was given up, or nil.
func (g *gate) reason() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.why
}

// watch gives the wait up after wait (never when wait is negative; wait 0
// is TryDo's one attempt) and when a signal comes on sigs. The function it
// returns ends the watch and returns the signal that came too late to end
// the wait, for COMMAND, or nil; it may be called again, and then returns
// nil.
func (g *gate) watch(sigs <-chan os.Signal, wait time.Duration) func() os.Signal {
	var timer *time.Timer
	if wait > 0 {
		timer = time.AfterFunc(wait, func() { g.giveUp(errWaitEnded) })
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	late := make(chan os.Signal, 1)
	go func() {
		defer close(stopped)
		select {
		case sig := <-sigs:
			if !g.giveUp(signalled{sig}) {
				late <- sig
			}
		case <-done:
		}
	}()
	var once sync.Once
	return func() os.Signal {
		once.Do(func() {
			if timer != nil {
				timer.Stop()
			}
			close(done)
			<-stopped
		})
		select {
		case sig := <-late:
			return sig
		default:
			return nil
		}
	}
}
