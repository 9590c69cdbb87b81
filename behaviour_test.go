package uncomplicated_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/uncomplicatedtest"
)

// One behaviour: each shared call on each primitive, in each state of its
// hold and its Client, gives the same result. A want of nil is no error;
// otherwise the error matches every listed sentinel.
func TestBehaviour_sameOnEveryPrimitive(t *testing.T) {
	canceled := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	states := []struct {
		name string
		// into brings a fresh hold h of env's Client into the state, and
		// returns the ctx of the calls.
		into    func(env *uncomplicatedtest.Env, h aHold) context.Context
		refresh []error
		held    bool
		heldErr []error
		lost    bool // Lost's channel is closed
		release []error
	}{
		{name: "held",
			into:    func(*uncomplicatedtest.Env, aHold) context.Context { return context.Background() },
			held:    true,
			refresh: nil, heldErr: nil, release: nil},
		{name: "released",
			into: func(_ *uncomplicatedtest.Env, h aHold) context.Context {
				mustNil(h.release(context.Background()))
				return context.Background()
			},
			refresh: []error{uncomplicated.ErrNotHeld}, lost: true,
			release: []error{uncomplicated.ErrNotHeld}},
		{name: "lost",
			into: func(env *uncomplicatedtest.Env, _ aHold) context.Context {
				env.Redis.FlushAll()
				return context.Background()
			},
			refresh: []error{uncomplicated.ErrLost, uncomplicated.ErrNotHeld}, lost: true,
			release: []error{uncomplicated.ErrLost, uncomplicated.ErrNotHeld}},
		{name: "ctx ended",
			into:    func(*uncomplicatedtest.Env, aHold) context.Context { return canceled() },
			refresh: []error{context.Canceled}, heldErr: []error{context.Canceled},
			release: []error{context.Canceled}},
		{name: "released, Client closed",
			into: func(env *uncomplicatedtest.Env, h aHold) context.Context {
				mustNil(h.release(context.Background()))
				mustNil(env.Client.Close())
				return context.Background()
			},
			refresh: []error{uncomplicated.ErrClosed}, heldErr: []error{uncomplicated.ErrClosed}, lost: true,
			release: []error{uncomplicated.ErrClosed, uncomplicated.ErrNotHeld}},
		{name: "held, Client closed",
			into: func(env *uncomplicatedtest.Env, _ aHold) context.Context {
				mustNil(env.Client.Close())
				return context.Background()
			},
			refresh: []error{uncomplicated.ErrClosed}, heldErr: []error{uncomplicated.ErrClosed},
			release: []error{uncomplicated.ErrClosed}},
	}
	for _, p := range primitives {
		for _, s := range states {
			t.Run(p.name+"/"+s.name, func(t *testing.T) {
				env := uncomplicatedtest.New(t)
				h := p.take(t, env.Client, "same")
				ctx := s.into(env, h)
				checkErr(t, "Refresh", h.refresh(ctx), s.refresh)
				if s.name == "lost" { // Held finds it lost: then Lost is closed
					if ok, err := h.check(ctx); ok || err != nil {
						t.Errorf("Held() = %v, %v; want false, nil", ok, err)
					}
				} else {
					ok, err := h.check(ctx)
					checkErr(t, "Held", err, s.heldErr)
					if ok != s.held {
						t.Errorf("Held() = %v; want %v", ok, s.held)
					}
				}
				if got := uncomplicated.IsClosed(h.lost()); got != s.lost {
					t.Errorf("Lost() closed = %v; want %v", got, s.lost)
				}
				checkErr(t, "release", h.release(ctx), s.release)
			})
		}
		// Acquiring on an ended ctx or a closed Client: ErrNotObtained,
		// and the cause.
		for _, s := range []struct {
			name  string
			cause error
		}{{"ctx ended", context.Canceled}, {"Client closed", uncomplicated.ErrClosed}} {
			t.Run(p.name+"/acquire, "+s.name, func(t *testing.T) {
				env := uncomplicatedtest.New(t)
				ctx := context.Background()
				if s.cause == context.Canceled {
					ctx = canceled()
				} else {
					mustNil(env.Client.Close())
				}
				want := []error{uncomplicated.ErrNotObtained, s.cause}
				_, err := p.wait(ctx, env.Client, "same")
				if s.cause == uncomplicated.ErrClosed { // the constructor says so first
					want = []error{uncomplicated.ErrClosed}
				}
				checkErr(t, "wait", err, want)
				_, err = p.try(ctx, env.Client, "same")
				checkErr(t, "try", err, want)
				err = p.do(ctx, env.Client, "same", func(context.Context) error { return nil })
				checkErr(t, "Do", err, want)
			})
		}
	}
}

// checkErr reports err unless it matches every one of want, or is nil
// when want is.
func checkErr(t *testing.T, call string, err error, want []error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Errorf("%s() = %v; want nil", call, err)
		}
		return
	}
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Errorf("%s() = %v; want it to match %v", call, err, w)
		}
	}
}

func mustNil(err error) {
	if err != nil {
		panic(fmt.Sprintf("unexpected error: %v", err))
	}
}
