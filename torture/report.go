package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// A summary is the figures of a run and the pass criteria it failed.
type summary struct {
	counts                      // of the Mutex sections
	Faults                      map[string]int
	Fenced, Unfenced, Confirmed int // Mutex overlaps; see overlaps
	LostUpdates                 int64
	StoreAccepted, StoreRejects int64
	Late, LateExcused           []event
	Stops                       stopFigures
	Unnoticed                   []stopped // the Mutex holders Stops.Unnoticed counts
	Roles                       map[string]*roleFigures
	RW                          rwFigures
	Sem                         semFigures
	Idle                        map[string]*idleFigures // by fault kind, and faultNone
	Lose                        loseFigures             // of the lose fault
	Restarts                    restartFigures          // the calls to lock while Redis restarted
	Hurried                     hurriedFigures          // the hurried callers' calls while no fault was under way
	Samples                     sampleFigures           // the most goroutines, keys and connections
	Leaks                       int                     // workers whose goleak.Find failed
	NoFinal                     int                     // workers that ended unkilled without a final event
	Failures                    []string
}

// summarize computes the figures and checks the pass criteria.
func (r *record) summarize(opts options) summary {
	s := summary{counts: r.counts(), Faults: r.Faults, Roles: r.roles(), RW: r.rw(), Sem: r.sem(opts.Permits),
		Idle: r.idleByFault(opts.Permits, opts.Timeout), Lose: r.lose(), Restarts: r.restarts(), Hurried: r.hurried(), Samples: r.samples(opts)}
	s.Stops, s.Unnoticed = r.stopped(opts.Timeout)
	s.Fenced, s.Unfenced, s.Confirmed = r.overlaps()
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
	fail(s.Confirmed > 0, "Mutex overlaps of two holds Do confirmed: %d", s.Confirmed)
	fail(s.RW.WWUnfenced > 0, "RWMutex writer-writer unfenced overlaps: %d", s.RW.WWUnfenced)
	fail(s.RW.Confirmed > 0, "RWMutex overlaps of two holds Do or RDo confirmed: %d", s.RW.Confirmed)
	fail(s.Sem.OverConfirmed > 0, "Semaphore sections begun with more than %d confirmed holders in: %d", opts.Permits, s.Sem.OverConfirmed)
	for _, role := range columns {
		f := s.Roles[role]
		fail(f.LostButConfirmed > 0, "%s holds whose Lost signal fired while Do returned nil: %d", role, f.LostButConfirmed)
		fail(f.ResumedUntold > 0, "%s holds stopped mid-section whose Do did not report the loss: %d", role, f.ResumedUntold)
		fail(f.FencedConfirmed > 0, "%s holds the fence rejected while Do confirmed them: %d", role, f.FencedConfirmed)
		fail(f.DupFences > 0, "%s fences shown by two holds: %d", role, f.DupFences)
	}
	fail(s.Restarts.GaveUp > 0, "calls to lock that gave up while Redis restarted: %d", s.Restarts.GaveUp)
	fail(len(s.Late) > 0, "late calls: %d", len(s.Late))
	fail(s.Leaks > 0, "workers with leaked goroutines: %d", s.Leaks)
	fail(s.Hurried.collapsed(), "hurried callers acquired a Mutex in none of their %d calls while no fault of the locks was under way",
		s.Hurried.total().Calls)
	sf := s.Samples
	fail(sf.Goroutines.n > sf.GoroutineBound, "a worker had %d goroutines (worker %d at %.1fs), over %d",
		sf.Goroutines.n, sf.Goroutines.pid, r.since(sf.Goroutines.at), sf.GoroutineBound)
	fail(sf.Conns.n > sf.ConnBound, "a worker had %d connections open to the locks' servers (worker %d at %.1fs), over %d",
		sf.Conns.n, sf.Conns.pid, r.since(sf.Conns.at), sf.ConnBound)
	fail(sf.Keys.n > sf.KeyBound, "the locks' servers held %d keys (at %.1fs), over %d", sf.Keys.n, r.since(sf.Keys.at), sf.KeyBound)
	fail(s.Stops.LateAccepted > 0, "stopped holders whose late write was accepted after a take-over: %d", s.Stops.LateAccepted)
	fail(s.Stops.Unnoticed > 0, "stopped holders taken over whose Do returned no ErrNotHeld or ErrLost: %d", s.Stops.Unnoticed)
	fail(len(r.Crashed) > 0, "workers that failed: %s", strings.Join(r.Crashed, "; "))
	fail(len(r.Hung) > 0, "workers killed after the grace period: %v", r.Hung)
	fail(s.NoFinal > 0, "workers that ended without their final report: %d", s.NoFinal)
	for _, k := range faultKinds(opts.Cluster) {
		if f := s.Idle[k]; f != nil && f.Bound > 0 && f.Longest[0].length() >= f.Bound {
			fail(true, "a lock free while a goroutine waited, after a %s fault, for %.2fs (%s), not under %.2fs",
				k, f.Longest[0].length().Seconds(), r.at(f.Longest[0]), f.Bound.Seconds())
			r.Examples[exIdle] = append(r.Examples[exIdle], k+": "+r.explain(f.Longest[0]))
		}
	}
	for _, rc := range s.Lose.late() {
		fail(true, "a new holder's first write accepted %.2fs after Redis answered again after a lose fault (%s), not under %.2fs",
			rc.after.Seconds(), r.describeRecovery(rc), s.Lose.Bound.Seconds())
	}
	for _, want := range []struct {
		role string
		keys int
	}{{roleMutex, opts.Keys}, {roleWriter, opts.RWKeys}, {roleReader, opts.RWKeys}, {rolePermit, opts.SemKeys}} {
		fail(want.keys > 0 && s.Roles[want.role].Completed == 0, "no %s section completed", want.role)
	}
	return s
}

