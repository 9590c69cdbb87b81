package ulockcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// ulock run: COMMAND runs while ulock holds the lock, as flock(1) does on
// one machine.

// runFlags are what ulock run's flags set.
type runFlags struct {
	redisFlags
	kind         string
	timeout      time.Duration
	ticks        int
	lease        time.Duration
	policy       string
	wait         time.Duration
	conflictCode int
	lostCode     int
	grace        time.Duration
	label        string
	election     bool // ulock elect's: the lease is at most limits.ElectionLease unless given
}

// run is ulock run: it parses args, holds the lock while COMMAND runs,
// and returns the exit code ("ulock help run").
func (s *session) run(ctx context.Context, args []string) int {
	fs := newFlags("run")
	var f runFlags
	f.add(fs, "fail")
	fs.StringVar(&f.kind, "kind", "mutex", "")
	name, argv, opts, code := s.parseRun(fs, &f, args)
	if opts == nil {
		return code
	}
	c, stop, err := s.connect(f.url, f.prefix)
	if err != nil {
		return s.fail(err)
	}
	defer stop()
	l, err := newLockable(c, f.kind, name, opts)
	if err == nil {
		err = reachable(ctx, c, l.name)
	}
	if err != nil {
		return s.fail(err)
	}
	return s.exit(s.hold(ctx, l, &f, argv), c, l, &f)
}

// reachable checks that Redis answers before ulock waits for the lock
// name: a wrong address fails at once, while a wait under way rides out
// Redis restarting.
func reachable(ctx context.Context, c *uncomplicated.Client, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := inspect.Lock(ctx, c, name)
	return err
}

// add defines the flags that ulock run and ulock elect share on fs, with
// policy the default --policy.
func (f *runFlags) add(fs *flag.FlagSet, policy string) {
	f.redisFlags.add(fs)
	fs.DurationVar(&f.timeout, "timeout", limits.Timeout, "")
	fs.IntVar(&f.ticks, "ticks", limits.Ticks, "")
	fs.DurationVar(&f.lease, "lease", 0, "")
	fs.StringVar(&f.policy, "policy", policy, "")
	fs.DurationVar(&f.wait, "wait", -1, "")
	fs.IntVar(&f.conflictCode, "conflict-exit-code", exitConflict, "")
	fs.IntVar(&f.lostCode, "lost-exit-code", exitLost, "")
	fs.DurationVar(&f.grace, "grace", 10*time.Second, "")
	fs.StringVar(&f.label, "label", "", "")
}

// parseRun parses the command line of ulock run or elect, "NAME --
// COMMAND": it returns NAME, COMMAND and the options of the lock, or nil
// options and the exit code when ulock is done (help, or a mistake).
func (s *session) parseRun(fs *flag.FlagSet, f *runFlags, args []string) (name string, argv []string, opts []uncomplicated.Option, code int) {
	names, argv, done, code := s.parse(fs, args)
	if done {
		return "", nil, nil, code
	}
	switch {
	case len(names) == 0:
		return "", nil, nil, s.usage("missing NAME")
	case len(names) > 1:
		return "", nil, nil, s.usage(fmt.Sprintf("one NAME, then -- and COMMAND; got %q before --", names))
	case argv == nil:
		return "", nil, nil, s.usage("missing -- before COMMAND")
	case len(argv) == 0:
		return "", nil, nil, s.usage("missing COMMAND after --")
	}
	opts, err := f.options(fs)
	if err != nil {
		return "", nil, nil, s.fail(err)
	}
	return names[0], argv, opts, exitOK
}

