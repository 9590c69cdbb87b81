package uncomplicated

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"time"
)

// Every call the package makes to Redis goes through a driver: scripts,
// plain commands and the pub/sub connection that hears of hand-offs. The
// redigo driver (redigo.go) is the only code that knows a Redis client;
// other clients plug in through the public Driver (driver.go).
//
// Every call names the keys it touches, all of one lock and so, by their
// hash tag, of one cluster slot, so that a driver for Redis Cluster can
// route it; a server command about a node (INFO) names a key on that
// node. Subscriptions are per channel, and each channel carries its lock's
// hash tag, so that sharded pub/sub fits.

// A driver carries the package's calls to Redis: redigoDriver, or
// external for a Driver.
type driver interface {
	// eval runs s on keys with args, bounded by ctx and by the command
	// timeout d (0: by ctx alone). sent reports whether the script may
	// have reached Redis, even when err says the reply did not come. An
	// error reply of Redis is a *serverError.
	eval(ctx context.Context, d time.Duration, s *Script, keys []string, args ...any) (reply any, sent bool, err error)
	// evalWait runs s as eval does, then WAIT on the same connection (see
	// Driver.EvalWait).
	evalWait(ctx context.Context, d time.Duration, s *Script, keys []string, args []any, replicas int, timeout time.Duration) (reply any, acked int64, err error)
	// do runs one command about keys, bounded as eval is.
	do(ctx context.Context, d time.Duration, keys []string, cmd string, args ...any) (any, error)
	// canListen reports whether the driver can spare a connection to
	// listen on while calls need another.
	canListen() bool
	// listen opens a pub/sub connection, sharded or not (see
	// Driver.Listen), waiting no longer than ctx. It returns errNoPubSub
	// when the driver's connections cannot listen.
	listen(ctx context.Context, sharded bool) (Subscription, error)
}

// errNoPubSub is listen's error when the connections cannot listen: the
// Client's waiters then try again on their ticks only.
var errNoPubSub = errors.New("uncomplicated: connection cannot listen")

// newScript makes a Script of keys keys (scripts*.go).
func newScript(keys int, src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{src: src, sha: hex.EncodeToString(sum[:]), keys: keys}
}

// A serverError is an error reply of Redis. It wraps the driver's own
// error, for callers that look for it with errors.As.
type serverError struct {
	msg string
	err error
}

func (e *serverError) Error() string { return e.msg }
func (e *serverError) Unwrap() error { return e.err }

// loading reports Redis's LOADING error: the server restarted and is
// reading its data from disk.
func loading(err error) bool {
	var se *serverError
	return errors.As(err, &se) && strings.HasPrefix(se.msg, "LOADING ")
}

// mayHaveRun reports whether a script that failed with err after it was
// sent may have run: its reply was lost, rather than Redis refusing it or
// answering what cannot be read.
func mayHaveRun(sent bool, err error) bool {
	var se *serverError
	return sent && !errors.As(err, &se) && !errors.Is(err, ErrUnexpectedReply)
}

// askAgain reports whether an acquisition whose reply was lost with err is
// asked again at once. One that did not come in time (the command timeout,
// or the connection's read deadline) is not: asking a server that does not
// answer would make the caller wait as long again, so the acquisition
// fails and its possible hold is released in the background.
func askAgain(err error) bool {
	return !errors.Is(err, os.ErrDeadlineExceeded)
}