// print writes the report, one figure per line.
func (s summary) print(w io.Writer, r *record, opts options) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	mode := "client " + opts.Client
	if opts.Cluster {
		mode += ", cluster"
	}
	p("torture: %d procs x %d goroutines + %d hurried, %d Mutex, %d RWMutex, %d Semaphore keys (%d permits), %v, timeout %v, seed %d, faults %s, %s",
		opts.Procs, opts.Goroutines, opts.Hurried, opts.Keys, opts.RWKeys, opts.SemKeys, opts.Permits, opts.Duration, opts.Timeout, opts.Seed, faultList(opts.Faults), mode)
	s.printDeployment(p, r, opts)
	p("run took:                               %.1fs", r.End.Sub(r.Start).Seconds())
	p("workers started:                        %d (%d replacements)", r.Workers, r.Workers-opts.Procs)
	for _, k := range faultKinds(opts.Cluster) {
		p("faults injected, %-22s %d%s", k+":", s.Faults[k], s.targets(r, k))
	}
	if opts.Cluster {
		p("faults skipped on a Cluster:            %s (no proxy can sit in front of a Cluster: CLUSTER SLOTS names the nodes' own addresses)",
			strings.Join(slices.DeleteFunc(slices.Clone(serverFaults), func(k string) bool { return slices.Contains(clusterFaults, k) }), ", "))
		var longest, total time.Duration
		for _, d := range r.Recoveries {
			longest, total = max(longest, d), total+d
		}
		p("Cluster ok again after a master's fault: %.1fs at most, %.1fs in all (%d faults)", longest.Seconds(), total.Seconds(), len(r.Recoveries))
	}
	if slices.Contains(opts.Faults, faultLose) {
		s.printLose(p, r)
	}
	s.printIdle(p, r, opts)
	p("Mutex sections completed:               %d (%d of them hurried callers')", s.Completed, s.Roles[colHurried].Completed)
	p("  writes accepted by the fence:         %d", s.Accepted)
	p("  stale writes rejected by the fence:   %d", s.WriteRejected)
	p("  stale reads rejected by the fence:    %d", s.ReadRejected)
	p("  lost before write (fn ctx done):      %d", s.LostBeforeWrite)
	p("  store call failed:                    %d", s.StoreFailed)
	p("Mutex sections cut by a kill:           %d", s.Killed)
	key, gap := r.longestGap(roleMutex)
	p("longest stretch without a write:        %.2fs (%s)", float64(gap)/1e9, key)
	p("overlaps, unfenced (must be 0):         %d", s.Unfenced)
	p("overlaps, fenced:                       %d", s.Fenced)
	p("overlaps, both holds confirmed (must be 0): %d", s.Confirmed)
	p("lost updates (must be 0):               %d (store: %d writes accepted, %d rejected; Mutexes and RWMutexes)", s.LostUpdates, s.StoreAccepted, s.StoreRejects)
	p("stopped sections past WRITE or fn:     %d", s.Stops.Before)
	p("stopped holders, before their WRITE:    %d", s.Stops.Holders)
	p("  taken over while stopped:             %d", s.Stops.TakenOver)
	p("  late READ/WRITE rejected by fence:    %d", s.Stops.LateRejected)
	p("  late WRITE accepted (must be 0):      %d", s.Stops.LateAccepted)
	p("  WRITE skipped, fn's ctx lost:         %d", s.Stops.LostCtx)
	p("  Do returned ErrNotHeld or ErrLost:    %d", s.Stops.NotHeld)
	p("  taken over, Do said nothing (must be 0): %d", s.Stops.Unnoticed)
	for _, u := range s.Unnoticed {
		p("    %s", u)
	}
	if opts.RWKeys > 0 {
		rw := s.RW
		key, gap := r.longestGap(roleWriter)
		p("RWMutex longest stretch without a write: %.2fs (%s)", float64(gap)/1e9, key)
		p("RWMutex most readers at once:           %d", rw.MaxReaders)
		p("  reads a writer changed (second LOOK): %d (%d of them confirmed by RDo: the writer had lost the lock)", rw.ReadsChanged, rw.ReadsChangedConfirmed)
		p("  writer-writer overlaps, unfenced (must be 0): %d", rw.WWUnfenced)
		p("  writer-writer overlaps, fenced:       %d", rw.WWFenced)
		p("  writer-reader overlaps:               %d (the store caught %d: the read changed or the write was refused)", rw.WR, rw.WRCaught)
		p("  overlaps, both holds confirmed (must be 0): %d (excused: %s)", rw.Confirmed, excused(rw.Excused))
	}
	if opts.SemKeys > 0 {
		sem := s.Sem
		p("Semaphore most holders at once:         %d of %d permits (%d confirmed by Do or Release, must be at most %d)", sem.MaxHolders, opts.Permits, sem.MaxConfirmed, opts.Permits)
		p("  sections begun over the permits:      %d (with the confirmed ones over, must be 0: %d)", sem.Over, sem.OverConfirmed)
	}
	s.printRoles(p)
	s.printHurried(p, opts)
	rs := s.Restarts
	p("calls that gave up while Redis restarted (must be 0): %d of %d under way (%d more ended with their ctx, %d otherwise)",
		rs.GaveUp, rs.Waits, rs.CtxEnded, rs.Other)
	p("late calls (must be 0):                 %d (%d more excused: their process was stopped, or stalled)", len(s.Late), len(s.LateExcused))
	if stalls, longest := r.unstopped(); len(stalls) > 0 {
		p("  stalls of a worker not stopped (could not run for %v or more): %d, the longest %.0fms (worker %d at %.1fs)",
			stallMin, len(stalls), float64(longest.n)/1e6, longest.pid, r.since(longest.at))
	} else {
		p("  stalls of a worker not stopped (could not run for %v or more): 0", stallMin)
	}
	for _, e := range s.Late {
		p("  late %-12s by %.0fms (worker %d at %.1fs)", e.Op, float64(e.Over)/1e6, e.Pid, r.since(e.Enter))
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
	s.printSamples(p, r)
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
	for _, what := range slices.Sorted(maps.Keys(r.Examples)) {
		for _, ex := range r.Examples[what] {
			p("  e.g. %s: %s", what, ex)
		}
	}
}

