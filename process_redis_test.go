package uncomplicated_test

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/redigo"
)

// Faults of whole processes, on a real redis-server: the test binary runs
// again as a waiter or a holder of a lock (see TestRedis_helperProcess),
// and the test stops, continues or kills it.

// processEnv makes the test binary a process that waits for or holds a
// Mutex: "<mode> <address> <prefix> <name>", mode one of the
// processModes.
const processEnv = "UNCOMPLICATED_PROCESS"

// processModes are what the process does: queued waits with 100 ms ticks
// and an hour's timeout, and must never get the lock; waiter waits with
// the default options, and says when it gets the lock; holder locks it
// with a 4 s timeout, refreshing every 2 s, and holds it for a minute.
var processModes = map[string][]uncomplicated.Option{
	"queued": {uncomplicated.WithTimeout(time.Hour), uncomplicated.WithTicks(36000)},
	"waiter": nil,
	"holder": {uncomplicated.WithTimeout(4 * time.Second), uncomplicated.WithAutoRefresh(2 * time.Second)},
	"elect":  {uncomplicated.WithTimeout(2 * time.Second)},
	"resign": {uncomplicated.WithTimeout(2 * time.Second)},
	"elects": nil, // campaigns as "elect" does, with the default options
}

// A process is the test binary running in one of the processModes.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	said   []string // its lines on stdout
}

// startProcess runs the test binary as a process of mode on the lock name
// of r, killed when the test ends.
func startProcess(t *testing.T, r *rig, mode, name string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRedis_helperProcess$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s %s", processEnv, mode, redistest.Shared(t).Addr, r.prefix, name))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.said = append(p.said, sc.Text())
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// locked reports whether the process has said that it got the lock.
func (p *process) locked() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.said) > 0
}

func (p *process) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// TestRedis_helperProcess is the process of startProcess: it waits for,
// or holds, the Mutex it is given, for a minute at most, and prints
// "locked" once it holds it; or it campaigns (see campaign).
func TestRedis_helperProcess(t *testing.T) {
	spec := strings.Fields(os.Getenv(processEnv))
	if len(spec) != 4 {
		t.Skip("the process of the tests that stop or kill one")
	}
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", spec[1])
	}}
	c := uncomplicated.NewClient(redigo.New(pool), append([]uncomplicated.Option{uncomplicated.WithPrefix(spec[2])}, processModes[spec[0]]...)...)
	if spec[0] == "elect" || spec[0] == "elects" || spec[0] == "resign" {
		campaign(t, c, spec[0], spec[3])
		return
	}
	m, err := uncomplicated.New(c, uncomplicated.Named(spec[3]))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = m.Do(ctx, func(ctx context.Context) error {
		fmt.Println("locked", m.Fence())
		<-ctx.Done()
		return nil
	})
	if spec[0] == "queued" && err == nil {
		t.Error("the queued process got the lock")
	}
}

// A waiter that is stopped (SIGSTOP) 50 ms before the release, while
// queued ahead of a live waiter, holds the lock up for its claim only: the
// live waiter gets it within 2 s of the release, not the lease. Continued,
// the stopped waiter does not believe it holds the lock while the live
// waiter does; it gets it after, with a higher fence.
func TestRedis_stoppedWaiterBeforeRelease(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	holder, _ := uncomplicated.New(r.client(), uncomplicated.Named("stopped"))
	mustLock(t, holder)
	queue := r.prefix + ":queue:{" + holder.Name() + "}"
	stopped := startProcess(t, r, "waiter", "stopped")
	eventually(t, "the other process's waiter in the queue", func() bool { return r.llen(queue) == 1 })
	live, _ := uncomplicated.New(r.client(), uncomplicated.Named("stopped"))
	done := lockAsync(ctx, live)
	eventually(t, "the live waiter in the queue", func() bool { return r.llen(queue) == 2 })

	stopped.signal(t, syscall.SIGSTOP)
	time.Sleep(50 * time.Millisecond)
	released := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("live waiter's Lock() = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the live waiter has not got the lock 5s after the release")
	}
	if waited := time.Since(released); waited > 2*time.Second {
		t.Errorf("the live waiter got the lock %v after the release; want at most 2s", waited)
	}

	stopped.signal(t, syscall.SIGCONT)
	time.Sleep(1500 * time.Millisecond) // its wake-up, an attempt and more
	if stopped.locked() {
		t.Fatal("the continued waiter says it holds the lock while the live waiter does")
	}
	fence := live.Fence()
	if err := live.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the continued waiter holding the lock", stopped.locked)
	stopped.mu.Lock()
	said := stopped.said[0]
	stopped.mu.Unlock()
	var got uint64
	if _, err := fmt.Sscanf(said, "locked %d", &got); err != nil || got <= fence {
		t.Errorf("the continued waiter said %q; want \"locked\" and a fence above the live waiter's, %d", said, fence)
	}
}

