package main

import (
	"strings"
	"time"
)

// restartWindow is how long after a restart fault a call to lock under
// way counts as one that waited while Redis restarted: the restart takes
// under a second. After a lose fault that restarts the server, it is from
// the kill to a second after the server answered again.
const restartWindow = 2 * time.Second

// restartFigures are the calls to lock that were under way while Redis
// restarted, and how those that did not obtain the lock ended. A blocking
// call rides out a restart: none may give up because Redis failed.
type restartFigures struct {
	Waits    int // calls under way within restartWindow of a restart
	GaveUp   int // of them, not obtained with an error of Redis or the network
	CtxEnded int // of them, not obtained because their ctx ended
	Other    int // of them, not obtained otherwise (ErrStale, the Client closed, ...)
}

// restarts counts the calls to lock under way while Redis restarted.
func (r *record) restarts() restartFigures {
	var f restartFigures
	var windows [][2]int64
	for _, inj := range r.Injected {
		if inj.kind == faultRestart {
			windows = append(windows, [2]int64{inj.at, inj.at + int64(restartWindow)})
		}
	}
	for _, l := range r.Losses {
		if !l.rollback {
			windows = append(windows, [2]int64{l.from, max(l.back, l.from) + int64(time.Second)})
		}
	}
	for id, w := range r.Waits {
		to := w.to
		if to == 0 {
			to = r.End.UnixNano()
		}
		hit := false
		for _, win := range windows {
			hit = hit || w.from < win[1] && to > win[0]
		}
		if !hit {
			continue
		}
		f.Waits++
		kind, failed := r.Failed[id]
		why, caused := strings.CutPrefix(kind, "ErrNotObtained (")
		switch why = strings.TrimSuffix(why, ")"); {
		case !failed:
		case ctxEnded(kind):
			f.CtxEnded++
		case caused && why != "closed":
			f.GaveUp++
		default:
			f.Other++
		}
	}
	return f
}
