package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
	"github.com/uncomplicated-mutex/uncomplicated/internal/sentinel"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// One attempt in Redis: an acquiring script's call, what it replied, and
// what a call whose reply was lost, or came after its caller left, gives
// back. Attempts take their turn for the driver's connections apart from
// the releases (see link.Attempting).

// attempt runs an acquiring script with args (see wire.AttemptArgs). When its
// reply is lost after it may have run, it runs it again: the scripts reply
// the hold when the token has it already, and the entry, if it was joining
// the queue, rejoins only if it is not there. When that fails too, or the
// lost reply did not come in time (see askAgain), a clean-up gives back
// whatever the token may hold, and released says so: the token must not
// be used again. So does one whose caller left it before its reply came
// (see link.call): the clean-up follows the reply, when it comes (see
// lateAttempt).
func (b *base) attempt(ctx context.Context, s *driver.Script, keys []string, kind *holdKind, args wire.AttemptArgs) (g wire.Grant, released bool, err error) {
	// Its turn ends when its call does: on return, or with the reply that
	// its caller left behind.
	done, err := b.c.redis.Attempting(ctx, b.c.done, sentinel.ErrClosed)
	if err != nil {
		return wire.Grant{}, false, err
	}
	argv := args.Argv()
	var late func(any, error) // what gives back a reply its caller left (see link.call)
	if ctx.Done() != nil && !b.c.redis.Keeps() {
		late = func(reply any, err error) {
			done()
			b.lateAttempt(ctx, kind, keys, args, reply, err)
		}
	}
	g, unknown, left, err := b.grantOf(ctx, s, args.Keys(keys), kind, argv, late)
	if !left {
		defer done()
	}
	switch {
	case left:
		return wire.Grant{}, true, err
	case !unknown:
		return g, false, err
	}
	if link.AskAgain(err) {
		if args.Op == wire.OpJoin {
			args.Op = wire.OpRejoin
		}
		var again error
		if g, _, _, again = b.grantOf(ctx, s, args.Keys(keys), kind, args.Argv(), late); again == nil {
			return g, false, nil
		}
		err = errors.Join(err, again)
	}
	giveBack := b.giveBack(kind, keys, args.Token)
	b.c.clean(ctx, giveBack)
	if b.c.redis.Keeps() && ctx.Err() != nil {
		// The driver dropped the call when ctx ended, but what it had sent
		// may still run, after the clean-up, on another of its connections:
		// give back once more when it surely has.
		b.c.cleanLater(giveBack)
	}
	return wire.Grant{}, true, err
}

// lateAttempt gives back what an attempt with args got, whose caller left
// before its reply came: reply, or the error that came instead. A grant,
// or a reply that may have been one, is released; so is the waiter's
// place in the queue, unless it ends by its caller's deadline, which its
// expiry was cut to: that expiry counts from when Redis ran the attempt,
// which may have been long after it was cut (the attempt waited for a
// connection of a busy pool).
func (b *base) lateAttempt(ctx context.Context, kind *holdKind, keys []string, args wire.AttemptArgs, reply any, err error) {
	if err == nil {
		var g wire.Grant
		if g, err = wire.ParseGrant(reply, kind.fenced); err == nil && !g.OK {
			waits := args.Op != "" || args.Form == wire.WriterArgs && args.Expiry > 0
			if !waits || link.EndsBy(ctx, time.Duration(args.Expiry)*time.Millisecond) {
				return
			}
		}
	} else if errors.Is(err, driver.ErrNotSent) || !link.MayHaveRun(true, err) {
		return
	}
	b.c.clean(context.WithoutCancel(ctx), b.giveBack(kind, keys, args.Token))
}

// giveBack is the clean-up that gives back whatever token of kind may
// hold, and takes it out of the queue.
func (b *base) giveBack(kind *holdKind, keys []string, token string) cleanup {
	return cleanup{b: b, script: kind.release, keys: keys, args: []string{wire.OpLeave, token}}
}

// grantOf runs s and reads its grant of a hold of kind; unknown reports
// a reply lost after the script may have run, and left one its caller
// left (see link.call), which late gets. Its error is the call's (see
// gaveUp).
func (b *base) grantOf(ctx context.Context, s *driver.Script, keys []string, kind *holdKind, args []any, late func(any, error)) (g wire.Grant, unknown, left bool, err error) {
	reply, sent, left, err := b.c.redis.EvalLate(ctx, b.cfg.CommandTimeout, s, keys, late, args...)
	if left {
		return wire.Grant{}, true, true, err
	}
	if err == nil {
		g, err = wire.ParseGrant(reply, kind.fenced)
		if err == nil && g.OK && kind.fenced && !wire.FromClock(g.Fence) {
			err = fmt.Errorf("%w: a %s granted under fence %d, which Redis's clock cannot give", driver.ErrUnexpectedReply, kind.what, g.Fence)
		}
		if err == nil {
			return g, false, false, nil
		}
	}
	return wire.Grant{}, link.MayHaveRun(sent, err), false, err
}
