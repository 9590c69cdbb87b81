// Package ulockcli is the ulock command, the operator's command line of
// package uncomplicated: run a command under a lock, see what locks there
// are and who holds them, break a stuck one, and the demo. Both builds of
// ulock call Main; they differ only in the Dialers they pass, that is in
// the Redis client library: cmd/ulock uses redigo (one Redis node),
// goredis/cmd/ulock go-redis (one node, Cluster and Sentinel).
//
// It uses only the exported API of package uncomplicated.
package ulockcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// Exit codes of ulock, besides those that ulock run passes on from its
// COMMAND. "ulock help" documents them.
const (
	exitOK      = 0
	exitFailure = 1 // a runtime failure: Redis unreachable or failing
	exitUsage   = 2 // a mistake in the command line, or release without --force
	// exitConflict is the default of run's --conflict-exit-code:
	// EX_TEMPFAIL of sysexits.h, "try again later", as flock -n uses 1.
	exitConflict = 75
	// exitLost is the default of run's --lost-exit-code: the lock was lost
	// while COMMAND ran. It follows exitConflict, and no common tool
	// gives it a meaning of its own.
	exitLost     = 76
	exitNotExec  = 126 // COMMAND is not executable, as sh(1) says
	exitNotFound = 127 // COMMAND was not found, as sh(1) says
	exitSignal   = 128 // plus the number of the signal, as sh(1) says
)

// A command is one of ulock's commands: it parses args, does its work and
// returns the exit code.
type command struct {
	name string
	run  func(s *session, ctx context.Context, args []string) int
}

// commands are ulock's commands, in the order "ulock help" lists them.
var commands = []command{
	{"run", (*session).run},
	{"acquire", (*session).acquire},
	{"refresh", (*session).refresh},
	{"elect", (*session).elect},
	{"status", (*session).status},
	{"list", (*session).list},
	{"release", (*session).release},
	{"demo", (*session).demo},
	{"help", (*session).help},
}

// Main runs ulock with args (os.Args[1:]), writing to stdout and stderr,
// reaching Redis through dialers, and returns the exit code. It never
// panics: a panic becomes a one-line error and exit code 1.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, dialers Dialers) (code int) {
	s := &session{stdout: stdout, stderr: stderr, dialers: dialers, cmd: "ulock"}
	defer func() {
		if r := recover(); r != nil {
			s.say("internal error: %v", r)
			code = exitFailure
		}
	}()
	if len(args) == 0 {
		return s.usage("no command given (run, acquire, refresh, elect, status, list, release, demo or help)")
	}
	switch args[0] {
	case "-h", "-help", "--help":
		return s.help(ctx, nil)
	}
	for _, c := range commands {
		if c.name == args[0] {
			s.cmd = "ulock " + c.name
			return c.run(s, ctx, args[1:])
		}
	}
	return s.usage(fmt.Sprintf("unknown command %q", args[0]))
}

// A session is one run of ulock: where it writes, how it reaches Redis,
// and the command being run, which starts its messages.
type session struct {
	stdout, stderr io.Writer
	dialers        Dialers
	cmd            string // "ulock run", or "ulock" before a command is known
}

// say writes one line to stderr, starting with the command.
func (s *session) say(format string, args ...any) {
	fmt.Fprintf(s.stderr, "%s: %s\n", s.cmd, oneLine(fmt.Sprintf(format, args...)))
}

// usage reports a mistake in the command line and returns exitUsage.
func (s *session) usage(msg string) int {
	topic := strings.TrimPrefix(strings.TrimPrefix(s.cmd, "ulock"), " ")
	s.say("%s; run 'ulock help%s'", msg, strings.TrimRight(" "+topic, " "))
	return exitUsage
}

// fail reports err and returns its exit code: exitUsage for a mistake in
// the command line (a usageError, or what the library rejects as invalid
// input), exitFailure for anything else.
func (s *session) fail(err error) int {
	var u usageError
	if errors.As(err, &u) || errors.Is(err, uncomplicated.ErrInvalidArgument) {
		return s.usage(err.Error())
	}
	s.say("%v", err)
	return exitFailure
}

// A usageError is a mistake in the command line: ulock exits with
// exitUsage.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// oneLine joins the lines of msg (errors.Join writes one error a line),
// leaving out repeated ones, so that every message of ulock is one line.
func oneLine(msg string) string {
	var lines []string
	for _, line := range strings.Split(msg, "\n") {
		if line = strings.TrimSpace(line); line != "" && !slices.Contains(lines, line) {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "; ")
}
