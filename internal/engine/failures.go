package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
)

// Failures and logging: the errors a lock returns, each naming the lock
// and matching its sentinels, and its log records.

// redisError wraps a failed call with the lock name; when ctx has ended,
// the cause is ctx's error rather than what the connection made of it.
func (b *base) redisError(ctx context.Context, err error) error {
	if cerr := b.ctxErr(ctx); cerr != nil {
		err = cerr
	}
	return b.c.newError(b.name, "uncomplicated: "+b.name+": "+err.Error(), err)
}

// gaveUp is the error of an acquisition that ended without the lock, for
// err, what ended it: a call to Redis that failed, or Close, or ctx ending
// while a call to Redis was under way or, when busy says what held the
// lock (see waiter.busy), while the waiter slept. It matches
// ErrNotObtained and its cause: the Redis error, ErrClosed or ctx's
// error. A nil err stays nil.
func (b *base) gaveUp(ctx context.Context, err error, busy string) error {
	cerr := b.ctxErr(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrClosed):
		return b.notObtained("client closed", ErrClosed)
	case cerr != nil && busy != "":
		return b.c.newError(b.name, ErrNotObtained.Error()+": "+busy+": "+cerr.Error(), cerr, ErrNotObtained)
	case cerr != nil:
		return b.notObtained("ctx ended waiting for Redis: "+cerr.Error(), cerr)
	}
	return b.notObtained(err.Error(), err)
}

// failing is the error of a wait that ended, with err, while Redis was
// failing with last: it says what Redis last answered, and matches
// ErrNotObtained, ctx's error and last.
func (b *base) failing(ctx context.Context, err, last error) error {
	cerr := b.ctxErr(ctx)
	if cerr == nil || errors.Is(err, ErrClosed) {
		return b.gaveUp(ctx, err, "")
	}
	return b.c.newError(b.name, ErrNotObtained.Error()+": "+b.name+": ctx ended while Redis failed ("+last.Error()+"): "+cerr.Error(),
		cerr, ErrNotObtained, last)
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
	return b.c.newError(b.name, ErrNotObtained.Error()+": "+b.name+": "+why, cause, ErrNotObtained)
}

// Log records: Debug for the course of a lock (acquired, waiting,
// released); Warn for what an operator should see (a stale holder, a
// take-over, a hold lost, a failed call to Redis); Info for LOADING, which
// Lock waits out. Each has the lock name, and those about a hold its
// fence.

// logs reports whether records at level go anywhere, so that a silent
// logger costs nothing.
func (b *base) logs(ctx context.Context, level slog.Level) bool {
	return b.cfg.logger.Enabled(ctx, level)
}

// log logs msg at level with the lock name; callers check logs first.
func (b *base) log(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	b.cfg.logger.LogAttrs(ctx, level, msg, append([]slog.Attr{slog.String("lock", b.name)}, attrs...)...)
}

// logWaiting records that an acquisition of what ("lock", "permit", ...)
// found it taken by a holder it had not seen.
func (b *base) logWaiting(ctx context.Context, what string) {
	if b.logs(ctx, slog.LevelDebug) {
		b.log(ctx, slog.LevelDebug, what+" busy, waiting", slog.Duration("timeout", b.cfg.timeout))
	}
}

// staleError is the error, logged, of an acquisition of what that found
// its blockers (who: "one holder token", "the same holders") stuck for age
// without WithTakeOver.
func (b *base) staleError(ctx context.Context, what, who string, age time.Duration) error {
	if b.logs(ctx, slog.LevelWarn) {
		b.log(ctx, slog.LevelWarn, what+" stale", slog.Duration("age", age))
	}
	return b.notObtained(fmt.Sprintf("stale: %s for %v", who, age.Round(time.Millisecond)), ErrStale)
}

// logTakeOver records a take-over of what, under fence, that evicted
// holders stuck for age.
func (b *base) logTakeOver(ctx context.Context, what string, age time.Duration, fence uint64, evicted int) {
	if b.logs(ctx, slog.LevelWarn) {
		b.log(ctx, slog.LevelWarn, what+" taken over", slog.Uint64("fence", fence), slog.Duration("age", age), slog.Int("evicted", evicted))
	}
}

// logAcquired records a new hold of what.
func (b *base) logAcquired(ctx context.Context, what string, fence uint64, attrs ...slog.Attr) {
	if b.logs(ctx, slog.LevelDebug) {
		b.log(ctx, slog.LevelDebug, what+" acquired", append([]slog.Attr{slog.Uint64("fence", fence)}, attrs...)...)
	}
}

// logOrphan records the release of a hold of what that the Client had
// lost track of: its release, or the reply to its acquisition, was lost.
func (b *base) logOrphan(ctx context.Context, what string) {
	if b.logs(ctx, slog.LevelWarn) {
		b.log(ctx, slog.LevelWarn, what+" released: this Client's release or acquisition reply was lost")
	}
}

// logReleased records the release of a hold of what.
func (b *base) logReleased(ctx context.Context, what string, fence uint64, attrs ...slog.Attr) {
	if b.logs(ctx, slog.LevelDebug) {
		b.log(ctx, slog.LevelDebug, what+" released", append([]slog.Attr{slog.Uint64("fence", fence)}, attrs...)...)
	}
}

// lostError is the error of a hold found lost; it matches ErrLost and
// ErrNotHeld.
func (b *base) lostError(why string) error {
	return b.c.newError(b.name, ErrLost.Error()+": "+b.name+": "+why, ErrLost, ErrNotHeld)
}

// notHeld is the error of a call about a hold when there is none: why
// says so.
func (b *base) notHeld(why string) error {
	return b.c.newError(b.name, ErrNotHeld.Error()+": "+b.name+": "+why, ErrNotHeld)
}

// afterClose adds ErrClosed to the error of a release after Client.Close,
// which still releases.
func (b *base) afterClose(err error) error {
	if b.c.closed() {
		err = errors.Join(b.c.newError(b.name, ErrClosed.Error()+": "+b.name+": released after Close", ErrClosed), err)
	}
	return err
}

// logFailure logs a failed call at Warn, or at Info for LOADING (a
// restarted Redis reading its data, which Lock waits out), unless the
// caller's ctx ended it: the caller chose that.
func (b *base) logFailure(ctx context.Context, err error) {
	if b.ctxErr(ctx) != nil {
		return
	}
	level := slog.LevelWarn
	if link.Loading(err) {
		level = slog.LevelInfo
	}
	if b.logs(ctx, level) {
		b.log(ctx, level, "Redis call failed", slog.Any("error", err))
	}
}

// logFailed logs a failed attempt of a wait as logFailure does, at most
// once a second for the lock in its Client, however many wait for it.
func (b *base) logFailed(ctx context.Context, err error) {
	if b.c.failures.allow(b.name, b.cfg.clock.Now()) {
		b.logFailure(ctx, err)
	}
}

// A logLimit lets a lock's failed attempts be logged once a second.
type logLimit struct {
	mu   sync.Mutex
	last map[string]time.Time // by lock name, when one was last logged
}

// maxLogLimits bounds the locks a logLimit remembers at once.
const maxLogLimits = 1024

// allow reports whether a failure of the lock name may be logged at now,
// and if so records it.
func (l *logLimit) allow(name string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.last[name]; ok && now.Sub(t) < time.Second && !now.Before(t) {
		return false
	}
	if l.last == nil || len(l.last) >= maxLogLimits { // forgetting costs a record more at most
		l.last = map[string]time.Time{}
	}
	l.last[name] = now
	return true
}
