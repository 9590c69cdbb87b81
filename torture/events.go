package main

import (
	"encoding/json"
	"io"
	"sync"
)

// Workers report to the coordinator one JSON event per line on stdout.
// Times are Unix nanoseconds of this machine's clock.
type event struct {
	Ev  string `json:"ev"`  // one of the ev* constants
	Pid int    `json:"pid"` // the worker's process id
	// Seq numbers the worker's calls to lock: evWait, evEnter, evPark,
	// evSection and the evError of a lock not obtained repeat it.
	Seq int64 `json:"seq,omitempty"`

	// evWait: a call to lock, made at Enter; it ends with the evEnter of
	// its Seq or, when the lock was not obtained, the evError of its Seq,
	// at Ret. evEnter, evPark and evSection: one critical section.
	Key     string   `json:"key,omitempty"`
	Role    string   `json:"role,omitempty"`    // what it holds: one of the role* constants
	Hurried bool     `json:"hurried,omitempty"` // a hurried caller's (see hurried.go); its Role is roleMutex
	Fence   uint64   `json:"fence,omitempty"`   // 0 when the hold shows none (a reader, a permit of Do)
	Enter   int64    `json:"enter,omitempty"`   // when fn began
	Rec     *section `json:"rec,omitempty"`     // evSection: how it went

	// evError: a failed call; Seq and Ret are set for a lock not
	// obtained. evTakeOver: Kind is the role taken over.
	Op   string `json:"op,omitempty"`
	Kind string `json:"kind,omitempty"` // see kind
	Msg  string `json:"msg,omitempty"`

	// evLate: a call, made at Enter, that returned at Ret, Over
	// nanoseconds after its bound. evStall: a stall from Enter to Ret.
	Ret  int64 `json:"ret,omitempty"`
	Over int64 `json:"over,omitempty"`

	// evFinal: the worker's end.
	Leaked int    `json:"leaked,omitempty"` // goroutines goleak found
	Leak   string `json:"leak,omitempty"`   // goleak's report

	// evSample: the worker's goroutines (runtime.NumGoroutine) and its
	// client library's open connections to the locks' servers, at Enter.
	Goroutines int `json:"goroutines,omitempty"`
	Conns      int `json:"conns,omitempty"`
}

// Events.
const (
	evReady    = "ready"    // the worker is running
	evWait     = "wait"     // a goroutine called Do (or Acquire): it waits for the lock
	evEnter    = "enter"    // a critical section began (fn was called)
	evPark     = "park"     // a critical section, its work done, holds on until the coordinator lets it go (see parking)
	evSection  = "section"  // a critical section ended, with its record
	evError    = "error"    // a call failed
	evLate     = "late"     // a call returned after its deadline plus lateSlack
	evFinal    = "final"    // the worker closed everything and is exiting
	evTakeOver = "takeover" // the library logged "... taken over"
	evSample   = "sample"   // the worker's goroutines and connections, every sampleEvery (see samples.go)
	evStall    = "stall"    // the worker could not run from Enter to Ret (see stalls.go)
)

// Roles: what a critical section holds.
const (
	roleMutex  = "mutex"  // a Mutex
	roleWriter = "writer" // an RWMutex's write lock
	roleReader = "reader" // one of an RWMutex's read locks
	rolePermit = "permit" // a Semaphore's permit
)

var roles = []string{roleMutex, roleWriter, roleReader, rolePermit}

// A section is the record of one critical section, sent when it ends.
//
// A mutex holder or a writer READs and WRITEs the fenced store (see
// store.go). A reader and a permit holder only look: their Begin and End
// are the store's times of their first and last look. A reader's End is
// rejected when a writer READ or WRITE the store between its two looks.
type section struct {
	Read     string `json:"read,omitempty"`    // outcome: accepted, rejected, skipped, failed
	ReadAt   int64  `json:"read_at,omitempty"` // the store's time of the READ
	Value    int64  `json:"value,omitempty"`
	Write    string `json:"write,omitempty"` // accepted, rejected, skipped, lost (ctx done before), failed
	WriteAt  int64  `json:"write_at,omitempty"`
	Begin    string `json:"begin,omitempty"` // accepted or failed
	BeginAt  int64  `json:"begin_at,omitempty"`
	End      string `json:"end,omitempty"` // accepted, rejected (a reader's look changed), skipped, failed
	EndAt    int64  `json:"end_at,omitempty"`
	CtxLost  bool   `json:"ctx_lost,omitempty"` // fn saw its ctx ended by the hold's loss (ErrLost as its cause)
	FnEnd    int64  `json:"fn_end,omitempty"`   // when fn returned
	Exit     int64  `json:"exit,omitempty"`     // when Do returned
	Unlock   string `json:"unlock,omitempty"`   // "ok" or the error kind of Do's Unlock
	NotHeld  bool   `json:"not_held,omitempty"` // Do's error matched ErrNotHeld
	ErrLost  bool   `json:"err_lost,omitempty"` // Do's error matched ErrLost
	LostSeen bool   `json:"lost_seen,omitempty"`
	Manual   bool   `json:"manual,omitempty"` // a permit of Acquire and Release, not Do
}

// Outcomes of a READ or WRITE.
const (
	accepted = "accepted"
	rejected = "rejected"
	skipped  = "skipped" // not attempted: the READ was rejected or failed
	lostCtx  = "lost"    // not attempted: fn's ctx was done (the lock was lost)
	failed   = "failed"  // the call to the store failed
)

// An emitter writes events as lines; it is safe for concurrent use.
type emitter struct {
	mu  sync.Mutex // guards w and enc: one line at a time
	w   io.Writer
	pid int
}

// emit writes e, stamped with the worker's pid, as one line.
func (em *emitter) emit(e event) {
	e.Pid = em.pid
	b, err := json.Marshal(e)
	if err != nil {
		panic(err) // every field marshals
	}
	em.mu.Lock()
	defer em.mu.Unlock()
	_, _ = em.w.Write(append(b, '\n'))
}
