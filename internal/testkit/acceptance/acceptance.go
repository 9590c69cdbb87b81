// Package acceptance holds the acceptance tests of the public API on a real
// Redis deployment: what every deployment must do alike, whichever
// constructor reaches it (uncomplicated.NewClient over a redigo Pool,
// goredis.NewClient over go-redis) and whatever it is (a single node,
// Sentinel, Redis Cluster). A test binary describes its deployment and calls
// Run; this package starts no servers.
package acceptance

import (
	"testing"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
)

// A Deployment is a Redis deployment reached through one constructor.
type Deployment struct {
	// Name names the deployment in failure messages.
	Name string
	// NewClient returns a new Client on the deployment with opts; the suite closes it.
	NewClient func(t *testing.T, opts ...uncomplicated.Option) *uncomplicated.Client
	// Do runs one raw command on the node that owns key (for checks and for
	// simulating crashed holders, e.g. setting a key's TTL or deleting it);
	// key "" for a keyless command. key only picks the node: the command's
	// arguments are all in args. Do returns the reply as Redis sent it
	// (integers as int64, bulk strings as []byte or string, arrays as []any),
	// a nil reply as (nil, nil), and errors instead of failing t: the suite
	// calls it from other goroutines too.
	Do func(t *testing.T, key string, cmd string, args ...any) (any, error)
}

// Run runs every acceptance test as subtests of t, one after the other:
// some measure how long a waiter waits, and would slow each other down.
func Run(t *testing.T, d Deployment) {
	t.Helper()
	if d.Name == "" || d.NewClient == nil || d.Do == nil {
		t.Fatalf("acceptance: Deployment %q needs a Name, NewClient and Do", d.Name)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, d) })
	}
	if lua.CheckingKeys { // built with -tags uncomplicated_checkkeys
		t.Run("declaredKeys", func(t *testing.T) { declaredKeys(t, d) })
	}
}

// declaredKeys checks that no script of the suite touched a key it did
// not declare in KEYS, as check_keys.lua lists them (see lua.CheckingKeys).
func declaredKeys(t *testing.T, d Deployment) {
	reply, err := d.Do(t, lua.UndeclaredKeys, "LRANGE", lua.UndeclaredKeys, 0, -1)
	if list, _ := reply.([]any); err != nil || len(list) > 0 {
		t.Errorf("keys the scripts touched without declaring them: %q, %v; want none", list, err)
	}
}

// tests are the acceptance tests, by subtest name.
var tests = []struct {
	name string
	run  func(*testing.T, Deployment)
}{
	{"Mutex_lockWorks", mutexLockWorks},
	{"Mutex_sequentialAccess", mutexSequentialAccess},
	{"Mutex_notOverwritten", mutexNotOverwritten},
	{"Mutex_exclusion", mutexExclusion},
	{"Mutex_TryLock", mutexTryLock},
	{"Mutex_lease", mutexLease},
	{"Mutex_fences", mutexFences},
	{"Mutex_staleHolder_Fail", mutexStaleHolderFail},
	{"Mutex_staleHolder_TakeOver", mutexStaleHolderTakeOver},
	{"crashedHolders", crashedHolders},
	{"Client_closed", clientClosed},
	{"RWMutex_exclusion", rwMutexExclusion},
	{"RWMutex_writerNotStarved", rwMutexWriterNotStarved},
	{"Semaphore_neverMoreThanN", semaphoreNeverMoreThanN},
	{"Semaphore_takeOverRace", semaphoreTakeOverRace},
	{"Semaphore_leaseScore", semaphoreLeaseScore},
	{"queueOrder", queueOrder},
	{"RWMutex_readerBatch", rwMutexReaderBatch},
	{"inspection", inspection},
	{"inspect_badInput", inspectBadInput},
	{"inspect_listEveryNode", inspectListEveryNode},
	{"LockAll_noDeadlock", multiNoDeadlock},
	{"LockAll_keptAlive", multiKeptAlive},
	{"LockAll_notStale", multiNotStale},
	{"LockAll_failedNoneHeld", multiFailedNoneHeld},
	{"Election_handOver", electionHandOver},
	{"Election_takeOver", electionTakeOver},
	{"Election_leadLost", electionLeadLost},
	{"keysGone", keysGone},
	{"fencesAcrossLoss", fencesAcrossLoss},
	{"earlierCounters", earlierCounters},
}
