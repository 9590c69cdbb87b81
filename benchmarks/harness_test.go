package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestOwnRows checks that the rows compared with the Mutex column by column
// exist and let one holder in, as the Mutex does.
func TestOwnRows(t *testing.T) {
	cfg := config{workers: 8, permits: 3}
	for _, name := range []string{"uncomplicated RWMutex writers only", "uncomplicated Semaphore(1)"} {
		i := slices.IndexFunc(allRows(), func(r row) bool { return r.name == name })
		if i < 0 {
			t.Errorf("no row %q", name)
			continue
		}
		if r := allRows()[i]; !r.own || r.capacity(cfg) != 1 || r.ceiling != ceiling {
			t.Errorf("%s: own %v, capacity %d, ceiling %q; want true, 1, %q", name, r.own, r.capacity(cfg), r.ceiling, ceiling)
		}
	}
}

// failingLocker fails every Lock after its first n.
type failingLocker struct{ n *int }

func (l failingLocker) Lock(context.Context) error {
	if *l.n--; *l.n < 0 {
		return errors.New("gone")
	}
	return nil
}
func (failingLocker) Unlock(context.Context) error { return nil }

// TestInterleave_failingRow checks that a row failing in the interleaved
// run leaves it with its error and no p50, and the other rows with theirs.
func TestInterleave_failingRow(t *testing.T) {
	n := warmUps + 3
	failing := row{name: "failing", open: func(string, string, int, int) ([]locker, func(), error) {
		return []locker{failingLocker{&n}}, func() {}, nil
	}}
	good := row{name: ceiling, inProcess: true, open: openSyncMutex}
	d := &deployments{server: &env{}}
	p50s, err := d.interleave([]row{failing, good}, config{uncontended: 20})
	if err == nil || !strings.Contains(err.Error(), "failing") {
		t.Errorf("interleave() error = %v; want the failing row's", err)
	}
	if p50s[0] != 0 || p50s[1] <= 0 {
		t.Errorf("p50s = %v; want none for the failing row and one for the other", p50s)
	}
}

// TestContendOverlaps checks that contend counts an acquisition that finds
// as many holders as the lock allows already in: a semaphore of 3 slots
// that claims 2 overlaps, one that claims 3 does not.
func TestContendOverlaps(t *testing.T) {
	cfg := config{duration: 200 * time.Millisecond, workers: 6, hold: time.Millisecond}
	for claimed, wantOverlaps := range map[int]bool{2: true, 3: false} {
		lockers, _, _ := openChanSemaphore("", "", cfg.workers, 3)
		var res result
		res.merge(contend(lockers, cfg, claimed))
		if got := res.overlaps > 0; got != wantOverlaps {
			t.Errorf("3 slots claimed as %d: %d overlaps in %d acquisitions, want overlaps %v", claimed, res.overlaps, res.acquisitions, wantOverlaps)
		}
	}
}

// TestContendCapacity checks the measures of a lock of several holders:
// utilisation is against all of them (6 workers always asking keep 3
// permits nearly always held), and a hand-off needs every permit taken when
// Lock began, so readers, who never wait, have none.
func TestContendCapacity(t *testing.T) {
	cfg := config{duration: 300 * time.Millisecond, workers: 6, hold: time.Millisecond}
	lockers, _, _ := openChanSemaphore("", "", cfg.workers, 3)
	var sem result
	sem.merge(contend(lockers, cfg, 3))
	if sem.utilisation < 0.5 || sem.utilisation > 1 {
		t.Errorf("semaphore of 3, 6 workers: utilisation %.3f, want in [0.5, 1]", sem.utilisation)
	}
	if sem.handoffs == 0 || sem.handoffs > sem.acquisitions {
		t.Errorf("semaphore of 3, 6 workers: %d hand-offs in %d acquisitions", sem.handoffs, sem.acquisitions)
	}
	cfg.think = time.Millisecond
	lockers, _, _ = openSyncRead("", "", cfg.workers, 0)
	var read result
	read.merge(contend(lockers, cfg, cfg.workers))
	if read.handoffs != 0 || read.overlaps != 0 || read.utilisation > 1 {
		t.Errorf("readers: %d hand-offs, %d overlaps, utilisation %.3f; want none, none, at most 1", read.handoffs, read.overlaps, read.utilisation)
	}
}

