package main

// What may be alive at once (see samples.go). A leak, a goroutine, a
// connection or a key left by each call that gives up, grows with the
// calls, by the thousand in a few seconds of hurried callers; what the
// locks need grows with the callers and the locks only. So each is bounded
// by what a caller and a lock may need, with room to spare, from the run's
// settings:
//
//   - a worker's goroutines: its callers, each with a Do's auto-refresh and
//     a call to Redis; the Client's own (listener, restart watch, at most 4
//     clean-ups) and its client library's; and the calls the Client leaves
//     behind when their callers' ctx ends first, each in a goroutine until
//     its reply comes (at most maxBehind at once, the library's bound,
//     internal/engine/link.go), and through go-redis, which ignores a
//     call's ctx, in a second one of the driver's under it (waiting, once
//     the pool's connections are taken, for one of them). A fault of Redis
//     or its network fills them up within a second, as can, on a busy
//     machine, replies slower than a hurried caller's deadline;
//   - a worker's connections: one per caller and per auto-refresh, the
//     Client's listener and clean-ups, and the calls left behind;
//   - the keys of the locks' servers: each lock's few keys, and a queue
//     entry per waiter (an entry outlives a waiter that died by its expiry,
//     a hurried caller's lives to its deadline).
//
// The maxima are taken over the whole run, faults included.

// The bounds' terms.
const (
	maxBehind           = 256 // the calls a Client leaves behind at once (the library's, internal/engine/link.go)
	goroutinesPerBehind = 2   // the Client's and, through go-redis, the driver's
	standingGoroutines  = 40  // a worker's own, its Client's and its client library's
	goroutinesPerCaller = 4   // the caller's, its Do's auto-refresh, a call to Redis, one to spare
	standingConns       = 32  // a Client's listener and clean-ups, a client library's spare, those being closed
	connsPerCaller      = 3   // the caller's call, its auto-refresh, one being closed
	keysPerLock         = 8   // a lock's keys, free or held, with a queue
	keysPerCaller       = 0   // none: a waiter's queue entry is a field of its lock's entries hash
)

// sampleFigures are the most of each sample and their bounds.
type sampleFigures struct {
	Goroutines, Conns gauge // the most in one worker
	Keys              gauge // the most on the locks' servers
	// The bounds: each must stay at most this.
	GoroutineBound, ConnBound, KeyBound int
}

// samples finds the most of each sample in r and the bounds of a run with
// opts.
func (r *record) samples(opts options) sampleFigures {
	callers := opts.Goroutines
	if opts.Keys > 0 {
		callers += opts.Hurried
	}
	// A kill's replacement may start before the queue entries of the
	// killed worker's waiters expire.
	procs := opts.Procs + 1
	return sampleFigures{
		Goroutines: most(r.Goroutines), Conns: most(r.Conns), Keys: most(r.Keys),
		GoroutineBound: standingGoroutines + goroutinesPerCaller*callers + goroutinesPerBehind*maxBehind,
		ConnBound:      standingConns + connsPerCaller*callers + maxBehind,
		KeyBound:       keysPerLock*(opts.Keys+opts.RWKeys+opts.SemKeys) + keysPerCaller*callers*procs,
	}
}

// most returns the gauge of gs with the highest n; the zero gauge when
// there is none.
func most(gs []gauge) gauge {
	var m gauge
	for _, g := range gs {
		if g.n > m.n {
			m = g
		}
	}
	return m
}
