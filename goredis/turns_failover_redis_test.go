package goredis_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/goredis"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// Worker processes take turns on one lock across SENTINEL FAILOVERs, with
// Sentinel's default periods, as a user reported: four processes, each
// with a go-redis failover client built as the README builds it and one
// Client, loop Do with 5 ms holds under a ctx of 3 s. Before a failover
// the queue hands the lock round, and no worker waits long. After one, a
// worker must not go long without the lock while the others pass it
// between themselves.

// turnsEnv makes the test binary a worker of TestSentinel_turnsAcrossFailovers
// (see TestSentinel_turnsWorker): "<sentinel addresses, comma-separated>
// <lock name> <client name>".
const turnsEnv = "UNCOMPLICATED_TURNS_WORKER"

const (
	turnsWorkers = 4
	turnsHold    = 5 * time.Millisecond // how long a worker holds the lock
	turnsCtx     = 3 * time.Second      // the ctx of each Do
	// The longest a worker may go without the lock while it tries: before
	// any failover, and after each, from when the sentinels and the new
	// master agree on it.
	turnsBefore = time.Second
	turnsAfter  = 2500 * time.Millisecond
)

// Each of four worker processes must get the lock within 1 s of trying
// before any failover, and within 2.5 s after each of two SENTINEL
// FAILOVERs (back and forth) once the sentinels and the new master agree
// on it, the sentinels keeping their default periods: the old master is
// made a replica only some 10 s after the switch, and until then takes
// writes, and keeps the connections made to it.
func TestSentinel_turnsAcrossFailovers(t *testing.T) {
	t.Parallel() // mostly waiting for the sentinels, as the other Sentinel tests
	s := redistest.StartSentinelDefaults(t)
	const name = "turns"
	began := time.Now()
	var ws []*turnsWorker
	for i := range turnsWorkers {
		ws = append(ws, startTurnsWorker(t, s, name, fmt.Sprintf("turns-w%d", i)))
	}
	// Warm up: every worker has had the lock, and the queue has formed.
	deadline := time.Now().Add(15 * time.Second)
	for _, w := range ws {
		for w.holds() == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("worker %s has not had the lock 15s after the workers started", w.name)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(500 * time.Millisecond)
	tl := turnsTimeline{start: time.Now()}
	time.Sleep(3 * time.Second)
	for k := range 2 {
		f := turnsFailover{issued: time.Now()}
		old, next, err := s.Switch()
		if err != nil {
			t.Fatal(err)
		}
		f.agreed = time.Now()
		f.from, f.to = old.Addr, next.Addr
		if err := s.AwaitReplica(old, next); err != nil {
			t.Fatal(err)
		}
		f.replica = time.Now()
		tl.failovers = append(tl.failovers, f)
		t.Logf("failover %d: %s -> %s; the sentinels and the new master agreed %v after SENTINEL FAILOVER, the old master was its replica in sync %v after that",
			k+1, f.from, f.to, f.agreed.Sub(f.issued).Round(time.Millisecond), f.replica.Sub(f.agreed).Round(time.Millisecond))
		time.Sleep(2 * time.Second)
	}
	tl.end = time.Now()
	for _, w := range ws {
		w.stop(t)
	}
	t.Logf("the whole run took %v", time.Since(began).Round(time.Second))

	phases := tl.phases()
	for _, w := range ws {
		w.check(t, phases)
	}
}

// A turnsFailover is when one failover of the run happened.
type turnsFailover struct {
	from, to string    // the old and the new master
	issued   time.Time // SENTINEL FAILOVER sent
	agreed   time.Time // every sentinel gives the new master, which says it is one
	replica  time.Time // the old master is the new one's replica in sync
}

// A turnsTimeline is the run: from when every worker had the lock, through
// the failovers, to when the workers were told to stop.
type turnsTimeline struct {
	start, end time.Time
	failovers  []turnsFailover
}

// A turnsPhase is a part of the run over which the longest time a worker
// goes without the lock is judged.
type turnsPhase struct {
	name     string
	from, to time.Time
	limit    time.Duration
}

// phases returns the part before the first failover, and the part after
// each, from when the sentinels and the new master agreed to the next
// SENTINEL FAILOVER or the end. What comes between SENTINEL FAILOVER and
// the agreement is not judged.
func (tl turnsTimeline) phases() []turnsPhase {
	ps := []turnsPhase{{name: "before any failover", from: tl.start, to: tl.end, limit: turnsBefore}}
	for i, f := range tl.failovers {
		ps[len(ps)-1].to = f.issued
		ps = append(ps, turnsPhase{name: fmt.Sprintf("after failover %d", i+1), from: f.agreed, to: tl.end, limit: turnsAfter})
	}
	return ps
}

// A turnsWorker is a worker process, and what it said.
type turnsWorker struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.Closer
	exited chan struct{}

	mu      sync.Mutex
	started time.Time    // when it began its first Do
	ended   time.Time    // when it stopped trying
	held    []turnsHeld  // its holds, in order
	failed  []turnsError // its Do calls that failed
	other   []string     // anything else it said on stdout
}

// A turnsHeld is one hold: when the worker's function began and ended.
type turnsHeld struct{ got, released time.Time }

// A turnsError is a Do call that failed.
type turnsError struct {
	began, at time.Time
	err       string
}