// printLose writes how the lose faults went and how soon, after each, the
// store took a new holder's write.
func (s summary) printLose(p func(string, ...any), r *record) {
	f := s.Lose
	p("Redis lost its data (lose):             %d restarts without persistence, %d rollbacks of a held lock's keys (about %d acquisitions back)",
		f.Restarts, f.Rollbacks, rollbackDepth)
	unmeasured := ""
	if f.Unmeasured > 0 {
		unmeasured = fmt.Sprintf(" (%d more hit a Semaphore, which writes nothing)", f.Unmeasured)
	}
	if len(f.Recoveries) == 0 {
		p("  a new holder's first write accepted, after Redis answered again: no fault measured%s", unmeasured)
		return
	}
	p("  a new holder's first write accepted, after Redis answered again (must be under %.2fs): median %.2fs, max %.2fs (%s) of %d faults%s",
		f.Bound.Seconds(), f.median().Seconds(), f.Recoveries[0].after.Seconds(), r.describeRecovery(f.Recoveries[0]), len(f.Recoveries), unmeasured)
}

// printIdle writes, by fault kind, the median and the longest of the
// longest idle stretch after each fault, and the bound of each.
func (s summary) printIdle(p func(string, ...any), r *record, opts options) {
	p("longest time a lock was free while a live goroutine waited (a Semaphore: a permit free), after each fault until the next:")
	for _, k := range append(slices.Clone(faultKinds(opts.Cluster)), faultNone) {
		f := s.Idle[k]
		switch {
		case f == nil:
			continue
		case k == faultNone:
			p("  %-37s %.2fs (%s)", "before the first fault:", f.Longest[0].length().Seconds(), r.at(f.Longest[0]))
			continue
		}
		bound := "no bound: a fault of the lock server, its network or its keys"
		if f.Bound > 0 {
			bound = fmt.Sprintf("must be under %.2fs", f.Bound.Seconds())
		}
		p("  %-37s median %.2fs, max %.2fs (%s) of %d faults; %s", k+":",
			f.median().Seconds(), f.Longest[0].length().Seconds(), r.at(f.Longest[0]), len(f.Longest), bound)
	}
}