// A waiter whose timeout is shorter than the holder's does not take over a
// holder that refreshes within its own timeout, which is longer than the
// waiter's; once the holder's process is killed, it takes over about the
// holder's timeout after its last Refresh.
func TestRedis_shorterTimeoutWaiter(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	holder := startProcess(t, r, "holder", "patience")
	eventually(t, "the other process holding the lock", holder.locked)
	waiter, _ := uncomplicated.New(r.client(uncomplicated.WithTimeout(time.Second), uncomplicated.WithTakeOver(true)), uncomplicated.Named("patience"))
	done := lockAsync(context.Background(), waiter)
	select {
	case err := <-done:
		t.Fatalf("Lock() = %v, %d within 5s; want it waiting for the holder, which refreshes every 2s", err, waiter.Fence())
	case <-time.After(5 * time.Second):
	}
	holder.signal(t, syscall.SIGKILL)
	killed := time.Now()
	select {
	case err := <-done:
		if err != nil || waiter.Fence() == 0 {
			t.Fatalf("Lock() = %v, fence %d; want the dead holder taken over", err, waiter.Fence())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the dead holder not taken over 10s after it was killed")
	}
	if took := time.Since(killed); took > 4*time.Second+time.Second {
		t.Errorf("taken over %v after the holder was killed; want at most its timeout, 4s, and a tick", took)
	}
}

// A release that never reached Redis (the Pool fails its script) leaves
// the lock to a token of the Client that no hold owns; the same Client's
// next Lock releases it at once, within 2 s rather than the lease.
func TestRedis_lostReleaseRecovered(t *testing.T) {
	r := newRig(t)
	fp := &faultPool{pool: r.pool, hung: make(chan struct{}, 16), stalled: make(chan struct{}, 1)}
	c := uncomplicated.NewClient(redigo.New(fp), uncomplicated.WithPrefix(r.prefix))
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	a, _ := uncomplicated.New(c, uncomplicated.Named("lost"))
	mustLock(t, a)
	fp.dropNextRequest()
	if err := a.Unlock(ctx); !errors.Is(err, errLostReply) {
		t.Fatalf("Unlock() = %v; want the Pool's failure", err)
	}
	if v := r.do("GET", a.Name()); v == nil {
		t.Fatal("the lock is free; want the release lost")
	}
	b, _ := uncomplicated.New(c, uncomplicated.Named("lost"))
	start := time.Now()
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.Lock(lctx); err != nil {
		t.Fatalf("the next Lock() = %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the next Lock() took %v; want at most 2s", took)
	}
}

// campaign is a process of the election tests: for a minute, it leads the
// Election name again and again, saying "leader <fence> <unix ms>" when
// elected; in mode "resign" it resigns 300 ms later, saying "done <unix
// ms>" first; in mode "elect" it leads until it loses the leadership, and
// then says "lost <IsLeader> <Lost closed>".
func campaign(t *testing.T, c *uncomplicated.Client, mode, name string) {
	e, err := c.Election(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		_ = e.Lead(ctx, strconv.Itoa(os.Getpid()), func(fctx context.Context) error {
			l, err := e.Leader(fctx)
			if err != nil {
				return err
			}
			fmt.Println("leader", l.Fence, time.Now().UnixMilli())
			if mode == "resign" {
				time.Sleep(300 * time.Millisecond)
				fmt.Println("done", time.Now().UnixMilli())
				return nil
			}
			<-fctx.Done()
			lost := false
			select {
			case <-e.Lost():
				lost = true
			default:
			}
			fmt.Println("lost", e.IsLeader(), lost)
			return nil
		})
	}
}

// leaderLine is a "leader <fence> <unix ms>" line of a campaigning process.
type leaderLine struct {
	fence uint64
	at    time.Time
	done  time.Time // its "done" line's, in mode "resign"; zero if none
	p     *process
}

// leaders returns the leaderships that processes ps reported, by fence.
func leaders(ps []*process) []leaderLine {
	var ls []leaderLine
	for _, p := range ps {
		p.mu.Lock()
		for _, line := range p.said {
			f := strings.Fields(line)
			switch {
			case len(f) == 3 && f[0] == "leader":
				fence, _ := strconv.ParseUint(f[1], 10, 64)
				ms, _ := strconv.ParseInt(f[2], 10, 64)
				ls = append(ls, leaderLine{fence: fence, at: time.UnixMilli(ms), p: p})
			case len(f) == 2 && f[0] == "done" && len(ls) > 0:
				ms, _ := strconv.ParseInt(f[1], 10, 64)
				ls[len(ls)-1].done = time.UnixMilli(ms)
			}
		}
		p.mu.Unlock()
	}
	slices.SortFunc(ls, func(a, b leaderLine) int { return cmp.Compare(a.fence, b.fence) })
	return ls
}

// Campaigners in 2 and 5 processes, each resigning 300 ms after it is
// elected: one leader at a time, fences rising in the order of the
// elections, each Resign handing over within a second, and an observer
// seeing every leader within a second of its election.
func TestRedis_electionProcesses(t *testing.T) {
	for _, n := range []int{2, 5} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			r := newRig(t)
			e := mustElection(t, r.client(), "elect")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			observed := map[uint64]time.Time{}
			seen := e.Observe(ctx)
			var ps []*process
			for range n {
				ps = append(ps, startProcess(t, r, "resign", "elect"))
			}
			var sampled []uint64 // the leader's fence, read every 10 ms
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for end := time.After(3 * time.Second); ; {
				select {
				case l := <-seen:
					observed[l.Fence] = time.Now()
					continue
				case <-tick.C:
					if l, err := e.Leader(ctx); err == nil {
						sampled = append(sampled, l.Fence)
					}
					continue
				case <-end:
				}
				break
			}
			for _, p := range ps {
				p.signal(t, syscall.SIGSTOP) // no more leaders
			}
			ls := leaders(ps)
			for drain := time.After(time.Second); len(observed) < len(ls); { // the last ones may still be on their way
				select {
				case l := <-seen:
					observed[l.Fence] = time.Now()
					continue
				case <-drain:
				}
				break
			}
			if !slices.IsSorted(sampled) {
				t.Errorf("the leader's fence went down between samples: %v", sampled)
			}
			if len(ls) < 4 {
				t.Fatalf("%d leaderships in 3s; want at least 4", len(ls))
			}
			for i, l := range ls {
				if at, ok := observed[l.fence]; !ok || at.Sub(l.at) > time.Second {
					t.Errorf("leader with fence %d elected at %v observed at %v (%v); want within a second", l.fence, l.at, at, ok)
				}
				if i == 0 || ls[i-1].done.IsZero() {
					continue
				}
				prev := ls[i-1]
				if l.at.Before(prev.done) || l.fence <= prev.fence {
					t.Errorf("fence %d elected at %v before fence %d was done at %v", l.fence, l.at, prev.fence, prev.done)
				}
				if gap := l.at.Sub(prev.done); gap > time.Second {
					t.Errorf("fence %d elected %v after fence %d resigned; want within a second", l.fence, gap, prev.fence)
				}
			}
		})
	}
}

