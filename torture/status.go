package main

// A status is what the library told a holder of its hold, by the time Do
// (or Release) returned. The analysis excuses a hold that conflicts with
// another only when it is not confirmed: a lease lock cannot keep a
// paused or cut-off holder from going on, but it must tell it.
type status int

const (
	// confirmed: Do returned nil. Its release found one of the hold's
	// tokens in Redis, and a token once gone never comes back (a Refresh
	// replaces it atomically), so Redis had the hold from its grant to its
	// release. No conflicting hold can be granted meanwhile, whatever the
	// faults: two confirmed holds that overlap are a broken lock.
	confirmed status = iota
	// found: the library told the holder it lost the hold: Do's error
	// matched ErrLost or ErrNotHeld, or the hold's Lost signal fired.
	found
	// unsure: Do failed otherwise: its release met a network error or ran
	// out of time, so nobody can tell when the hold ended.
	unsure
	// cut: the hold never ended: its process was killed.
	cut
)

var statusNames = [...]string{confirmed: "confirmed", found: "found lost", unsure: "unsure", cut: "killed"}

func (s status) String() string { return statusNames[s] }

// status returns what the library told h's holder.
func (h *hold) status() status {
	rec := h.rec
	switch {
	case rec == nil:
		return cut
	case rec.NotHeld || rec.ErrLost || rec.LostSeen || rec.CtxLost:
		return found
	case rec.Unlock != "ok":
		return unsure
	}
	return confirmed
}

// role returns what h holds; records without a role are of Mutexes.
func (h *hold) role() string {
	if h.enter.Role == "" {
		return roleMutex
	}
	return h.enter.Role
}
