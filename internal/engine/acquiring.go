package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
	"github.com/uncomplicated-mutex/uncomplicated/observe"
)

// An acquiring call, whatever the lock: its entry points (acquire, try,
// acquiring), the takers that call them, one attempt in Redis, and the
// hold a grant makes. What differs between the locks is their spec (see
// strategy.go).

// acquire acquires c's hold: in this process first, taking sem, if not
// nil, and then in Redis. It returns the new hold, or an error wrapping
// ErrNotObtained and its cause (see gaveUp). It tells o how it went.
func (b *base) acquire(ctx context.Context, c *spec, sem chan struct{}, o *observing) (h *hold, err error) {
	defer func() {
		if h == nil {
			o.failed(err)
		}
	}()
	if err := b.open(ctx); err != nil {
		return nil, err
	}
	obs, _ := b.cfg.clock.(settle.Observer)
	if obs != nil {
		obs.Waiting(1)
		defer obs.Waiting(-1)
	}
	if sem != nil {
		if err := b.enter(ctx, obs, sem, o); err != nil {
			return nil, err
		}
		defer func() {
			if h == nil { // also when a driver or logger panics
				<-sem
			}
		}()
	}
	return b.wait(ctx, obs, c, o)
}

// try makes one attempt at c's hold, and never waits nor takes over. It
// returns nil and no error when the lock is taken, here (sem) or in Redis.
// It tells o how it went.
func (b *base) try(ctx context.Context, c *spec, sem chan struct{}, o *observing) (h *hold, err error) {
	defer func() {
		if h == nil {
			o.failed(err)
		}
	}()
	if err := b.open(ctx); err != nil {
		return nil, err
	}
	if sem != nil {
		select {
		case sem <- struct{}{}:
		default:
			return nil, nil
		}
		defer func() {
			if h == nil {
				<-sem
			}
		}()
	}
	from := b.cfg.clock.Now()
	token := b.holderToken(from)
	b.c.tokens.own(token)
	defer func() {
		if h == nil {
			b.c.tokens.disown(token)
		}
	}()
	args := attemptArgs{token: token, lease: b.cfg.leaseMillis(), form: c.args, permits: c.permits}
	g, _, err := b.attempt(ctx, c.acquire, c.keys, c.kind, args)
	if err != nil {
		b.logFailure(ctx, err)
		return nil, b.gaveUp(ctx, err, "")
	}
	if !g.ok {
		return nil, nil
	}
	return b.granted(ctx, c, token, g.fence, from, observe.Acquired, o)
}

// A taker takes one kind of hold for an acquiring call: waiting its turn
// (take), or in one attempt that never waits (tryTake). The exclusive hold
// of a Mutex or an RWMutex's writer, an RWMutex's reader and a Semaphore's
// permit are the takers.
type taker interface {
	take(ctx context.Context, o *observing) (*hold, error)
	tryTake(ctx context.Context, o *observing) (*hold, error)
}

// acquiring is an acquiring call op on a lock of kind, from its beginning
// to its end for an Observer: t takes the hold, in one attempt with try,
// and then, if that got a hold and run is not nil, run runs with it (Do's
// fn and release). It reports whether it got the hold.
func (b *base) acquiring(ctx context.Context, op string, kind string, t taker, try bool, run func(context.Context, *hold) error) (bool, error) {
	ctx, o := b.observe(ctx, op, kind)
	var h *hold
	var err error
	if try {
		h, err = t.tryTake(ctx, o)
	} else {
		h, err = t.take(ctx, o)
	}
	if h != nil && run != nil {
		err = run(ctx, h)
	}
	err = b.c.opError(op, b.name, err)
	o.end(err)
	return h != nil, err
}

// granted records and logs a hold of c that Redis granted to token, for
// a call sent at or after from; how tells an attempt, a release's
// hand-off or a take-over, to o. Under WithReplicas it fails when the
// replicas do not have the hold.
func (b *base) granted(ctx context.Context, c *spec, token string, fence uint64, from time.Time, how observe.Outcome, o *observing) (*hold, error) {
	if !c.kind.fenced {
		fence = 0
	}
	if b.cfg.replicas == 0 { // Acquired comes first: the restart watch may find the hold lost at once
		b.logAcquired(ctx, c.kind.what, fence, slog.Bool("handed_off", how == observe.HandedOff))
		o.acquired(how, fence)
		return b.newHold(c.kind, c.keys, token, fence, from, how == observe.HandedOff, o), nil
	}
	h := b.newHold(c.kind, c.keys, token, fence, from, how == observe.HandedOff, nil)
	if err := h.replicate(ctx); err != nil { // a hold given back is never reported
		return nil, err
	}
	b.logAcquired(ctx, c.kind.what, fence, slog.Bool("handed_off", how == observe.HandedOff))
	o.acquired(how, fence)
	h.observe(o)
	return h, nil
}

