// Package uncomplicated provides a mutex for domain objects, kept in Redis,
// that tolerates stale locks.
//
// # Making a Client
//
// A process makes one Client for its Redis and shares it between its
// locks: NewClient on the driver of its Redis client library, redigo.New
// for a redigo pool (package redigo), goredis.NewClient (module
// github.com/uncomplicated-mutex/uncomplicated/goredis) on go-redis, or
// the rueidis module's NewClient on rueidis, for a single node, Sentinel
// or Cluster; other libraries implement package driver. Options given to it are the defaults of its locks.
//
//	client := uncomplicated.NewClient(redigo.New(pool))
//	defer client.Close()
//
// # Locking an object
//
// Processes that must not work on the same object at once (charge an order,
// send an email, rebuild a report) lock it by its ID:
//
//	m, err := uncomplicated.New(client, order) // lock:orders.Order:42
//	err = m.Do(ctx, func(ctx context.Context) error { return charge(ctx, order) })
//
// A waiter joins the lock's queue: a release hands the lock to the oldest
// waiter, for a short claim that the waiter turns into its lease, and wakes
// it. Between wake-ups it also tries again after random sub-second ticks,
// so it never depends on them.
//
// Safety rests on the lease, as with every Redis lock: a holder paused past
// its lease, or taken over while it was only slow, may still be running. Pass
// the hold's fence (Mutex.Fence, or FenceOf inside Do) to the store you
// protect and have it refuse a write whose fence is not above the highest it
// has accepted.
//
// # The stale policy
//
// While the holder's secret token keeps changing (new holders, or a holder
// calling Refresh) the lock is busy, not stuck, and the waiter's patience
// starts over. When one token has sat on the lock for the holder's timeout
// (WithTimeout), or the waiter's if longer, the holder is stuck: the waiter
// fails with ErrStale (the default), or with WithTakeOver(true) replaces the
// holder atomically under a higher fencing token. The lease (WithLease),
// twice the timeout by default, frees the lock of a holder that crashed.
//
// # The other primitives
//
// NewRW makes an RWMutex (many readers or one writer) and NewSemaphore a
// Semaphore of N permits, with the same options, queue, fences and stale
// policy. Named gives a plain name to lock: New(client, Named("nightly")).
//
// # Testing
//
// Package uncomplicatedtest gives a Client on an in-memory Redis and a mock
// clock, so that a test of "the second worker takes over after a minute"
// runs in milliseconds.
package uncomplicated