func TestRecordHandoff(t *testing.T) {
	for _, c := range []struct {
		begin, prevUnlock int64
		blocked           bool
		want              int
	}{
		{begin: 10, prevUnlock: 20, blocked: true, want: 1},
		{begin: 10, prevUnlock: 20, blocked: false, want: 0}, // a permit was free
		{begin: 10, prevUnlock: 5, blocked: true, want: 0},   // released before Lock began
		{begin: 10, prevUnlock: -1, blocked: true, want: 0},  // no release yet
	} {
		var s workerStats
		s.record(c.begin, 30, 40, c.prevUnlock, c.blocked)
		if len(s.handoffs) != c.want || s.held != 10 || len(s.waits) != 1 || s.waits[0] != 20 {
			t.Errorf("%+v: %d hand-offs, held %d, waits %v", c, len(s.handoffs), s.held, s.waits)
		}
		if c.want == 1 && s.handoffs[0] != 10 {
			t.Errorf("%+v: hand-off %v, want 10", c, s.handoffs[0])
		}
	}
}

func TestMixingEnter(t *testing.T) {
	const r, w = false, true
	for _, c := range []struct {
		in   []bool // holders already in
		next bool
		want bool
	}{
		{nil, r, false},
		{nil, w, false},
		{[]bool{r, r}, r, false},
		{[]bool{r}, w, true},
		{[]bool{w}, r, true},
		{[]bool{w}, w, true},
		{[]bool{r, r, r}, w, true},
	} {
		var m mixing
		for _, h := range c.in {
			m.enter(h)
		}
		if got := m.enter(c.next); got != c.want {
			t.Errorf("%v then write=%v: overlap %v, want %v", c.in, c.next, got, c.want)
		}
		m.leave(c.next)
		for _, h := range c.in {
			m.leave(h)
		}
		if m.state.Load() != 0 {
			t.Errorf("%v: state %d after every leave", c.in, m.state.Load())
		}
	}
}

// TestMixOverlaps checks that mix counts overlaps: readers that never
// lock overlap the writers; a sync.RWMutex never does.
func TestMixOverlaps(t *testing.T) {
	cfg := config{duration: 200 * time.Millisecond, workers: 4, hold: time.Millisecond, reads: 0.5}
	for name, want := range map[string]bool{"broken": true, "sync.RWMutex": false} {
		lockers, _, _ := openMixSync("", "", cfg.workers)
		if name == "broken" {
			for i, l := range lockers {
				lockers[i] = lockFreeReads{l.(syncRWLocker)}
			}
		}
		m, _ := mix(lockers, cfg)
		if got := m.overlaps.Load() > 0; got != want {
			t.Errorf("%s: %d overlaps, want overlaps %v", name, m.overlaps.Load(), want)
		}
	}
}

// lockFreeReads reads without locking.
type lockFreeReads struct{ syncRWLocker }

func (lockFreeReads) RLock(context.Context) error   { return nil }
func (lockFreeReads) RUnlock(context.Context) error { return nil }

func TestParseFlags(t *testing.T) {
	for _, c := range []struct {
		args    []string
		permits int
		ok      bool
	}{
		{nil, 4, true},
		{[]string{"-workers", "1"}, 1, true},
		{[]string{"-workers", "5"}, 2, true},
		{[]string{"-permits", "3"}, 3, true},
		{[]string{"-permits", "-1"}, 0, false},
		{[]string{"-reads", "1.5"}, 0, false},
		{[]string{"-only", "mix sync.RWMutex,uncomplicated Semaphore"}, 4, true},
		{[]string{"-only", "uncomplicated RWMutex writers only, uncomplicated Semaphore(1)"}, 4, true},
		{[]string{"-only", "uncomplicated RW write"}, 0, false},
		{[]string{"-json", "-only", "uncomplicated"}, 4, true},
		{[]string{"-only", "nope"}, 0, false},
		{[]string{"-only", "uncomplicated,uncomplicated go-redis,uncomplicated cluster", "-scale-cluster", "100"}, 4, true},
		{[]string{"-scale-cluster", "-1"}, 0, false},
		{[]string{"-workload", "fleet", "-keys", "10", "-goroutines", "2", "-rounds", "1", "-only", "uncomplicated rueidis"}, 4, true},
		{[]string{"-workload", "fleet", "-only", "uncomplicated rueidis,rueidislock,uncomplicated valkey-go,valkeylock"}, 4, true},
		{[]string{"-only", "uncomplicated valkey"}, 0, false},
		{[]string{"-workload", "hot"}, 0, false},
		{[]string{"-workload", "fleet", "-rounds", "0"}, 0, false},
		{[]string{"-scale-client", "rueidis"}, 4, true},
		{[]string{"-scale-client", "redigo"}, 0, false},
	} {
		cfg, err := parseFlags(c.args, io.Discard)
		if (err == nil) != c.ok || c.ok && cfg.semPermits() != c.permits {
			t.Errorf("%v: permits %d, error %v", c.args, cfg.semPermits(), err)
		}
	}
}

