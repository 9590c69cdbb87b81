// Command ulock shows uncomplicated at work.
//
//	go run ./cmd/ulock demo [-policy takeover|fail] [flags]
//
// The demo runs workers that contend for a few orders' locks; one of them
// hangs while holding a lock and is found stale by the others. Without
// REDIS_URL it runs on an embedded in-memory Redis; with REDIS_URL (such as
// redis://localhost:6379/0) it uses that server.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: ulock <command> [flags]

commands:
  demo    workers contend for orders' locks; one hangs and is found stale
          (run "ulock demo -h" for its flags)
`

// run is main with its inputs and outputs passed in; it returns the exit
// code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "demo":
		return runDemo(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "ulock: unknown command %q\n\n%s", args[0], usage)
	return 2
}
