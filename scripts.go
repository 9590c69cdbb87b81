package uncomplicated

// Every script of the locks, by the keys it takes; their code is in lua/
// (see lua.go).

// The Mutex's scripts. Every change to a lock is one Lua script, so it is
// atomic, and reads user data only from KEYS and ARGV. KEYS[1] is the lock,
// holding its holder's token and fence (see lua/new_fence.lua) with the lease as
// TTL; KEYS[2] the fence counter that earlier versions kept, which a
// release that frees the lock deletes; KEYS[3] its queue (see attemptArgs).

// acquireScript is lua/acquire.lua.
var acquireScript = newScript(3, "acquire")

// takeOverScript is lua/take_over.lua.
var takeOverScript = newScript(3, "take_over")

// releaseScript is lua/release.lua.
var releaseScript = newScript(3, "release")

// refreshScript is lua/refresh.lua.
var refreshScript = newScript(1, "refresh")

// The RWMutex's scripts. KEYS[1] holds the writer's token and fence (see
// lua/new_fence.lua), with its lease as TTL; KEYS[2] is the set of readers;
// KEYS[3] the waiting writers, each with the expiry that its attempts push
// back; KEYS[4] the fence counter that earlier versions kept, deleted when
// the lock is freed; KEYS[5] the queue (see attemptArgs).
//
// Readers may enter only while there is no writer and no waiting writer:
// that makes the lock write-preferring. So that a stream of writers cannot
// starve readers either, the queue is served in order: a release hands
// the lock to the writer at its head, or lets in together the readers at
// its head, up to the next writer.

// rwLockScript is lua/rw_lock.lua.
var rwLockScript = newScript(5, "rw_lock")

// rwRLockScript is lua/rw_rlock.lua.
var rwRLockScript = newScript(5, "rw_rlock")

// rwUnlockScript is lua/rw_unlock.lua.
var rwUnlockScript = newScript(5, "rw_unlock")

// rwRUnlockScript is lua/rw_runlock.lua.
var rwRUnlockScript = newScript(5, "rw_runlock")

// rwRRefreshScript is lua/rw_rrefresh.lua.
var rwRRefreshScript = newScript(2, "rw_rrefresh")

// The Semaphore's scripts. KEYS[1] is the set of holders, KEYS[2] a hash of
// each holder's fence, KEYS[3] the fence counter, the highest fence it has
// granted to a holder still there (see lua/new_fence.lua), and KEYS[4] the queue
// (see attemptArgs). The first three expire with the latest holder's lease
// (see expireWith). An entry's kind is the number of permits of the
// semaphore its waiter asks.

// semAcquireScript is lua/sem_acquire.lua.
var semAcquireScript = newScript(4, "sem_acquire")

// semReleaseScript is lua/sem_release.lua.
var semReleaseScript = newScript(4, "sem_release")

// semRefreshScript is lua/sem_refresh.lua.
var semRefreshScript = newScript(3, "sem_refresh")

// The scripts of inspection (see inspect.go).

// inspectScript is lua/inspect.lua.
var inspectScript = newScript(12, "inspect")

// forceMutexScript is lua/force_mutex.lua.
var forceMutexScript = newScript(3, "force_mutex")

// forceRWScript is lua/force_rw.lua.
var forceRWScript = newScript(5, "force_rw")

// forceSemScript is lua/force_sem.lua.
var forceSemScript = newScript(4, "force_sem")

// heldScript is lua/held.lua.
var heldScript = newScript(1, "held")