func TestNeedsCluster(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{nil, true}, // every row
		{[]string{"-only", "uncomplicated,uncomplicated go-redis"}, false},
		{[]string{"-only", "uncomplicated cluster", "-json"}, true},
		{[]string{"-only", "uncomplicated", "-scale-cluster", "100"}, true},
		{[]string{"-only", "uncomplicated", "-scale-cluster", "100", "-json"}, false}, // -json skips the scale runs
	} {
		cfg, err := parseFlags(c.args, io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if got := cfg.needsCluster(); got != c.want {
			t.Errorf("%v: needsCluster() = %v, want %v", c.args, got, c.want)
		}
	}
}

func TestCPUTime(t *testing.T) {
	for _, c := range []struct {
		text string
		want time.Duration
		ok   bool
	}{
		{"# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:0.500001\r\nused_cpu_sys_children:9.000000\r\n", 1750001 * time.Microsecond, true},
		{"used_cpu_user:0.000000\nused_cpu_sys:0.000000\n", 0, true},
		{"# CPU\r\nused_cpu_user:0.5\r\n", 0, false},
		{"used_cpu_user:x\nused_cpu_sys:1\n", 0, false},
	} {
		got, err := cpuTime(c.text)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("cpuTime(%q) = %v, %v; want %v, ok %v", c.text, got, err, c.want, c.ok)
		}
	}
}

// TestCPUTimeSum checks that cpuTime sums the replies of several nodes,
// and fails when any of them lacks a field.
func TestCPUTimeSum(t *testing.T) {
	a := "# CPU\r\nused_cpu_sys:1.000000\r\nused_cpu_user:0.500000\r\n"
	b := "# CPU\r\nused_cpu_sys:0.250000\r\nused_cpu_user:0.000001\r\n"
	if got, err := cpuTime(a, b); got != 1750001*time.Microsecond || err != nil {
		t.Errorf("cpuTime(a, b) = %v, %v; want 1.750001s, nil", got, err)
	}
	if got, err := cpuTime(); got != 0 || err != nil {
		t.Errorf("cpuTime() = %v, %v; want 0, nil", got, err)
	}
	if _, err := cpuTime(a, "# CPU\r\nused_cpu_sys:1.0\r\n"); err == nil {
		t.Errorf("cpuTime(a, no used_cpu_user): no error")
	}
}

// TestPrintJSON checks the keys that compare.sh reads.
func TestPrintJSON(t *testing.T) {
	r := result{name: ours, lockUnlock: 150 * time.Microsecond, waitP99: 12500 * time.Microsecond,
		handoffP50: 300 * time.Microsecond, handoffs: 1, cpuPerAcq: 45 * time.Microsecond, acquisitions: 10}
	var b strings.Builder
	if err := printJSON(&b, []result{r}); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(b.String()), &got); err != nil {
		t.Fatalf("%q: %v", b.String(), err)
	}
	for k, want := range map[string]any{"name": ours, "wait_p99_ms": 12.5, "handoff_p50_us": 300.0,
		"lock_unlock_p50_us": 150.0, "redis_cpu_us_per_acquisition": 45.0, "errors": 0.0, "overlaps": 0.0} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if strings.Count(b.String(), "\n") != 1 {
		t.Errorf("%q: want one line", b.String())
	}
}

