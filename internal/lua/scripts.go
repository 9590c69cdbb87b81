package lua

// Every script of the locks, by the keys it takes; their code is in the .lua files beside them
// (see lua.go).

// The Mutex's scripts. Every change to a lock is one Lua script, so it is
// atomic, and reads user data only from KEYS and ARGV. KEYS[1] is the lock,
// holding its holder's token and fence (see new_fence.lua) with the lease as
// TTL; KEYS[2] its queue and KEYS[3] the queue's entries (see queue_keep.lua
// and wire.AttemptArgs).

// Acquire is acquire.lua.
var Acquire = newScript(3, "acquire")

// TakeOver is take_over.lua.
var TakeOver = newScript(3, "take_over")

// Release is release.lua.
var Release = newScript(3, "release")

// QuickRelease is quick_release.lua, which takes the lock's key alone.
var QuickRelease = newScript(1, "quick_release")

// Refresh is refresh.lua.
var Refresh = newScript(1, "refresh")

// The RWMutex's scripts. KEYS[1] holds the writer's token and fence (see
// new_fence.lua), with its lease as TTL; KEYS[2] is the set of readers;
// KEYS[3] the waiting writers, each with the expiry that its attempts push
// back, the set living until the latest expiry written to it (see
// rw_lock.lua); KEYS[4] the queue and KEYS[5] its entries (see
// wire.AttemptArgs).
//
// Readers may enter only while there is no writer and no waiting writer:
// that makes the lock write-preferring. So that a stream of writers cannot
// starve readers either, the queue is served in order: a release hands
// the lock to the writer at its head, or lets in together the readers at
// its head, up to the next writer.

// RWLock is rw_lock.lua.
var RWLock = newScript(5, "rw_lock")

// RWRLock is rw_rlock.lua.
var RWRLock = newScript(5, "rw_rlock")

// RWUnlock is rw_unlock.lua.
var RWUnlock = newScript(5, "rw_unlock")

// RWRUnlock is rw_runlock.lua.
var RWRUnlock = newScript(5, "rw_runlock")

// RWRRefresh is rw_rrefresh.lua.
var RWRRefresh = newScript(2, "rw_rrefresh")

// The Semaphore's scripts. KEYS[1] is the set of holders, KEYS[2] a hash of
// each holder's fence and of the fence counter, the highest fence granted
// to a holder still there (see sem_only.lua and new_fence.lua); KEYS[3] the
// queue and KEYS[4] its entries (see wire.AttemptArgs). The first two
// expire with the latest holder's lease (see expireWith). An entry's kind
// is the number of permits of the semaphore its waiter asks.

// SemAcquire is sem_acquire.lua.
var SemAcquire = newScript(4, "sem_acquire")

// SemRelease is sem_release.lua.
var SemRelease = newScript(4, "sem_release")

// SemRefresh is sem_refresh.lua.
var SemRefresh = newScript(2, "sem_refresh")

// The scripts of inspection (see package inspect).

// Inspect is inspect.lua.
var Inspect = newScript(12, "inspect")

// ForceMutex is force_mutex.lua.
var ForceMutex = newScript(3, "force_mutex")

// ForceRW is force_rw.lua.
var ForceRW = newScript(5, "force_rw")

// ForceSem is force_sem.lua.
var ForceSem = newScript(4, "force_sem")

// Held is held.lua.
var Held = newScript(1, "held")

// Resume is resume.lua.
var Resume = newScript(2, "resume")

// The Election's script (see uncomplicated's election.go).

// Announce is announce.lua.
var Announce = newScript(2, "announce")
