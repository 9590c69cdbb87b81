package main

// lockName returns the name of the lock the workers name name, as the
// library gives it (Named, with the default prefix); its Mutex's key
// is that name. TestLockKey checks it against the library.
func lockName(name string) string { return "lock:" + name }

// lockKey returns the Redis key that holds a hold of role on the lock
// name, as the library names it (lockname.go, with the default prefix):
// the Mutex's name itself, an RWMutex's writer key or set of readers, a
// Semaphore's set of holders. TestLockKey checks it against the library.
func lockKey(role, name string) string {
	switch role {
	case roleWriter:
		return "lock:writer:{" + name + "}"
	case roleReader:
		return "lock:readers:{" + name + "}"
	case rolePermit:
		return "lock:permits:{" + name + "}"
	}
	return name
}
