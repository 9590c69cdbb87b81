package ulockcli

import (
	"cmp"
	"context"
	"strings"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"
)

// ulock elect: COMMAND runs while this process leads an Election, as a
// scheduler that must run on one machine of a fleet; with --again, the
// process campaigns anew whenever COMMAND exits.

// elect is ulock elect: it parses args, runs COMMAND while leading the
// Election NAME, and returns the exit code ("ulock help elect").
func (s *session) elect(ctx context.Context, args []string) int {
	fs := newFlags("elect")
	f := runFlags{election: true}
	f.add(fs, "takeover")
	again := fs.Bool("again", false, "")
	name, argv, opts, code := s.parseRun(fs, &f, args)
	switch {
	case opts == nil:
		return code
	case given(fs, "wait") && f.wait == 0:
		return s.usage("--wait 0 is for run; elect campaigns until --wait ends")
	case given(fs, "lease") && f.lease == 0:
		return s.usage("--lease 0: an election needs a lease, so that a dead leader makes way")
	}
	c, stop, err := s.connect(f.url, f.prefix)
	if err != nil {
		return s.fail(err)
	}
	defer stop()
	e, err := c.Election(name, opts...)
	if err == nil {
		err = reachable(ctx, c, e.Name())
	}
	if err != nil {
		return s.fail(err)
	}
	value := cmp.Or(f.label, limits.HostLabel())
	l := lockable{name: e.Name(), fenced: true, do: func(ctx context.Context, fn func(context.Context) error) error {
		return e.Lead(ctx, value, fn)
	}}
	for {
		h := s.hold(ctx, l, &f, argv)
		code := s.exit(h, c, l, &f)
		if h.after != nil && *again {
			s.say("got %s after COMMAND ended; stopped campaigning for %s", signalName(h.after), l.name)
			return exitSignal + signalNumber(h.after)
		}
		if !*again || !h.entered || h.why != nil || h.end.passed || h.end.err != nil || ctx.Err() != nil {
			return code
		}
	}
}

// electionPart begins the name of an Election's lock after the prefix
// and its colon (see uncomplicated.Client.Election).
const electionPart = "election:"

// markElections shows the locks of Elections as kind "election": their
// holder is the leader, and its label the leader's value.
func markElections(prefix string, locks []inspect.Info) {
	for i := range locks {
		if strings.HasPrefix(locks[i].Name, prefix+":"+electionPart) && locks[i].Kind == inspect.KindMutex {
			locks[i].Kind = kindElection
		}
	}
}

// kindElection is the kind status and list show for an Election's lock.
const kindElection inspect.Kind = "election"

// electionName returns the full name of the lock of the Election that
// NAME "election:<name>" names, and false for another NAME.
func electionName(c *uncomplicated.Client, name string) (string, bool, error) {
	rest, ok := strings.CutPrefix(name, electionPart)
	if !ok {
		return "", false, nil
	}
	e, err := c.Election(rest)
	if err != nil {
		return "", true, err
	}
	return e.Name(), true, nil
}
