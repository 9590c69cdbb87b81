// Package limits holds the defaults and bounds of package uncomplicated
// that its own commands (ulock) and tests need too, so that each is
// written once. Users read them in the options' documentation.
package limits

import (
	"os"
	"strconv"
	"sync"
	"time"
)

// The defaults of the options of package uncomplicated.
const (
	Timeout        = 5 * time.Minute  // WithTimeout
	Ticks          = 100              // WithTicks
	Prefix         = "lock"           // WithPrefix
	CommandTimeout = 10 * time.Second // WithCommandTimeout
	// ElectionLease is an Election's lease when no WithLease gives one, if
	// shorter than twice the timeout: a dead or frozen leader makes way
	// within it.
	ElectionLease = 15 * time.Second
)

// Label bounds the length of a holder label (WithHolderLabel).
const Label = 64

// HostLabel is the default holder label, and ulock elect's default value:
// the host name and the process ID, "web-3:4127", read once.
var HostLabel = sync.OnceValue(func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	pid := ":" + strconv.Itoa(os.Getpid())
	return host[:min(len(host), Label-len(pid))] + pid
})

// Permits bounds the permits of a Semaphore: a waiter's every attempt
// reads the tokens of all holders.
const Permits = 10000

// Inspected bounds the holders and the waiters that inspect.Lock reports
// of one lock.
const Inspected = 100

// ListLimit is the number of locks inspect.List returns when its limit is 0.
const ListLimit = 1000