// options checks the flags of ulock run and returns the options of its
// lock.
func (f *runFlags) options(fs *flag.FlagSet) ([]uncomplicated.Option, error) {
	takeOver := false
	switch f.policy {
	case "fail":
	case "takeover":
		takeOver = true
	default:
		return nil, usagef("--policy must be takeover or fail, not %q", f.policy)
	}
	lease := 2 * min(f.timeout, math.MaxInt64/2)
	switch {
	case given(fs, "lease"):
		lease = f.lease
	case f.election:
		lease = min(lease, limits.ElectionLease)
	}
	switch {
	case given(fs, "wait") && f.wait < 0:
		return nil, usagef("--wait must not be negative, got %v", f.wait)
	case f.grace < 0:
		return nil, usagef("--grace must not be negative, got %v", f.grace)
	case lease > 0 && refreshPeriod(f.timeout, lease) < time.Millisecond:
		return nil, usagef("--lease and --timeout must be at least 3ms (or --lease 0), got %v and %v", lease, f.timeout)
	case f.conflictCode < 0 || f.conflictCode > 255 || f.lostCode < 0 || f.lostCode > 255:
		return nil, usagef("exit codes must be 0 to 255, got %d and %d", f.conflictCode, f.lostCode)
	}
	opts := []uncomplicated.Option{uncomplicated.WithTimeout(f.timeout), uncomplicated.WithTicks(f.ticks),
		uncomplicated.WithLease(lease), uncomplicated.WithTakeOver(takeOver)}
	if lease > 0 {
		opts = append(opts, uncomplicated.WithAutoRefresh(refreshPeriod(f.timeout, lease)))
	}
	if given(fs, "label") {
		opts = append(opts, uncomplicated.WithHolderLabel(f.label))
	}
	return opts, nil
}

// refreshPeriod is how often ulock run renews its hold while COMMAND
// runs: a third of the lease, so that a Refresh or two may fail without
// the hold being lost; at most a third of the timeout, so that they may
// fail without a waiter finding the holder stuck either, however long the
// lease (a waiter's patience with a holder is at least the holder's own
// timeout, whatever the waiter's --timeout); and at least every
// maxRefreshPeriod, as a renewal is also when ulock finds its lock lost
// (broken by release --force, or taken over), and so how long COMMAND may
// run beside the next holder.
func refreshPeriod(timeout, lease time.Duration) time.Duration {
	return min(timeout/3, lease/3, maxRefreshPeriod)
}

// maxRefreshPeriod bounds refreshPeriod: with the default --timeout, 5m,
// a third would leave a broken lock's COMMAND running for up to 100 s.
const maxRefreshPeriod = 5 * time.Second

// A lockable is the lock of ulock run, whatever its kind: do holds it
// while fn runs, waiting as long as ctx lets it; try holds it while fn
// runs only if one attempt gets it, and reports whether one did.
type lockable struct {
	name   string
	fenced bool // its holds have fences; a read lock's do not
	do     func(context.Context, func(context.Context) error) error
	try    func(context.Context, func(context.Context) error) (bool, error)
	// handle gives the handle of the hold, while fn runs; nil for the
	// locks whose Do has none to give (a read lock, a permit).
	handle func() (string, error)
}

// newLockable returns the lock of --kind kind with the plain name name.
func newLockable(c *uncomplicated.Client, kind, name string, opts []uncomplicated.Option) (lockable, error) {
	switch {
	case kind == "mutex":
		m, err := uncomplicated.New(c, uncomplicated.Named(name), opts...)
		if err != nil {
			return lockable{}, err
		}
		return lockable{m.Name(), true, m.Do, m.TryDo, m.Handle}, nil
	case kind == "rwmutex-write" || kind == "rwmutex-read":
		rw, err := uncomplicated.NewRW(c, uncomplicated.Named(name), opts...)
		if err != nil {
			return lockable{}, err
		}
		if kind == "rwmutex-read" {
			return lockable{rw.Name(), false, rw.RDo, rw.TryRDo, nil}, nil
		}
		return lockable{rw.Name(), true, rw.Do, rw.TryDo, rw.Handle}, nil
	case strings.HasPrefix(kind, "semaphore:"):
		n, err := strconv.Atoi(strings.TrimPrefix(kind, "semaphore:"))
		if err != nil {
			return lockable{}, usagef("--kind %s: N must be a whole number", kind)
		}
		sem, err := uncomplicated.NewSemaphore(c, uncomplicated.Named(name), n, opts...)
		if err != nil {
			return lockable{}, err
		}
		return lockable{sem.Name(), true, sem.Do, sem.TryDo, nil}, nil
	}
	return lockable{}, usagef("--kind must be mutex, rwmutex-read, rwmutex-write or semaphore:N, not %q", kind)
}

