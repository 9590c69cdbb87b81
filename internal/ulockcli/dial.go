package ulockcli

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// A Dialer makes a Client of the Redis that url names, with opts as the
// defaults of its locks, and stop, which closes the Client and then what
// the Dialer opened for it. It should not talk to Redis: a Client
// connects when it is first used. An error means url is unusable, and
// ulock exits with the usage code.
type Dialer func(url string, opts ...uncomplicated.Option) (c *uncomplicated.Client, stop func(), err error)

// Dialers are the Dialers of a build of ulock, by URL scheme ("redis",
// "rediss", "redis+cluster"...).
type Dialers map[string]Dialer

// Redigo returns the Dialers of the core build: redis:// and rediss://
// URLs through redigo.
func Redigo() Dialers {
	return Dialers{"redis": DialRedigo, "rediss": DialRedigo}
}

// DialRedigo is the Dialer of redis:// and rediss:// URLs, with their user,
// password and database number, through a redigo Pool (redis.DialURL).
// A connection attempt ends after 5 s; a reply must come within 10 s.
func DialRedigo(rawURL string, opts ...uncomplicated.Option) (*uncomplicated.Client, func(), error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, errors.Unwrap(err) // the url.Error would show the password
	}
	if u.Host == "" {
		return nil, nil, errors.New("no host")
	}
	pool := &redis.Pool{
		MaxIdle:     4,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialURLContext(ctx, rawURL, redis.DialConnectTimeout(5*time.Second),
				redis.DialReadTimeout(10*time.Second), redis.DialWriteTimeout(5*time.Second))
		},
	}
	c := uncomplicated.NewClient(redigo.New(pool), opts...)
	return c, func() { c.Close(); pool.Close() }, nil
}

// DefaultURL is the Redis that ulock uses without --redis and REDIS_URL.
const DefaultURL = "redis://localhost:6379/0"

// goredisSchemes are the schemes that only the go-redis build speaks.
var goredisSchemes = []string{"redis+cluster", "rediss+cluster", "redis+sentinel", "rediss+sentinel"}

// goredisInstall tells how to run the go-redis build. It is a module of
// its own, goredis, whose go.mod points at the core module with a replace
// directive, which go install refuses; so until the modules are tagged it
// runs only from the repository's goredis directory.
const goredisInstall = "in the repository: cd goredis && go run ./cmd/ulock; " +
	"once the modules are tagged: go install github.com/uncomplicated-mutex/uncomplicated/goredis/cmd/ulock@latest"

// callTimeout bounds each call that ulock makes to Redis (a connection,
// then one command or script), in either build: uncomplicated's
// WithCommandTimeout, which ulock passes to every Client it dials. A
// command as a whole has no bound, so that list gets through a large
// keyspace; SIGINT, SIGTERM and SIGHUP end it.
const callTimeout = 10 * time.Second

// connect returns a Client of the Redis that rawURL names, by the Dialer
// of its scheme, with its locks under prefix, each call bounded by
// callTimeout, and opts, and the function that closes it.
func (s *session) connect(rawURL, prefix string, opts ...uncomplicated.Option) (*uncomplicated.Client, func(), error) {
	rawURL = withScheme(rawURL)
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, usagef("--redis: %v", errors.Unwrap(err)) // the url.Error would show the password
	}
	dial, ok := s.dialers[u.Scheme]
	switch {
	case !ok && slices.Contains(goredisSchemes, u.Scheme):
		return nil, nil, usagef("--redis: this ulock speaks %s; for %s:// use the go-redis build: %s",
			s.schemes(), u.Scheme, goredisInstall)
	case !ok:
		return nil, nil, usagef("--redis %s: unknown scheme %q; this ulock speaks %s", u.Redacted(), u.Scheme, s.schemes())
	}
	c, stop, err := dial(rawURL, append([]uncomplicated.Option{uncomplicated.WithPrefix(prefix),
		uncomplicated.WithCommandTimeout(callTimeout)}, opts...)...)
	if err != nil {
		return nil, nil, usagef("--redis %s: %v", u.Redacted(), err)
	}
	return c, stop, nil
}

// withScheme reads an address without a scheme ("127.0.0.1:6379",
// "localhost") as a redis:// URL, as redis-cli's -h and -p would name it.
func withScheme(rawURL string) string {
	if strings.Contains(rawURL, "://") {
		return rawURL
	}
	return "redis://" + rawURL
}

// schemes lists the URL schemes of the session's Dialers: "redis://, rediss://".
func (s *session) schemes() string {
	var all []string
	for scheme := range s.dialers {
		all = append(all, scheme+"://")
	}
	slices.Sort(all)
	return strings.Join(all, ", ")
}

// inspecting connects as r says, for status, list and release, and
// returns a ctx that SIGINT, SIGTERM and SIGHUP end; closeAll undoes both.
func (s *session) inspecting(ctx context.Context, r redisFlags) (context.Context, *uncomplicated.Client, func(), error) {
	c, stop, err := s.connect(r.url, r.prefix)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, stopSignals := interruptible(ctx)
	return ctx, c, func() { stopSignals(); stop() }, nil
}