// attempt runs an acquiring script with args (see attemptArgs). When its
// reply is lost after it may have run, it runs it again: the scripts reply
// the hold when the token has it already, and the entry, if it was joining
// the queue, rejoins only if it is not there. When that fails too, or the
// lost reply did not come in time (see askAgain), a clean-up gives back
// whatever the token may hold, and released says so: the token must not
// be used again. So does one whose caller left it before its reply came
// (see link.call): the clean-up follows the reply, when it comes (see
// lateAttempt).
func (b *base) attempt(ctx context.Context, s *driver.Script, keys []string, kind *holdKind, args attemptArgs) (g grant, released bool, err error) {
	argv := args.argv()
	var late func(any, error) // what gives back a reply its caller left (see link.call)
	if ctx.Done() != nil && !b.c.redis.keeps {
		late = func(reply any, err error) { b.lateAttempt(ctx, kind, keys, args, reply, err) }
	}
	g, unknown, left, err := b.grantOf(ctx, s, keys, kind, argv, late)
	switch {
	case left:
		return grant{}, true, err
	case !unknown:
		return g, false, err
	}
	if askAgain(err) {
		if args.op == "q" {
			args.op = "r"
		}
		var again error
		if g, _, _, again = b.grantOf(ctx, s, keys, kind, args.argv(), late); again == nil {
			return g, false, nil
		}
		err = errors.Join(err, again)
	}
	b.c.clean(ctx, b.giveBack(kind, keys, args.token))
	return grant{}, true, err
}

// lateAttempt gives back what an attempt with args got, whose caller left
// before its reply came: reply, or the error that came instead. A grant,
// or a reply that may have been one, is released; so is the waiter's
// place in the queue, unless it ends by its caller's deadline, which its
// expiry was cut to: that expiry counts from when Redis ran the attempt,
// which may have been long after it was cut (the attempt waited for a
// connection of a busy pool).
func (b *base) lateAttempt(ctx context.Context, kind *holdKind, keys []string, args attemptArgs, reply any, err error) {
	if err == nil {
		var g grant
		if g, err = parseGrant(reply, kind.fenced); err == nil && !g.ok {
			waits := args.op != "" || args.form == writerArgs && args.expiry > 0
			if !waits || endsBy(ctx, time.Duration(args.expiry)*time.Millisecond) {
				return
			}
		}
	} else if errors.Is(err, driver.ErrNotSent) || !mayHaveRun(true, err) {
		return
	}
	b.c.clean(context.WithoutCancel(ctx), b.giveBack(kind, keys, args.token))
}

// giveBack is the clean-up that gives back whatever token of kind may
// hold, and takes it out of the queue.
func (b *base) giveBack(kind *holdKind, keys []string, token string) cleanup {
	return cleanup{b: b, script: kind.release, keys: keys, args: []string{opLeave, token}}
}

// grantOf runs s and reads its grant of a hold of kind; unknown reports
// a reply lost after the script may have run, and left one its caller
// left (see link.call), which late gets. Its error is the call's (see
// gaveUp).
func (b *base) grantOf(ctx context.Context, s *driver.Script, keys []string, kind *holdKind, args []any, late func(any, error)) (g grant, unknown, left bool, err error) {
	reply, sent, left, err := b.c.redis.evalLate(ctx, b.cfg.commandTimeout, s, keys, late, args...)
	if left {
		return grant{}, true, true, err
	}
	if err == nil {
		g, err = parseGrant(reply, kind.fenced)
		if err == nil && g.ok && kind.fenced && !fromClock(g.fence) {
			err = fmt.Errorf("%w: a %s granted under fence %d, which Redis's clock cannot give", driver.ErrUnexpectedReply, kind.what, g.fence)
		}
		if err == nil {
			return g, false, false, nil
		}
	}
	return grant{}, mayHaveRun(sent, err), false, err
}
