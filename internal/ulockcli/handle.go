package ulockcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"
)

// ulock acquire, refresh --handle and release --handle: a lock held across
// the steps of a shell script, or handed from one process to another (see
// uncomplicated.Resume).

// acquire is ulock acquire: it waits for the lock NAME, prints its handle
// on one line and exits leaving it held.
func (s *session) acquire(ctx context.Context, args []string) int {
	fs := newFlags("acquire")
	var r redisFlags
	r.add(fs)
	wait := fs.Duration("wait", -1, "")
	lease := fs.Duration("lease", 2*limits.Timeout, "")
	names, rest, done, code := s.parse(fs, args)
	if done {
		return code
	}
	names = append(names, rest...)
	switch {
	case len(names) != 1:
		return s.usage(fmt.Sprintf("one NAME, got %q", names))
	case *lease <= 0:
		return s.usage(fmt.Sprintf("--lease must be above 0, got %v: a lock that no process holds needs one", *lease))
	case given(fs, "wait") && *wait < 0:
		return s.usage(fmt.Sprintf("--wait must not be negative, got %v", *wait))
	}
	c, stop, err := s.connect(r.url, r.prefix)
	if err != nil {
		return s.fail(err)
	}
	defer stop()
	m, err := uncomplicated.New(c, uncomplicated.Named(names[0]), uncomplicated.WithLease(*lease))
	if err == nil {
		err = reachable(ctx, c, m.Name())
	}
	if err != nil {
		return s.fail(err)
	}
	ctx, stopSignals := interruptible(ctx)
	defer stopSignals()
	ok, err := s.lockFor(ctx, m, *wait)
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded):
		s.say("busy: %s%s; gave up after --wait %v", m.Name(), heldBy(c, m.Name()), *wait)
		return exitConflict
	case err != nil:
		return s.fail(err)
	case !ok:
		s.say("busy: %s%s", m.Name(), heldBy(c, m.Name()))
		return exitConflict
	}
	// A hold handed over is a claim of a second until its holder refreshes
	// it: take the whole lease before this process leaves it.
	if err := m.Refresh(ctx); err != nil {
		return s.fail(err)
	}
	handle, err := m.Handle()
	if err != nil {
		return s.fail(err)
	}
	fmt.Fprintln(s.stdout, handle)
	return exitOK
}

// lockFor locks m, waiting up to wait (0: one attempt; below 0: until ctx
// ends).
func (s *session) lockFor(ctx context.Context, m *uncomplicated.Mutex, wait time.Duration) (bool, error) {
	if wait == 0 {
		return m.TryLock(ctx)
	}
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	return true, m.Lock(ctx)
}

// refresh is ulock refresh --handle H: it restarts the lease of the hold H
// names. The handle stays good.
func (s *session) refresh(ctx context.Context, args []string) int {
	return s.withHandle(ctx, "refresh", args, func(ctx context.Context, m *uncomplicated.Mutex) error {
		return m.Refresh(ctx)
	})
}

// releaseHandle is ulock release --handle H: it releases the hold H names,
// and no other.
func (s *session) releaseHandle(ctx context.Context, r redisFlags, handle string) int {
	return s.onHandle(ctx, r, handle, func(ctx context.Context, m *uncomplicated.Mutex) error {
		return m.Unlock(ctx)
	})
}

// withHandle parses the flags of a command that acts on the hold --handle
// (or $ULOCK_HANDLE) names, and runs act on it.
func (s *session) withHandle(ctx context.Context, cmd string, args []string, act func(context.Context, *uncomplicated.Mutex) error) int {
	fs := newFlags(cmd)
	var r redisFlags
	r.add(fs)
	handle := fs.String("handle", os.Getenv("ULOCK_HANDLE"), "")
	names, rest, done, code := s.parse(fs, args)
	if done {
		return code
	}
	if len(names)+len(rest) > 0 {
		return s.usage(fmt.Sprintf("no NAME: the handle names the lock; got %q", append(names, rest...)))
	}
	return s.onHandle(ctx, r, *handle, act)
}

// onHandle resumes the hold handle names and runs act on it: exit 76 when
// the hold has ended.
func (s *session) onHandle(ctx context.Context, r redisFlags, handle string, act func(context.Context, *uncomplicated.Mutex) error) int {
	if handle == "" {
		return s.usage("missing --handle (or $ULOCK_HANDLE): the line ulock acquire printed")
	}
	ctx, c, closeAll, err := s.inspecting(ctx, r)
	if err != nil {
		return s.fail(err)
	}
	defer closeAll()
	m, err := uncomplicated.Resume(ctx, c, handle)
	if err == nil {
		err = act(ctx, m)
	}
	if errors.Is(err, uncomplicated.ErrNotHeld) {
		s.say("the handle's hold has ended: expired, released or taken over")
		return exitLost
	}
	if err != nil {
		return s.fail(err)
	}
	return exitOK
}
