// Command ulock is the go-redis build of ulock, the operator's command line
// of package uncomplicated: the same commands as
// github.com/uncomplicated-mutex/uncomplicated/cmd/ulock, and besides
// redis:// and rediss:// it reaches Redis Cluster and Sentinel:
//
//	redis+cluster://[user:password@]host:port?addr=host2:port2&addr=...
//	redis+sentinel://[user:password@]host:port/db?master_name=NAME&addr=...
//
// and their rediss+ twins for TLS. "ulock help" documents every command,
// flag, exit code and output format, as docs/ulock.md does.
//
// It is in a module of its own, whose go.mod replaces the core module
// with the repository's copy: run it there with
//
//	cd goredis && go run ./cmd/ulock help
//
// go install refuses such a module until the modules are tagged.
package main

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/internal/ulockcli"
)

func main() {
	redis.SetLogger(quiet{}) // ulock's errors are one line each, and go-redis returns what it would log
	os.Exit(ulockcli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr, dialers))
}

// dialers reach Redis through go-redis, by the scheme of the URL.
var dialers = ulockcli.Dialers{
	"redis": dialNode, "rediss": dialNode,
	"redis+cluster": dialCluster, "rediss+cluster": dialCluster,
	"redis+sentinel": dialSentinel, "rediss+sentinel": dialSentinel,
}

// dialNode reaches one Redis node, as redis.ParseURL reads url.
func dialNode(url string, opts ...uncomplicated.Option) (*uncomplicated.Client, func(), error) {
	o, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, err
	}
	o.ContextTimeoutEnabled = true
	return open(redis.NewClient(o), opts)
}

// dialCluster reaches a Redis Cluster, as redis.ParseClusterURL reads url
// without the "+cluster" of its scheme.
func dialCluster(url string, opts ...uncomplicated.Option) (*uncomplicated.Client, func(), error) {
	o, err := redis.ParseClusterURL(plain(url))
	if err != nil {
		return nil, nil, err
	}
	o.ContextTimeoutEnabled = true
	return open(redis.NewClusterClient(o), opts)
}

// dialSentinel reaches the master that Sentinel watches, as
// redis.ParseFailoverURL reads url without the "+sentinel" of its scheme:
// the sentinels' address and credentials, master_name, and the master's
// credentials as username and password parameters.
func dialSentinel(url string, opts ...uncomplicated.Option) (*uncomplicated.Client, func(), error) {
	o, err := redis.ParseFailoverURL(plain(url))
	if err != nil {
		return nil, nil, err
	}
	if o.MasterName == "" {
		return nil, nil, errors.New("a Sentinel URL needs ?master_name=NAME")
	}
	o.ContextTimeoutEnabled = true
	return open(redis.NewFailoverClient(o), opts)
}

// quiet is a go-redis logger that drops what it is given.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// plain returns url with "+cluster" or "+sentinel" cut from its scheme.
func plain(url string) string {
	scheme, rest, _ := strings.Cut(url, "://")
	scheme, _, _ = strings.Cut(scheme, "+")
	return scheme + "://" + rest
}

// open returns the Client of rdb with opts, and what closes both.
func open(rdb redis.UniversalClient, opts []uncomplicated.Option) (*uncomplicated.Client, func(), error) {
	c := goredis.NewClient(rdb, opts...)
	return c, func() { c.Close(); rdb.Close() }, nil
}
