package uncomplicated

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/settle"
)

// A base is what every lock of this package has: its Client, its options
// and its name; and how it reports errors and logs.
type base struct {
	c    *Client
	cfg  config
	name string
}

// background runs a release script s on keys with args: it releases what
// a lost acquisition, or a Do that ran out of time, may have left, or takes
// a waiter that gave up out of the queue (a release may have just handed
// it the lock). It runs in a goroutine that Close
// waits for, bounded by releaseTimeout; a Pool that panics there ends the
// clean-up, not the process. Once Close has begun, it runs in the caller's
// goroutine instead, which is then returning, bounded by the deadline of
// ctx as Do's release is.
func (b *base) background(ctx context.Context, s *script, keys []any, args ...string) {
	c := b.c
	c.mu.Lock()
	closing := c.closing
	if !closing {
		c.cleanups.Add(1)
	}
	c.mu.Unlock()
	if closing {
		rctx, cancel := releaseContext(ctx)
		defer cancel()
		_, _, _ = c.eval(rctx, s, keys, anys(args)...)
		return
	}
	go func() {
		defer c.cleanups.Done()
		defer func() { _ = recover() }()
		rctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		_, _, _ = c.eval(rctx, s, keys, anys(args)...)
	}()
}

// redisError wraps a failed call with the lock name; when ctx has ended,
// the cause is ctx's error rather than what the connection made of it.
func (b *base) redisError(ctx context.Context, err error) error {
	if cerr := b.ctxErr(ctx); cerr != nil {
		err = cerr
	}
	return fmt.Errorf("uncomplicated: %s: %w", b.name, err)
}

// gaveUp turns the error of an acquisition attempt that ctx cut short into
// an ErrNotObtained; other errors, and nil, pass.
func (b *base) gaveUp(ctx context.Context, err error) error {
	if cerr := b.ctxErr(ctx); err != nil && cerr != nil {
		return b.notObtained(cerr.Error(), cerr)
	}
	return err
}

// ctxErr is ctx.Err(), or DeadlineExceeded once ctx's deadline has passed:
// redigo sets the connection's deadline to ctx's, so its i/o timeout can
// come a moment before ctx's own timer fires.
func (b *base) ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !b.cfg.clock.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// notObtained is the error of a Lock that gave up; it matches
// ErrNotObtained and cause.
func (b *base) notObtained(why string, cause error) error {
	return &lockError{
		msg:  ErrNotObtained.Error() + ": " + b.name + ": " + why,
		errs: []error{ErrNotObtained, cause},
	}
}

func (b *base) logs(ctx context.Context) bool {
	return b.cfg.logger.Enabled(ctx, slog.LevelDebug)
}

// debug logs msg at Debug with the lock name; callers check logs first, so
// that a silent logger costs nothing.
func (b *base) debug(ctx context.Context, msg string, attrs ...slog.Attr) {
	b.cfg.logger.LogAttrs(ctx, slog.LevelDebug, msg, append([]slog.Attr{slog.String("lock", b.name)}, attrs...)...)
}

// lostError is the error of a hold found lost; it matches ErrLost and
// ErrNotHeld.
func (b *base) lostError(why string) error {
	return &lockError{
		msg:  ErrLost.Error() + ": " + b.name + ": " + why,
		errs: []error{ErrLost, ErrNotHeld},
	}
}

// enter takes sem, waiting while another goroutine of this process holds
// the lock (the Mutex, or the RWMutex as a writer).
func (b *base) enter(ctx context.Context, obs settle.Observer, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	if obs != nil {
		defer obs.Park(time.Time{}, "")() // no timer: only an Unlock wakes it
	}
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return b.notObtained(ctx.Err().Error(), ctx.Err())
	case <-b.c.done:
		return b.notObtained("client closed", ErrClosed)
	}
}

// flag runs a script that replies 1 or 0.
func (b *base) flag(ctx context.Context, s *script, keys []any, args ...any) (bool, error) {
	reply, _, err := b.c.eval(ctx, s, keys, args...)
	if err == nil {
		var ok bool
		if ok, err = parseFlag(reply); err == nil {
			return ok, nil
		}
	}
	return false, b.redisError(ctx, err)
}

// open reports, as an acquisition's error, a closed Client or an ended
// ctx: redigo may still send on an ended ctx.
func (b *base) open(ctx context.Context) error {
	if b.c.closed() {
		return b.notObtained("client closed", ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return b.notObtained(err.Error(), err)
	}
	return nil
}