func TestSubscribedTo(t *testing.T) {
	list := "id=3 addr=127.0.0.1:1 fd=8 name= sub=0 psub=0 ssub=0 multi=-1 cmd=client|list\n" +
		"id=4 addr=127.0.0.1:2 fd=9 name= sub=2 psub=0 ssub=0 multi=-1 cmd=subscribe\n" +
		"id=5 addr=127.0.0.1:3 fd=10 name= sub=0 psub=1 multi=-1 cmd=psubscribe\n" +
		"id=6 addr=127.0.0.1:4 fd=11 name= sub=0 psub=0 ssub=4096 multi=-1 cmd=ssubscribe\n" +
		"id=7 addr=127.0.0.1:5 fd=12 name=ssub=9 sub=1 psub=0 ssub=1 multi=-1 cmd=ssubscribe\n"
	for _, c := range []struct {
		kinds []string
		want  int
	}{
		{[]string{channelSubs, patternSubs, shardSubs}, 4},
		{[]string{shardSubs}, 2},
		{[]string{channelSubs}, 2},
		{nil, 0},
	} {
		if got := subscribedTo(list, c.kinds...); got != c.want {
			t.Errorf("subscribedTo(list, %q) = %d, want %d", c.kinds, got, c.want)
		}
	}
	if got := subscribedTo("", shardSubs); got != 0 {
		t.Errorf("subscribedTo(\"\", ssub) = %d, want 0", got)
	}
}

// TestPrintBaseRatios checks that each row of our Mutex on another client
// or deployment is divided by its base, and that a row whose base did not
// run is left out.
func TestPrintBaseRatios(t *testing.T) {
	results := []result{
		{name: ours, capacity: 1, lockUnlock: 100, interleaved: 100, handoffP50: 200, handoffs: 5, cpuPerAcq: 50, acquisitions: 10},
		{name: ownGoredis, base: ours, capacity: 1, lockUnlock: 110, interleaved: 105, handoffP50: 180, handoffs: 5, cpuPerAcq: 60, acquisitions: 10},
		{name: ownCluster, base: ownGoredis, cluster: true, capacity: 1, lockUnlock: 132, handoffP50: 270, handoffs: 5, cpuPerAcq: 180, acquisitions: 10},
	}
	var b strings.Builder
	printBaseRatios(&b, results)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want a header, a rule and 2 rows:\n%s", len(lines), b.String())
	}
	for i, want := range []string{
		"uncomplicated go-redis ÷ uncomplicated | 1.10× | 1.05× | 0.90×",
		"uncomplicated cluster ÷ uncomplicated go-redis | 1.20× | -  | 1.50×",
	} {
		if got := strings.Join(strings.Fields(lines[2+i]), " "); !strings.Contains(got, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("row %d = %q, want it to contain %q", i, lines[2+i], want)
		}
	}
	if !strings.Contains(lines[3], "3.00×") {
		t.Errorf("cluster row %q: want Redis CPU / acquisition 3.00×", lines[3])
	}
	b.Reset()
	printBaseRatios(&b, results[1:])
	if strings.Contains(b.String(), "go-redis ÷") {
		t.Errorf("without the %s row:\n%s", ours, b.String())
	}
}

