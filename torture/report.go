package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// A summary is the figures of a run and the pass criteria it failed.
type summary struct {
	counts
	Faults                      map[string]int
	Fenced, Unfenced            int
	LostUpdates                 int64
	StoreAccepted, StoreRejects int64
	TakenOver                   int
	Late, LateExcused           []event
	Stops                       stopFigures
	Leaks                       int // workers whose goleak.Find failed
	NoFinal                     int // workers that ended unkilled without a final event
	Failures                    []string
}

// summarize computes the figures and checks the pass criteria.
func (r *record) summarize(opts options) summary {
	s := summary{counts: r.counts(), Faults: r.Faults, TakenOver: r.TakenOver, Stops: r.stopped(opts.Timeout)}
	s.Fenced, s.Unfenced = r.overlaps()
	for _, t := range r.Store {
		s.LostUpdates += t.Accepted - t.Value // every store starts at 0
		s.StoreAccepted += t.Accepted
		s.StoreRejects += t.Rejected
	}
	s.Late, s.LateExcused = r.lateCalls()
	for _, f := range r.Finals {
		s.Leaks += f.Leaked
	}
	s.NoFinal = r.Workers - len(r.Kills) - len(r.Finals)

	fail := func(cond bool, format string, args ...any) {
		if cond {
			s.Failures = append(s.Failures, fmt.Sprintf(format, args...))
		}
	}
	fail(s.LostUpdates != 0, "lost updates: %d", s.LostUpdates)
	fail(s.Unfenced > 0, "unfenced overlaps: %d", s.Unfenced)
	fail(len(s.Late) > 0, "late calls: %d", len(s.Late))
	fail(s.Leaks > 0, "workers with leaked goroutines: %d", s.Leaks)
	fail(s.Stops.LateAccepted > 0, "stopped holders whose late write was accepted after a take-over: %d", s.Stops.LateAccepted)
	fail(s.Stops.Unnoticed > 0, "stopped holders taken over whose Do returned no ErrNotHeld or ErrLost: %d", s.Stops.Unnoticed)
	fail(len(r.Crashed) > 0, "workers that failed: %s", strings.Join(r.Crashed, "; "))
	fail(len(r.Hung) > 0, "workers killed after the grace period: %v", r.Hung)
	fail(s.NoFinal > 0, "workers that ended without their final report: %d", s.NoFinal)
	fail(s.Completed == 0, "no critical section completed")
	return s
}

// print writes the report, one figure per line.
func (s summary) print(w io.Writer, r *record, opts options) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("torture: %d procs x %d goroutines, %d keys, %v, timeout %v, seed %d, faults %s",
		opts.Procs, opts.Goroutines, opts.Keys, opts.Duration, opts.Timeout, opts.Seed, faultList(opts.Faults))
	p("run took:                               %.1fs", r.End.Sub(r.Start).Seconds())
	p("workers started:                        %d (%d replacements)", r.Workers, r.Workers-opts.Procs)
	p("critical sections completed:            %d", s.Completed)
	p("  writes accepted by the fence:         %d", s.Accepted)
	p("  stale writes rejected by the fence:   %d", s.WriteRejected)
	p("  stale reads rejected by the fence:    %d", s.ReadRejected)
	p("  lost before write (fn ctx done):      %d", s.LostBeforeWrite)
	p("  store call failed:                    %d", s.StoreFailed)
	p("critical sections cut by a kill:        %d", s.Killed)
	key, gap := r.longestGap()
	p("longest stretch without a write:        %.2fs (%s)", float64(gap)/1e9, key)
	for _, k := range faultKinds {
		p("faults injected, %-22s %d", k+":", s.Faults[k])
	}
	p("overlaps, unfenced (must be 0):         %d", s.Unfenced)
	p("overlaps, fenced:                       %d", s.Fenced)
	p("lost updates (must be 0):               %d (store: %d writes accepted, %d rejected)", s.LostUpdates, s.StoreAccepted, s.StoreRejects)
	p("take-overs (library log):               %d (with lease = timeout, a stuck holder's key expires as patience ends)", s.TakenOver)
	p("stopped sections that had written:      %d", s.Stops.Before)
	p("stopped holders, before their WRITE:    %d", s.Stops.Holders)
	p("  taken over while stopped:             %d", s.Stops.TakenOver)
	p("  late READ/WRITE rejected by fence:    %d", s.Stops.LateRejected)
	p("  late WRITE accepted (must be 0):      %d", s.Stops.LateAccepted)
	p("  WRITE skipped, fn's ctx lost:         %d", s.Stops.LostCtx)
	p("  Do returned ErrNotHeld or ErrLost:    %d", s.Stops.NotHeld)
	p("  taken over, Do said nothing (must be 0): %d", s.Stops.Unnoticed)
	p("holds whose Lost() closed:              %d", s.LostSeen)
	p("late calls (must be 0):                 %d (%d more excused: their process was stopped)", len(s.Late), len(s.LateExcused))
	for _, e := range s.Late {
		p("  late %-12s by %.0fms (worker %d)", e.Op, float64(e.Over)/1e6, e.Pid)
	}
	keys := slices.Sorted(maps.Keys(r.Errors))
	total := 0
	for _, k := range keys {
		total += r.Errors[k]
	}
	p("errors by kind:                         %d", total)
	for _, k := range keys {
		p("  %-50s %6d  e.g. %s", k, r.Errors[k], strings.ReplaceAll(r.Samples[k], "\n", " | "))
	}
	p("goroutines leaked (workers, must be 0): %d", s.Leaks)
	for pid, f := range r.Finals {
		if f.Leaked > 0 {
			p("  worker %d: %s", pid, f.Leak)
		}
	}
	if len(s.Failures) == 0 {
		p("PASS")
		return
	}
	for _, f := range s.Failures {
		p("FAIL: %s", f)
	}
}

func faultList(kinds []string) string {
	if len(kinds) == 0 {
		return "none"
	}
	return strings.Join(kinds, ",")
}