// startTurnsWorker runs the test binary as a worker on the lock name
// through the sentinels of s; it is killed when the test ends.
func startTurnsWorker(t *testing.T, s *redistest.Sentinel, name, client string) *turnsWorker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSentinel_turnsWorker$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s", turnsEnv, strings.Join(s.Addrs(), ","), name, client))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &turnsWorker{name: client, cmd: cmd, stdin: in, exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.said(sc.Text())
		}
		_ = cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-w.exited
	})
	return w
}

// said records a line of the worker's (see TestSentinel_turnsWorker).
func (w *turnsWorker) said(line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := strings.Fields(line)
	at := func(i int) time.Time {
		if i >= len(f) {
			return time.Time{}
		}
		ns, _ := strconv.ParseInt(f[i], 10, 64)
		return time.Unix(0, ns)
	}
	switch {
	case len(f) >= 3 && f[0] == "turns" && f[1] == "start":
		w.started = at(2)
	case len(f) >= 3 && f[0] == "turns" && f[1] == "end":
		w.ended = at(2)
	case len(f) >= 4 && f[0] == "turns" && f[1] == "hold":
		w.held = append(w.held, turnsHeld{at(2), at(3)})
	case len(f) >= 4 && f[0] == "turns" && f[1] == "fail":
		w.failed = append(w.failed, turnsError{at(2), at(3), strings.Join(f[4:], " ")})
	default:
		w.other = append(w.other, line)
	}
}

func (w *turnsWorker) holds() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.held)
}

// stop tells the worker to stop, by closing its stdin, and waits for it.
func (w *turnsWorker) stop(t *testing.T) {
	t.Helper()
	_ = w.stdin.Close()
	select {
	case <-w.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("worker %s still runs 10s after it was told to stop", w.name)
		_ = w.cmd.Process.Kill()
		<-w.exited
	}
	if w.ended.IsZero() {
		t.Errorf("worker %s did not say it stopped; it said: %q", w.name, w.other)
	}
}

// check fails t if, in a phase, the worker went longer than the phase's
// limit without the lock while it tried, and logs the longest for each.
func (w *turnsWorker) check(t *testing.T, phases []turnsPhase) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	// The times it tried without the lock: from its start to its first
	// hold, between holds, and from its last hold to its end.
	var waits [][2]time.Time
	from := w.started
	for _, h := range w.held {
		waits = append(waits, [2]time.Time{from, h.got})
		from = h.released
	}
	waits = append(waits, [2]time.Time{from, w.ended})
	var line strings.Builder
	fmt.Fprintf(&line, "worker %s:", w.name)
	for _, p := range phases {
		var longest time.Duration
		var at time.Time
		for _, wait := range waits {
			a, b := maxTime(wait[0], p.from), minTime(wait[1], p.to)
			if d := b.Sub(a); d > longest {
				longest, at = d, a
			}
		}
		holds, fails := 0, 0
		for _, h := range w.held {
			if !h.got.Before(p.from) && h.got.Before(p.to) {
				holds++
			}
		}
		for _, f := range w.failed {
			if !f.at.Before(p.from) && f.at.Before(p.to) {
				fails++
			}
		}
		fmt.Fprintf(&line, " %s: longest wait %v (from +%v), %d holds, %d Do failed;", p.name,
			longest.Round(time.Millisecond), at.Sub(p.from).Round(time.Millisecond), holds, fails)
		if longest > p.limit {
			t.Errorf("worker %s went %v without the lock %s, from %v into it; want at most %v",
				w.name, longest.Round(time.Millisecond), p.name, at.Sub(p.from).Round(time.Millisecond), p.limit)
		}
	}
	t.Log(strings.TrimSuffix(line.String(), ";"))
	if len(w.failed) > 0 {
		f := w.failed[len(w.failed)-1]
		t.Logf("worker %s: %d Do calls failed, the last after %v: %s", w.name, len(w.failed), f.at.Sub(f.began).Round(time.Millisecond), f.err)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// TestSentinel_turnsWorker is a worker of TestSentinel_turnsAcrossFailovers:
// it loops Do on its lock, holding it 5 ms, under a ctx of 3 s each, until
// its stdin closes, and says on stdout, in Unix nanoseconds, when it
// began ("turns start"), each hold ("turns hold <got> <released>"), each
// Do that failed ("turns fail <began> <failed> <error>") and when it
// stopped ("turns end").
func TestSentinel_turnsWorker(t *testing.T) {
	spec := strings.Fields(os.Getenv(turnsEnv))
	if len(spec) != 3 {
		t.Skip("a worker process of TestSentinel_turnsAcrossFailovers")
	}
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster",
		SentinelAddrs: strings.Split(spec[0], ","), ContextTimeoutEnabled: true, ClientName: spec[2]})
	defer rdb.Close()
	locks := goredis.NewClient(rdb)
	defer locks.Close()
	m, err := uncomplicated.New(locks, uncomplicated.Named(spec[1]))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes it
		cancel()
	}()
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex // guards out
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		_ = out.Flush()
	}
	say("turns start %d", time.Now().UnixNano())
	for ctx.Err() == nil {
		dctx, dcancel := context.WithTimeout(ctx, turnsCtx)
		began := time.Now()
		err := m.Do(dctx, func(context.Context) error {
			got := time.Now()
			time.Sleep(turnsHold)
			say("turns hold %d %d", got.UnixNano(), time.Now().UnixNano())
			return nil
		})
		dcancel()
		if err != nil && ctx.Err() == nil {
			say("turns fail %d %d %s", began.UnixNano(), time.Now().UnixNano(), strings.ReplaceAll(err.Error(), "\n", " "))
		}
	}
	say("turns end %d", time.Now().UnixNano())
}