// With the default options, a leader killed (SIGKILL) or stopped
// (SIGSTOP) is replaced within 20s: its lease, 15s, ends.
func TestRedis_electionDefaultsReplaceADeadLeader(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			ps := []*process{startProcess(t, r, "elects", "elect"), startProcess(t, r, "elects", "elect")}
			eventually(t, "a leader", func() bool { return len(leaders(ps)) == 1 })
			first := leaders(ps)[0]
			first.p.signal(t, sig)
			hit := time.Now()
			for len(leaders(ps)) < 2 {
				if time.Since(hit) > 20*time.Second {
					t.Fatalf("no new leader 20s after the leader's %v", sig)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if next := leaders(ps)[1]; next.p == first.p {
				t.Errorf("the %v leader led again", sig)
			}
			t.Logf("new leader %v after the leader's %v", time.Since(hit).Round(time.Millisecond), sig)
		})
	}
}

// A leader killed (SIGKILL) is replaced about the timeout (2 s) after it
// last refreshed; a leader stopped (SIGSTOP) is taken over likewise, and
// once continued it sees its leadership lost: Lead cancelled fn's ctx,
// IsLeader is false and Lost closed.
func TestRedis_electionKilledAndStoppedLeaders(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGSTOP} {
		t.Run(sig.String(), func(t *testing.T) {
			r := newRig(t)
			ps := []*process{startProcess(t, r, "elect", "elect"), startProcess(t, r, "elect", "elect")}
			eventually(t, "a leader", func() bool { return len(leaders(ps)) == 1 })
			first := leaders(ps)[0]
			first.p.signal(t, sig)
			hit := time.Now()
			eventually(t, "a new leader", func() bool { return len(leaders(ps)) == 2 })
			next := leaders(ps)[1]
			if took := time.Since(hit); took < time.Second || took > 5*time.Second || next.p == first.p {
				t.Errorf("the other process elected %v after the leader's %v; want about the timeout, 2s", took, sig)
			}
			if sig != syscall.SIGSTOP {
				return
			}
			first.p.signal(t, syscall.SIGCONT)
			eventually(t, "the continued leader seeing its loss", func() bool {
				first.p.mu.Lock()
				defer first.p.mu.Unlock()
				return slices.Contains(first.p.said, "lost false true")
			})
		})
	}
}
