package main

import "time"

// A record is everything a run produced, gathered by the coordinator from
// the workers' events and its own faults, and analysed at the end.
type record struct {
	Start, End time.Time

	Sections  map[secID]*hold   // every critical section that began
	Open      map[secID]*hold   // those that began and have not ended, as far as events tell
	Errors    map[string]int    // "op: kind" -> count
	Samples   map[string]string // "op: kind" -> one message
	Late      []event           // calls that returned after their bound
	TakenOver map[string]int    // role -> "... taken over" records of the library

	Faults  map[string]int    // kind -> injected
	Targets map[string]int    // "kind role" -> faults aimed at a holder of that role
	Kills   map[int]time.Time // pid -> when the kill fault killed it
	Stops   []stop

	Workers int           // started, replacements included
	Finals  map[int]event // pid -> its final event
	Crashed []string      // workers that exited with an error, unasked
	Hung    []int         // workers killed after the grace period

	Store map[string]tally // lock name -> the store's counts (mutexes and RWMutexes)

	Masters    []masterLocks   // what each master holds (one: the lock server); the faults hit the first
	Recoveries []time.Duration // on a Cluster, how long each fault of a master took to heal (see awaitCluster)

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

// A stop is one SIGSTOP of a worker, from its stop to its SIGCONT.
type stop struct {
	pid      int
	from, to time.Time
}

func newRecord() *record {
	return &record{
		Sections: map[secID]*hold{}, Open: map[secID]*hold{}, Errors: map[string]int{}, Samples: map[string]string{},
		TakenOver: map[string]int{}, Faults: map[string]int{}, Targets: map[string]int{}, Kills: map[int]time.Time{},
		Finals: map[int]event{}, Store: map[string]tally{}, Examples: map[string][]string{},
	}
}

// add records a worker's event.
func (r *record) add(e event) {
	id := secID{e.Pid, e.Seq}
	switch e.Ev {
	case evEnter:
		h := &hold{enter: e}
		r.Sections[id], r.Open[id] = h, h
	case evSection:
		h := r.Sections[id]
		if h == nil { // cannot happen: enter is sent first on the same pipe
			h = &hold{enter: e}
			r.Sections[id] = h
		}
		h.rec = e.Rec
		delete(r.Open, id)
	case evError:
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
	}
}

// killed records that the kill fault killed pid at t: its open sections
// end there.
func (r *record) killed(pid int, t time.Time) {
	r.Kills[pid] = t
	for id := range r.Open {
		if id.pid == pid {
			delete(r.Open, id)
		}
	}
}
