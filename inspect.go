package uncomplicated

// A Kind is the kind of a lock: the primitive that made it.
type Kind string

// The kinds of lock.
const (
	KindMutex     Kind = "mutex"
	KindRWMutex   Kind = "rwmutex"
	KindSemaphore Kind = "semaphore"
)
