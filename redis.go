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
// redigo driver (redigo.go) is the only code that knows a Redis client.
//
// Every call names the keys it touches, all of one lock and so, by their
// hash tag, of one cluster slot, so that a driver for Redis Cluster can
// route it; a server command such as INFO names none. Subscriptions are
// per channel, and each channel belongs to one lock, so that sharded
// pub/sub fits.

// A driver carries the package's calls to Redis.
type driver interface {
	// eval runs s on keys with args, bounded by ctx and by the command
	// timeout d (0: by ctx alone). sent reports whether the script may
	// have reached Redis, even when err says the reply did not come. An
	// error reply of Redis is a *serverError.
	eval(ctx context.Context, d time.Duration, s *script, keys []string, args ...any) (reply any, sent bool, err error)
	// do runs one command about keys, bounded as eval is.
	do(ctx context.Context, d time.Duration, keys []string, cmd string, args ...any) (any, error)
	// canListen reports whether the driver can spare a connection to
	// listen on while calls need another.
	canListen() bool
	// listen opens a pub/sub connection, waiting no longer than ctx. It
	// returns errNoPubSub when the driver's connections cannot listen.
	listen(ctx context.Context) (subscription, error)
}

// A subscription is a connection that listens on channels. subscribe,
// unsubscribe and ping send their command and return; receive reads what
// comes back. A failure of one shows on receive.
type subscription interface {
	subscribe(channel string)
	unsubscribe(channel string)
	ping()
	// receive returns the next message or confirmation, skipping the
	// replies to ping, until ctx ends or the connection fails.
	receive(ctx context.Context) (event, error)
	// close gives the connection back; it is not reused for calls.
	close()
}

// An event is what a subscription receives: a message on channel, or the
// confirmation of a subscribe or unsubscribe of channel.
type event struct {
	channel string
	message bool
	data    []byte // the message's
}

// errNoPubSub is listen's error when the connections cannot listen: the
// Client's waiters then try again on their ticks only.
var errNoPubSub = errors.New("uncomplicated: connection cannot listen")

// A script is a Lua script (scripts*.go), with its SHA-1 for EVALSHA and
// the number of its keys.
type script struct {
	src  string
	sha  string
	keys int
}

func newScript(keys int, src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:]), keys: keys}
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
