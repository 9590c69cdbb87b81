package main

import "slices"

// semFigures are what the spans of the Semaphore sections show: how many
// holders were in at once. The store cannot fence permit holders (see
// store.go), so the check rests on what the library told each holder: at
// no instant may more holders than permits be in whose Do confirmed them.
// More than that may be in when some were found lost (their lease ended
// while they were stopped, or Redis forgot them), unsure or killed.
type semFigures struct {
	MaxHolders   int // the most holders at once on one semaphore
	MaxConfirmed int // the most of them whose Do confirmed them: at most the permits
	Over         int // sections that began with more holders in than permits
	// OverConfirmed counts sections that began with more confirmed
	// holders in than permits (must be 0).
	OverConfirmed int
}

// sem analyses the Semaphore sections of a run with permits permits.
func (r *record) sem(permits int) semFigures {
	var f semFigures
	for _, ss := range r.spans(rolePermit) {
		c := concurrency(ss, func(s span) bool { return s.h.status() == confirmed })
		if c.marked > permits {
			r.example(exSemOver, r.crowd(ss, c.marked)...)
		}
		f.MaxHolders = max(f.MaxHolders, c.all)
		f.MaxConfirmed = max(f.MaxConfirmed, c.marked)
		for _, n := range c.atStart {
			if n.all > permits {
				f.Over++
			}
			if n.self && n.marked > permits {
				f.OverConfirmed++
			}
		}
	}
	return f
}

// counted is how many spans were in when one began, itself included, and
// how many of them were marked; self tells whether it was.
type counted struct {
	all, marked int
	self        bool
}

// concurrencies are what concurrency finds: the most spans in at once,
// the most marked spans in at once, and the counts when each span began.
type concurrencies struct {
	all, marked int
	atStart     []counted
}

// concurrency sweeps spans in time order. Spans that only touch are not in
// at once: at equal times ends come first.
func concurrency(ss []span, mark func(span) bool) concurrencies {
	type edge struct {
		at     int64
		delta  int // +1 start, -1 end
		marked bool
	}
	edges := make([]edge, 0, 2*len(ss))
	for _, s := range ss {
		m := mark != nil && mark(s)
		edges = append(edges, edge{s.start, +1, m}, edge{s.end, -1, m})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := cmp64(a.at, b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	var c concurrencies
	var now counted
	for _, e := range edges {
		now.all += e.delta
		if e.marked {
			now.marked += e.delta
		}
		c.all, c.marked = max(c.all, now.all), max(c.marked, now.marked)
		if e.delta > 0 {
			c.atStart = append(c.atStart, counted{now.all, now.marked, e.marked})
		}
	}
	return c
}

// crowd returns the first confirmed spans of ss found n at once, for the
// report.
func (r *record) crowd(ss []span, n int) []*hold {
	for _, s := range ss {
		var in []*hold
		for _, o := range ss {
			if o.h.status() == confirmed && o.start <= s.start && s.start < o.end {
				in = append(in, o.h)
			}
		}
		if len(in) >= n {
			return in
		}
	}
	return nil
}