// A holding is how ulock run's hold of its lock went.
type holding struct {
	obtained bool // false when TryDo found the lock taken
	entered  bool // fn ran: COMMAND ran, or failed to start
	end      ending
	// after is a signal that came once COMMAND had ended, while the hold
	// was given back, or nil: ulock elect --again stops on it rather than
	// lose it.
	after os.Signal
	err   error // Do's
	why   error // why the wait was given up; nil when it was not
}

// hold runs COMMAND, argv, while holding l: it waits for l as --wait
// says, with ulock's signals ending the wait, and once it holds l it
// passes them on to COMMAND.
func (s *session) hold(ctx context.Context, l lockable, f *runFlags, argv []string) holding {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, signals...)
	defer signal.Stop(sigs)
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	g := &gate{cancel: cancel}
	endWait := g.watch(sigs, f.wait)
	defer endWait()

	h := holding{obtained: true}
	fn := func(ctx context.Context) error {
		if !g.enter() {
			return errGaveUp
		}
		h.entered = true
		fence, _ := uncomplicated.FenceOf(ctx)
		handle := ""
		if l.handle != nil {
			handle, _ = l.handle()
		}
		ch := &child{argv: argv, env: childEnv(l.name, fence, l.fenced, handle), stdout: s.stdout, stderr: s.stderr, grace: f.grace}
		h.end = ch.run(ctx, sigs, endWait())
		return nil
	}
	if f.wait == 0 {
		h.obtained, h.err = l.try(wctx, fn)
	} else {
		h.err = l.do(wctx, fn)
	}
	endWait()
	h.why = g.reason()
	signal.Stop(sigs) // from here on, a signal ends ulock as it would
	select {
	case sig := <-sigs:
		h.after = sig
	default:
	}
	return h
}

// exit reports how h went, in one line on stderr unless COMMAND ran and
// its lock was released, and returns ulock's exit code.
func (s *session) exit(h holding, c *uncomplicated.Client, l lockable, f *runFlags) int {
	var sig signalled
	switch {
	case errors.As(h.why, &sig):
		s.say("gave up waiting for %s: got %s", l.name, signalName(sig.sig))
		return exitSignal + signalNumber(sig.sig)
	case h.why != nil:
		s.say("busy: %s%s; gave up after --wait %v", l.name, heldBy(c, l.name), f.wait)
		return f.conflictCode
	case errors.Is(h.err, uncomplicated.ErrStale):
		s.say("stale: %s%s: %v (--policy fail)", l.name, heldBy(c, l.name), h.err)
		return f.conflictCode
	case errors.Is(h.err, uncomplicated.ErrLost):
		what := "found when COMMAND had exited"
		if h.end.terminated {
			what = "COMMAND got SIGTERM"
		}
		s.say("lost %s while COMMAND ran; %s: %v", l.name, what, h.err)
		return f.lostCode
	case !h.entered && h.err != nil: // Redis failed, or ctx ended
		s.say("%v", h.err)
		return exitFailure
	case !h.obtained:
		s.say("busy: %s%s", l.name, heldBy(c, l.name))
		return f.conflictCode
	case h.end.err != nil:
		s.say("%v", h.end.err)
	case h.err != nil: // the release failed; the lease frees the lock
		s.say("releasing %s: %v", l.name, h.err)
	}
	return h.end.code
}

// heldBy describes who holds the lock name, as " held by web-3:4127 for
// 12s", or "" when Redis does not tell.
func heldBy(c *uncomplicated.Client, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	info, err := inspect.Lock(ctx, c, name)
	if err != nil || !info.Held() {
		return ""
	}
	who := " held by " + holderCell(info)
	if d, ok := heldFor(info, info.Holders[0]); ok {
		who += " for " + short(d)
	}
	return who
}

// childEnv is COMMAND's environment: ulock's, with ULOCK_NAME,
// ULOCK_FENCE unless the hold has no fence, and ULOCK_HANDLE if it has one.
func childEnv(name string, fence uint64, fenced bool, handle string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "ULOCK_NAME=") || strings.HasPrefix(kv, "ULOCK_FENCE=") || strings.HasPrefix(kv, "ULOCK_HANDLE=")
	})
	env = append(env, "ULOCK_NAME="+name)
	if fenced {
		env = append(env, "ULOCK_FENCE="+strconv.FormatUint(fence, 10))
	}
	if handle != "" {
		env = append(env, "ULOCK_HANDLE="+handle)
	}
	return env
}
