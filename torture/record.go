package main

import "time"

// A record is everything a run produced, gathered by the coordinator from
// the workers' events and its own faults, and analysed at the end.
type record struct {
	Start, End time.Time

	Sections  map[secID]*hold   // every critical section that began
	Open      map[secID]*hold   // those that began and have not ended, as far as events tell
	Waits     map[secID]*wait   // every call to lock, by its process and Seq
	Waiting   map[secID]*wait   // those still waiting, as far as events tell
	Failed    map[secID]string  // the calls to lock that did not obtain it -> the error's kind
	Parked    map[int]event     // pid -> its section parked for the pausewaiter fault (see parking)
	Errors    map[string]int    // "op: kind" -> count
	Samples   map[string]string // "op: kind" -> one message
	Late      []event           // calls that returned after their bound
	TakenOver map[string]int    // role -> "... taken over" records of the library
	Entered   map[string]int    // lock name -> sections begun (enter events)

	Faults   map[string]int    // kind -> injected
	Injected []injection       // every fault injected, in order
	Targets  map[string]int    // "kind role" -> faults aimed at a holder of that role
	Kills    map[int]time.Time // pid -> when the kill fault killed it
	Stops    []stop            // by the stop and pausewaiter faults
	Losses   []loss            // by the lose fault, in order

	Workers int           // started, replacements included
	Finals  map[int]event // pid -> its final event
	Crashed []string      // workers that exited with an error, unasked
	Hung    []int         // workers killed after the grace period

	Store map[string]tally // lock name -> the store's counts (mutexes and RWMutexes)

	Masters    []masterLocks   // what each master holds (one: the lock server); the faults hit the first
	Recoveries []time.Duration // on a Cluster, how long each fault of a master took to heal (see awaitCluster)

	// Samples (see samples.go): the workers' goroutines and connections,
	// and the keys of the locks' servers, summed over the masters.
	Goroutines, Conns, Keys []gauge
	// Stalls are the workers' (see stalls.go): from at, n nanoseconds.
	Stalls []gauge

	// Examples are, by failed criterion, a few of the holds that failed
	// it, described for the report; the analyses note them.
	Examples map[string][]string
}

// masterLocks are the locks one master holds, as Name gives them.
type masterLocks struct {
	Addr  string
	Locks []string
}

// secID names a critical section: its process and its number there.
type secID struct {
	pid int
	seq int64
}

// A hold is one critical section: its enter event and, once it ended, its
// section record.
type hold struct {
	enter event
	rec   *section // nil: its process was killed before it ended
}

// A wait is one call to lock, from the worker's view: from the call to
// fn's start, or to the call's failure.
type wait struct {
	pid       int
	key, role string
	hurried   bool  // a hurried caller's (see hurried.go)
	from, to  int64 // Unix nanoseconds; to is 0 while it waits
}

// before reports whether w began waiting before o; of two begun at once,
// the one of the lower pid.
func (w *wait) before(o *wait) bool {
	if w.from != o.from {
		return w.from < o.from
	}
	return w.pid < o.pid
}

// An injection is one fault injected: its kind, when it took effect, and
// until when the locks may feel it.
type injection struct {
	kind string
	at   int64 // Unix nanoseconds
	// until is when its effects have settled: the later of the end of its
	// bounds (see settled) and a timeout after the fault ended. 0: unknown
	// (the run's end).
	until int64
}

// A stop is one SIGSTOP of a worker, from its stop to its SIGCONT.
type stop struct {
	pid      int
	from, to time.Time
}

func newRecord() *record {
	return &record{
		Sections: map[secID]*hold{}, Open: map[secID]*hold{}, Waits: map[secID]*wait{}, Waiting: map[secID]*wait{}, Failed: map[secID]string{},
		Parked: map[int]event{}, Errors: map[string]int{}, Samples: map[string]string{},
		TakenOver: map[string]int{}, Entered: map[string]int{}, Faults: map[string]int{}, Targets: map[string]int{}, Kills: map[int]time.Time{},
		Finals: map[int]event{}, Store: map[string]tally{}, Examples: map[string][]string{},
	}
}

// add records a worker's event.
func (r *record) add(e event) {
	id := secID{e.Pid, e.Seq}
	switch e.Ev {
	case evWait:
		w := &wait{pid: e.Pid, key: e.Key, role: e.Role, hurried: e.Hurried, from: e.Enter}
		r.Waits[id] = w
		if t, ok := r.Kills[e.Pid]; ok { // read after its process was killed
			w.to = t.UnixNano()
		} else {
			r.Waiting[id] = w
		}
	case evEnter:
		h := &hold{enter: e}
		r.Sections[id], r.Open[id] = h, h
		r.Entered[e.Key]++
		r.waited(id, e.Enter)
	case evPark:
		r.Parked[e.Pid] = e
	case evSection:
		h := r.Sections[id]
		if h == nil { // cannot happen: enter is sent first on the same pipe
			h = &hold{enter: e}
			r.Sections[id] = h
		}
		h.rec = e.Rec
		delete(r.Open, id)
	case evError:
		if e.Ret != 0 { // a lock not obtained
			r.waited(id, e.Ret)
			r.Failed[id] = e.Kind
		}
		k := e.Op + ": " + e.Kind
		r.Errors[k]++
		if _, ok := r.Samples[k]; !ok {
			r.Samples[k] = e.Msg
		}
	case evLate:
		r.Late = append(r.Late, e)
	case evTakeOver:
		r.TakenOver[e.Kind]++
	case evFinal:
		r.Finals[e.Pid] = e
	case evStall:
		r.Stalls = append(r.Stalls, gauge{pid: e.Pid, at: e.Enter, n: int(e.Ret - e.Enter)})
	case evSample:
		r.Goroutines = append(r.Goroutines, gauge{pid: e.Pid, at: e.Enter, n: e.Goroutines})
		r.Conns = append(r.Conns, gauge{pid: e.Pid, at: e.Enter, n: e.Conns})
	}
}

// waited ends the wait id at t, if it is waiting.
func (r *record) waited(id secID, t int64) {
	if w := r.Waiting[id]; w != nil {
		w.to = t
		delete(r.Waiting, id)
	}
}

// killed records that the kill fault killed pid at t: its open sections
// and its waits end there.
func (r *record) killed(pid int, t time.Time) {
	r.Kills[pid] = t
	for id := range r.Open {
		if id.pid == pid {
			delete(r.Open, id)
		}
	}
	for id := range r.Waiting {
		if id.pid == pid {
			r.waited(id, t.UnixNano())
		}
	}
}
