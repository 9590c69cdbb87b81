// Command ulock is the operator's command line of package uncomplicated:
// it runs a command while holding a lock in Redis (flock(1) for a fleet)
// or while leading an election, shows what locks there are and who holds
// them, breaks a stuck one, and runs a demo that needs no Redis.
//
//	ulock run [flags] NAME -- COMMAND [ARG...]
//	ulock elect [flags] [--again] NAME -- COMMAND [ARG...]
//	ulock status [--json] NAME...
//	ulock list [--json] [--match GLOB] [--limit N]
//	ulock release --force NAME
//	ulock demo
//	ulock help [COMMAND]
//
// This build reaches Redis through redigo: redis:// and rediss:// URLs. For
// Redis Cluster and Sentinel, use the go-redis build,
// github.com/uncomplicated-mutex/uncomplicated/goredis/cmd/ulock. "ulock
// help" documents every command, flag, exit code and output format, as
// docs/ulock.md does.
package main

import (
	"context"
	"os"

	"github.com/uncomplicated-mutex/uncomplicated/internal/ulockcli"
)

func main() {
	os.Exit(ulockcli.Main(context.Background(), os.Args[1:], os.Stdout, os.Stderr, ulockcli.Redigo()))
}