// at names an idle stretch's lock and start, in seconds from the run's
// start, for the report.
func (r *record) at(s stretch) string {
	if s.key == "" {
		return "none"
	}
	return fmt.Sprintf("%s at %.1fs", s.key, float64(s.from-r.Start.UnixNano())/1e9)
}

// printDeployment writes where the locks are, which client reaches them
// and, on a Cluster, which locks each master holds.
func (s summary) printDeployment(p func(string, ...any), r *record, opts options) {
	switch {
	case opts.Client == clientRedigo:
		p("lock deployment:                        one redis-server behind the fault proxy; uncomplicated.NewClient(redigo.New(pool))")
		return
	case !opts.Cluster:
		p("lock deployment:                        one redis-server behind the fault proxy; goredis.NewClient on a go-redis Client")
		return
	}
	p("lock deployment:                        Redis Cluster of %d masters, no replicas; goredis.NewClient on a go-redis ClusterClient", len(r.Masters))
	for i, m := range r.Masters {
		faulted := ""
		if i == 0 {
			faulted = " (faulted)"
		}
		p("  master %-31s %s", m.Addr+faulted+":", strings.Join(m.Locks, " "))
	}
}

// targets lists, for a fault aimed at a holder, the roles it hit, and for
// a fault of the lock server, the roles of the holds open on it (for the
// lose fault's rollback, on the lock it rolled back).
func (s summary) targets(r *record, kind string) string {
	var hit []string
	for _, role := range roles {
		if n := r.Targets[kind+" "+role]; n > 0 {
			hit = append(hit, fmt.Sprintf("%s %d", role, n))
		}
	}
	if len(hit) == 0 {
		return ""
	}
	switch kind {
	case faultRestart, faultOutage, faultPause:
		return " (holds open on it: " + strings.Join(hit, ", ") + ")"
	case faultLose:
		return " (holds open on the server restarted, or on the lock rolled back: " + strings.Join(hit, ", ") + ")"
	}
	return " (" + strings.Join(hit, ", ") + ")"
}

