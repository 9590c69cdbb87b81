package ulockcli

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/uncomplicated-mutex/uncomplicated/inspect"
)

// ulock release --force: break a stuck lock.

// release is ulock release: with --force it breaks the lock that args
// name and shows what it removed; without, it refuses.
func (s *session) release(ctx context.Context, args []string) int {
	fs := newFlags("release")
	var r redisFlags
	r.add(fs)
	force := fs.Bool("force", false, "")
	handle := fs.String("handle", os.Getenv("ULOCK_HANDLE"), "")
	names, rest, done, code := s.parse(fs, args)
	if done {
		return code
	}
	names = append(names, rest...)
	switch {
	case *handle != "" && len(names) == 0 && !*force:
		return s.releaseHandle(ctx, r, *handle)
	case given(fs, "handle") && (len(names) > 0 || *force):
		return s.usage("--handle releases the hold it names: no NAME, no --force")
	case len(names) == 0:
		return s.usage("missing NAME")
	case len(names) > 1:
		return s.usage(fmt.Sprintf("one NAME at a time, got %q", names))
	case !*force:
		return s.usage(fmt.Sprintf("refusing to break %s without --force: its holder may still be running, "+
			"and the next holder would run beside it (see 'ulock status %s')", names[0], names[0]))
	}
	ctx, c, closeAll, err := s.inspecting(ctx, r)
	if err != nil {
		return s.fail(err)
	}
	defer closeAll()
	full, err := fullName(c, r.prefix, names[0])
	if err != nil {
		return s.fail(err)
	}
	was, err := inspect.ForceRelease(ctx, c, full)
	if err != nil {
		return s.failIn(ctx, err, fmt.Sprintf("; %s may or may not be broken: see 'ulock status %s'", full, full))
	}
	if err := broke(s, was); err != nil {
		return s.fail(err)
	}
	return exitOK
}

// broke prints what ForceRelease removed: the lock as it was, and a line
// per holder removed.
func broke(s *session, was inspect.Info) error {
	if !was.Held() {
		_, err := fmt.Fprintf(s.stdout, "%s was free: nothing removed\n", was.Name)
		return err
	}
	what := string(was.Kind)
	if was.Fence > 0 {
		what += fmt.Sprintf(", fence %d", was.Fence)
	}
	fmt.Fprintf(s.stdout, "released %s (%s): removed %d %s\n",
		was.Name, what, len(was.Holders), plural(len(was.Holders), "holder", "holders"))
	tw := tabwriter.NewWriter(s.stdout, 0, 4, 2, ' ', 0)
	for _, h := range was.Holders {
		cells := []string{"", h.Role, cmp.Or(h.Label, "(no label)"), "fence -", "held for ?"}
		if h.Fence > 0 {
			cells[3] = fmt.Sprintf("fence %d", h.Fence)
		}
		if d, ok := heldFor(was, h); ok {
			cells[4] = "held for " + short(d)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := len(was.Waiters); n > 0 {
		fmt.Fprintf(s.stdout, "%d %s queued: the next holder gets a higher fence\n", n, plural(n, "waiter", "waiters"))
	}
	return nil
}