// TestPrintRatios_interleaved checks that the table against the best peer
// has the interleaved lock+unlock, and that each of our clients' Mutex is
// divided by the fastest peer's interleaved time, not by its own run's.
func TestPrintRatios_interleaved(t *testing.T) {
	results := []result{
		{name: ours, capacity: 1, lockUnlock: 300, interleaved: 105},
		{name: ownGoredis, base: ours, capacity: 1, lockUnlock: 100, interleaved: 120},
		{name: ownRueidis, base: ours, capacity: 1, lockUnlock: 100, interleaved: 90},
		{name: ownValkey, base: ours, capacity: 1, lockUnlock: 100, interleaved: 95},
		{name: "redsync 1ms", capacity: 1, lockUnlock: 80, interleaved: 100},
		{name: "redislock 1ms", capacity: 1, lockUnlock: 200, interleaved: 150},
	}
	var b strings.Builder
	printRatios(&b, results)
	out := b.String()
	for _, want := range []string{
		"| lock+unlock p50 µs, interleaved | 0.10 | 0.10 (redsync 1ms) | 1.05× |",
		"Interleaved lock+unlock ÷ the fastest peer's (redsync 1ms, 0.10): uncomplicated 1.05×, uncomplicated go-redis 1.20×, uncomplicated rueidis 0.90×, uncomplicated valkey-go 0.95×.",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for p, want := range map[float64]time.Duration{0.5: 3, 0.99: 5, 0.2: 1, 0.21: 2} {
		if got := percentile(ds, p); got != want {
			t.Errorf("percentile(%v) = %v, want %v", p, got, want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile(nil) = %v, want 0", got)
	}
}

// A fleet row reads as JSON in the units of its table, and a failed one
// as its failure.
func TestFleetJSON(t *testing.T) {
	r := fleetResult{name: "x", pairs: 500, elapsed: 2 * time.Second, cmdsPerPair: 7, cpuPerPair: 18500 * time.Nanosecond, keysLeft: 3, memoryLeft: 40, errors: 1}
	if j := r.json(); j.Name != "x" || j.PairsPerSecond != 250 || j.CPUPerPairUs != 18.5 || j.CmdsPerPair != 7 || j.KeysLeft != 3 || j.MemoryLeft != 40 || j.Errors != 1 || j.Failed != "" {
		t.Errorf("json() = %+v", j)
	}
	r.err = errors.New("no server")
	if j := r.json(); j.Failed != "no server" || j.PairsPerSecond != 0 {
		t.Errorf("json() of a failed row = %+v", j)
	}
}

// medianFleet reports the median Redis CPU and rate of its runs, and all
// their errors.
func TestMedianFleet(t *testing.T) {
	runs := []fleetResult{
		{pairs: 100, elapsed: time.Second, cpuPerPair: 30, errors: 1},
		{pairs: 300, elapsed: time.Second, cpuPerPair: 10},
		{pairs: 200, elapsed: time.Second, cpuPerPair: 20, errors: 2},
	}
	m := medianFleet(runs)
	if m.cpuPerPair != 20 || m.rate() != 200 || m.errors != 3 {
		t.Errorf("medianFleet = %v of CPU a pair, %v pairs/s, %d errors; want 20ns, 200, 3", m.cpuPerPair, m.rate(), m.errors)
	}
}

// Ours is compared with its peer round by round: the median of the
// rounds' ratios, not the ratio of the rows' medians, which here would be
// 1 and 1.
func TestPairedRatios(t *testing.T) {
	run := func(pairs int64, cpu time.Duration) fleetResult {
		return fleetResult{pairs: pairs, elapsed: time.Second, cpuPerPair: cpu}
	}
	ours := []fleetResult{run(100, 10), run(200, 20), run(300, 30)}
	peer := []fleetResult{run(200, 20), run(300, 30), run(100, 10)}
	cpu, rate, ok := pairedRatios(ours, peer)
	if !ok || math.Abs(cpu-2.0/3) > 1e-9 || math.Abs(rate-2.0/3) > 1e-9 {
		t.Errorf("pairedRatios = %v, %v, %v; want 2/3, 2/3, true", cpu, rate, ok)
	}
	if _, _, ok := pairedRatios(ours, peer[:2]); ok {
		t.Error("pairedRatios of rounds that differ in number: ok")
	}
	if _, _, ok := pairedRatios(ours, []fleetResult{run(1, 1), run(0, 0), run(1, 1)}); ok {
		t.Error("pairedRatios with a round of no pairs: ok")
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of 1..4 = %v, want 2.5", m)
	}
}

// Each of ours runs right next to its peer, first in one round and
// second in the next; every row runs once a round, and over two rounds
// every row's places sum to the same.
func TestFleetOrder(t *testing.T) {
	rows := allFleetRows()
	place := map[string]int{}
	for round := range 2 {
		order := fleetOrder(rows, round)
		at := map[string]int{}
		for i, r := range order {
			at[r.name] = i
			place[r.name] += i
		}
		if len(order) != len(rows) || len(at) != len(rows) {
			t.Fatalf("round %d: %d rows, %d of them named apart; want %d", round, len(order), len(at), len(rows))
		}
		for _, r := range rows {
			if r.peer == "" {
				continue
			}
			if want := 1 - 2*round; at[r.peer]-at[r.name] != want {
				t.Errorf("round %d: %s at %d, its peer %s at %d; want the peer %+d from it", round, r.name, at[r.name], r.peer, at[r.peer], want)
			}
		}
	}
	for _, r := range rows {
		if place[r.name] != len(rows)-1 {
			t.Errorf("%s: places summed over two rounds %d; want %d", r.name, place[r.name], len(rows)-1)
		}
	}
	if rows[0].name != allFleetRows()[0].name {
		t.Error("fleetOrder reordered the rows it was given")
	}
	if got := fleetOrder(rows[:1], 0); len(got) != 1 || got[0].name != rows[0].name {
		t.Errorf("fleetOrder of one of ours without its peer = %v", got)
	}
}