// printRoles writes the figures by role as a table, the hurried callers'
// Mutex holds in a column of their own.
func (s summary) printRoles(p func(string, ...any)) {
	row := func(label string, v func(f *roleFigures) int) {
		line := fmt.Sprintf("  %-44s", label)
		for _, col := range columns {
			line += fmt.Sprintf(" %7d", v(s.Roles[col]))
		}
		p("%s", line)
	}
	head := fmt.Sprintf("%-46s", "holds by role:")
	for _, col := range columns {
		head += fmt.Sprintf(" %7s", col)
	}
	p("%s", head)
	row("calls to lock", func(f *roleFigures) int { return f.Calls })
	row("  not obtained: ctx ended (gave up)", func(f *roleFigures) int { return f.GaveUp })
	row("  not obtained otherwise", func(f *roleFigures) int { return f.NotObtained })
	row("sections completed", func(f *roleFigures) int { return f.Completed })
	row("  of them without Do (Lock or Acquire, ...)", func(f *roleFigures) int { return f.Manual })
	row("sections cut by a kill", func(f *roleFigures) int { return f.Killed })
	row("Do confirmed the hold (returned nil)", func(f *roleFigures) int { return f.Confirmed })
	row("Do found it lost (ErrLost, ErrNotHeld)", func(f *roleFigures) int { return f.Found })
	row("  of them ErrLost", func(f *roleFigures) int { return f.ErrLost })
	row("Do failed otherwise (unsure)", func(f *roleFigures) int { return f.Unsure })
	row("Lost signals (Lost() closed, fn ctx ended)", func(f *roleFigures) int { return f.LostSeen })
	row("  Do returned nil all the same (must be 0)", func(f *roleFigures) int { return f.LostButConfirmed })
	row("take-overs (library log)", func(f *roleFigures) int { return f.TakenOver })
	row("stopped mid-section", func(f *roleFigures) int { return f.Resumed })
	row("  Do did not report the loss (must be 0)", func(f *roleFigures) int { return f.ResumedUntold })
	row("fenced out, Do confirmed it (must be 0)", func(f *roleFigures) int { return f.FencedConfirmed })
	row("fences shown", func(f *roleFigures) int { return f.Fenced })
	row("  shown twice on one lock (must be 0)", func(f *roleFigures) int { return f.DupFences })
}

// excused lists why overlaps were excused: the worst status in each pair.
func excused(m [cut + 1]int) string {
	var parts []string
	for _, st := range []status{found, unsure, cut} {
		parts = append(parts, fmt.Sprintf("%s %d", st, m[st]))
	}
	return strings.Join(parts, ", ")
}

func faultList(kinds []string) string {
	if len(kinds) == 0 {
		return "none"
	}
	return strings.Join(kinds, ",")
}

// printHurried writes what the hurried callers did, and what they did
// while no fault was under way, by Mutex.
func (s summary) printHurried(p func(string, ...any), opts options) {
	if opts.Hurried == 0 || opts.Keys == 0 {
		p("hurried callers:                        none")
		return
	}
	f := s.Roles[colHurried]
	p("hurried callers (a new Mutex per call, waiting 0-%v): %d calls, %d acquisitions (%.1f%%), %d gave up, %d not obtained otherwise",
		hurriedMost, f.Calls, f.Completed+f.Killed, percent(f.Completed+f.Killed, f.Calls), f.GaveUp, f.NotObtained)
	t := s.Hurried.total()
	var per []string
	for _, key := range s.Hurried.keys() {
		c := s.Hurried.Unfaulted[key]
		per = append(per, fmt.Sprintf("%s %d of %d", key, c.Acquired, c.Calls))
	}
	p("  while no fault of the locks was under way: %d acquisitions of %d calls (%s); must be some, of %d calls or more",
		t.Acquired, t.Calls, strings.Join(per, ", "), hurriedCallsMin)
}

// printSamples writes the most goroutines, keys and connections sampled,
// and their bounds.
func (s summary) printSamples(p func(string, ...any), r *record) {
	f := s.Samples
	p("most goroutines in a worker:            %d (worker %d at %.1fs; must be at most %d)", f.Goroutines.n, f.Goroutines.pid, r.since(f.Goroutines.at), f.GoroutineBound)
	p("most connections of a worker to Redis:  %d (worker %d at %.1fs; must be at most %d)", f.Conns.n, f.Conns.pid, r.since(f.Conns.at), f.ConnBound)
	p("most keys on the locks' servers:        %d (at %.1fs; must be at most %d)", f.Keys.n, r.since(f.Keys.at), f.KeyBound)
}

// since returns t, Unix nanoseconds, in seconds from the run's start; 0
// for 0.
func (r *record) since(t int64) float64 {
	if t == 0 {
		return 0
	}
	return float64(t-r.Start.UnixNano()) / 1e9
}

// percent returns n of total in percent; 0 of none.
func percent(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(n) / float64(total)
}
