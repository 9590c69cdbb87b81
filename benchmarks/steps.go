package main

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/trace"
)

// Where a hand-off's time goes (-trace): during a row's contended run,
// the library stamps each hand-off's steps (see internal/trace), and so
// does the push floor; afterwards they are joined into hand-offs by the
// waiter's token, and each step's median time since the one before is
// the row's. The steps: the holder's Unlock begins; the release is sent;
// its reply, naming the waiter, comes back to the holder; the hand-off
// reaches the waiter's Client (the listening connection reads it, or the
// release's reply carries it in-process); the waiter's sleep returns
// with it; Lock returns; later, off the critical path, the waiter's
// Client takes the claim. The push floor has two steps: PUBLISH sent, and
// the message received, when its Lock returns.

// A stepTrace collects the stamps of one run.
type stepTrace struct {
	start  time.Time
	mu     sync.Mutex
	events []stepEvent
}

// A stepEvent is one stamp.
type stepEvent struct {
	step        trace.Step
	lock, token string
	at          time.Duration // since start
}

// traceSteps stamps the steps of hand-offs until the returned func is
// called, which returns what it collected.
func traceSteps() (stop func() *stepTrace) {
	s := &stepTrace{start: time.Now()}
	restore := trace.Set(func(step trace.Step, lock, token string) {
		at := time.Since(s.start)
		s.mu.Lock()
		s.events = append(s.events, stepEvent{step, lock, token, at})
		s.mu.Unlock()
	})
	return func() *stepTrace {
		restore()
		return s
	}
}

// stepNames name the steps of a hand-off as the table shows them, from the
// one before: unlock→sent is the Go work before the release is sent.
var stepNames = []string{"unlock→sent", "sent→reply", "sent→at Client", "at Client→woken", "woken→returned", "unlock→returned", "returned→claim taken"}

// A handOffSteps is the medians of one row's hand-offs, in the order of
// stepNames (0 where no hand-off had the step), and how many were joined.
type handOffSteps struct {
	medians []time.Duration
	n       int
}

// steps joins the stamps into hand-offs and returns their medians.
func (s *stepTrace) steps() handOffSteps {
	s.mu.Lock()
	defer s.mu.Unlock()
	type handOff struct{ unlock, sent, reply time.Duration }
	lastUnlock, lastSent := map[string]time.Duration{}, map[string]time.Duration{}
	var byReply []struct {
		token string
		h     handOff
	}
	first := map[trace.Step]map[string]time.Duration{trace.Read: {}, trace.Woken: {}, trace.Returned: {}, trace.Taken: {}}
	for _, e := range s.events {
		switch e.step {
		case trace.Unlock:
			lastUnlock[e.lock] = e.at
		case trace.Sent:
			lastSent[e.lock] = e.at
		case trace.Reply:
			byReply = append(byReply, struct {
				token string
				h     handOff
			}{e.token, handOff{lastUnlock[e.lock], lastSent[e.lock], e.at}})
		default:
			if m := first[e.step]; m != nil {
				if _, seen := m[e.token]; !seen {
					m[e.token] = e.at
				}
			}
		}
	}
	cols := make([][]time.Duration, len(stepNames))
	n := 0
	for _, r := range byReply {
		read, okR := first[trace.Read][r.token]
		woken, okW := first[trace.Woken][r.token]
		ret, okT := first[trace.Returned][r.token]
		h := r.h
		if !okR || !okW || !okT || h.sent < h.unlock || read < h.sent || woken < read || ret < woken {
			continue // a hand-off not taken, or one whose steps did not all come
		}
		n++
		for i, d := range []time.Duration{h.sent - h.unlock, h.reply - h.sent, read - h.sent, woken - read, ret - woken, ret - h.unlock} {
			cols[i] = append(cols[i], d)
		}
		if taken, ok := first[trace.Taken][r.token]; ok && taken >= ret {
			cols[6] = append(cols[6], taken-ret)
		}
	}
	out := handOffSteps{medians: make([]time.Duration, len(stepNames)), n: n}
	for i, c := range cols {
		if len(c) > 0 {
			slices.Sort(c)
			out.medians[i] = c[len(c)/2]
		}
	}
	return out
}

// printSteps prints the step table of the rows that have one.
func printSteps(w io.Writer, results []result) {
	var rows []result
	for _, r := range results {
		if r.steps.n > 0 {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\nWhere a hand-off's time goes (-trace): medians over the contended run, µs, each step from the one before.")
	fmt.Fprint(w, "\n| row | hand-offs |")
	for _, name := range stepNames {
		fmt.Fprintf(w, " %s |", name)
	}
	fmt.Fprint(w, "\n| --- | --- |")
	for range stepNames {
		fmt.Fprint(w, " --- |")
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %d |", r.name, r.steps.n)
		for _, d := range r.steps.medians {
			if d == 0 {
				fmt.Fprint(w, " - |")
				continue
			}
			fmt.Fprintf(w, " %.0f |", float64(d)/float64(time.Microsecond))
		}
		fmt.Fprintln(w)
	}
}
