package main

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/ulocktest"
)

// Tests of ulock run: each runs ulock processes, whose COMMANDs are small
// shell scripts.

func TestRun_exclusive(t *testing.T) {
	e := newEnv(t)
	log := e.path("log")
	script := `echo "start $$ $(date +%s%N)" >> "$0"; sleep 0.1; echo "end $$ $(date +%s%N)" >> "$0"`
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				if r := e.ulock(t, "run", "job", "--", "sh", "-c", script, log); r.Code != 0 {
					t.Errorf("ulock run: exit %d, stderr %q", r.Code, r.Stderr)
				}
			}
		}()
	}
	wg.Wait()

	if n := strings.Count(read(log), "\n") + 1; n != 12 {
		t.Fatalf("%d lines in the log; want 12:\n%s", n, read(log))
	}
	// Each start is followed by the end of the same run, and the next
	// start comes after that end: the intervals are disjoint.
	var lastEnd int64
	for i, r := range runs(t, log) {
		begin, _ := strconv.ParseInt(r[0][2], 10, 64)
		end, _ := strconv.ParseInt(r[1][2], 10, 64)
		if begin < lastEnd || end < begin {
			t.Errorf("run %d: [%d, %d] overlaps the previous one, which ended at %d", i, begin, end, lastEnd)
		}
		lastEnd = end
	}
}

func TestRun_exitStatus(t *testing.T) {
	e := newEnv(t)
	notExec := e.path("not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		command []string
		code    int
		stderr  string
	}{
		{"exit 0", []string{"true"}, 0, ""},
		{"exit 3", []string{"sh", "-c", "exit 3"}, 3, ""},
		{"SIGKILL", []string{"sh", "-c", "kill -KILL $$"}, 128 + 9, ""},
		{"SIGTERM", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15, ""},
		{"not found", []string{"ulock-no-such-command"}, 127, "executable file not found"},
		{"not executable", []string{notExec}, 126, "permission denied"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.ulock(t, append([]string{"run", "job", "--"}, tc.command...)...)
			if tc.stderr != "" {
				ulocktest.WantOneLine(t, r, tc.code, tc.stderr)
			} else if r.Code != tc.code || r.Stderr != "" {
				t.Errorf("exit %d, stderr %q; want %d and nothing", r.Code, r.Stderr, tc.code)
			}
			if info := e.inspect(t, "job"); info.Held() {
				t.Errorf("after ulock run: %+v; want the lock released", info)
			}
		})
	}
}

func TestRun_environment(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		kind   string
		fenced bool
	}{
		{"mutex", true}, {"mutex", true}, {"rwmutex-write", true}, {"rwmutex-read", false}, {"semaphore:2", true},
	}
	last := map[string]uint64{} // by name
	for _, tc := range cases {
		name := strings.ReplaceAll(tc.kind, ":", "-")
		p := ulocktest.Start(t, []string{"ULOCK_FENCE=inherited"}, "run", "--redis=redis://"+e.srv.Addr+"/0", "--prefix", e.prefix,
			"--kind", tc.kind, name, "--", "sh", "-c", `echo "$ULOCK_NAME ${ULOCK_FENCE-unset}"`)
		r := p.Wait(t)
		got, fence, _ := strings.Cut(strings.TrimSuffix(r.Stdout, "\n"), " ")
		f, err := strconv.ParseUint(fence, 10, 64)
		ok := r.Code == 0 && got == e.prefix+":"+name && (tc.fenced && err == nil && f > last[name] || !tc.fenced && fence == "unset")
		if !ok {
			t.Errorf("--kind %s: exit %d, stdout %q; want 0, the name and a fence above %d (none for a reader)", tc.kind, r.Code, r.Stdout, last[name])
		}
		last[name] = f
	}
}

func TestRun_busy(t *testing.T) {
	e := newEnv(t)
	// A timeout of 300ms, so that a waiter with --timeout 300ms finds the
	// holder stale; a lease of a minute, so that it lasts the test.
	e.hold(t, "job", "t-holder", uncomplicated.WithTimeout(300*time.Millisecond), uncomplicated.WithLease(time.Minute))
	marker := e.path("ran")
	busy := "busy: " + e.prefix + ":job held by t-holder for "

	r := e.ulock(t, "run", "--wait", "0", "job", "--", "touch", marker)
	ulocktest.WantOneLine(t, r, 75, busy)
	if r.Took > 3*time.Second {
		t.Errorf("--wait 0 took %v; want one attempt", r.Took)
	}
	ulocktest.WantOneLine(t, e.ulock(t, "run", "job", "--wait=0", "--conflict-exit-code", "9", "--", "touch", marker), 9, busy)

	r = e.ulock(t, "run", "--wait", "300ms", "job", "--", "touch", marker)
	ulocktest.WantOneLine(t, r, 75, busy, "gave up after --wait 300ms")
	if r.Took < 300*time.Millisecond || r.Took > 5*time.Second {
		t.Errorf("--wait 300ms took %v", r.Took)
	}
	ulocktest.WantOneLine(t, e.ulock(t, "run", "--timeout", "300ms", "job", "--", "touch", marker), 75,
		"stale: "+e.prefix+":job held by t-holder", "stale: one holder token for 3")
	if exists(marker) {
		t.Error("COMMAND ran without the lock")
	}
}

// alive reports whether the process pid runs: it exists and is not a
// zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z")
}

func TestRun_takeOverAfterKill(t *testing.T) {
	e := newEnv(t)
	first := e.path("first")
	p := e.start(t, "run", "--timeout", "1s", "--lease", "1m", "job", "--",
		"sh", "-c", `echo "$$ $ULOCK_FENCE" > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 30`, first)
	await(t, "the first COMMAND runs", func() bool { return exists(first) })
	fields := strings.Fields(read(first))
	pid, _ := strconv.Atoi(fields[0])
	fence, _ := strconv.ParseUint(fields[1], 10, 64)
	takeOver := []string{"run", "--policy", "takeover", "--timeout", "1s", "--lease", "1m", "job"}
	// While the first ulock lives, it renews its hold every third of its
	// timeout, so the take-over policy leaves it alone.
	ulocktest.WantOneLine(t, e.ulock(t, append(takeOver, "--wait", "2s", "--", "true")...), 75, "busy")
	p.Kill(t)
	if runtime.GOOS == "linux" { // Pdeathsig
		await(t, "the killed ulock's COMMAND dies", func() bool { return !alive(pid) })
	}

	r := e.ulock(t, append(takeOver, "--", "sh", "-c", "echo $ULOCK_FENCE")...)
	got, _ := strconv.ParseUint(strings.TrimSpace(r.Stdout), 10, 64)
	if r.Code != 0 || got <= fence {
		t.Errorf("the take-over: exit %d, fence %q, stderr %q; want 0 and a fence above %d", r.Code, r.Stdout, r.Stderr, fence)
	}
	// The first hold's lease has 59 s left: the waiter took it over after
	// its patience, a second, not after the lease.
	if r.Took < 900*time.Millisecond || r.Took > 5*time.Second {
		t.Errorf("the take-over took %v; want about 1s", r.Took)
	}
}

// TestRun_holderTimeout checks that a waiter judges a holder by the
// holder's own --timeout when it is longer than the waiter's: a take-over
// waiter with --timeout 1s leaves a --timeout 4s holder alone while it
// renews (every 4s/3), and takes it over once it has been killed and its
// last token has sat for 4 s.
func TestRun_holderTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.path("first")
	holder := e.start(t, "run", "--timeout", "4s", "--lease", "1m", "--label", "t-holder", "job", "--",
		"sh", "-c", `echo $ULOCK_FENCE > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 30`, first)
	await(t, "the holder's COMMAND runs", func() bool { return exists(first) })
	fence, _ := strconv.ParseUint(read(first), 10, 64)
	waiter := e.start(t, "run", "--timeout", "1s", "--policy", "takeover", "--label", "t-waiter", "job", "--",
		"sh", "-c", "echo $ULOCK_FENCE")
	await(t, "the waiter waits in the queue", func() bool { return len(e.inspect(t, "job").Waiters) == 1 })
	if info := e.inspect(t, "job"); !info.Held() || len(info.Waiters) != 1 ||
		info.Holders[0].Label != "t-holder" || info.Holders[0].Timeout != 4*time.Second ||
		info.Waiters[0].Label != "t-waiter" || info.Waiters[0].Timeout != time.Second {
		t.Fatalf("%+v; want t-holder holding it with timeout 4s, t-waiter waiting with 1s", info)
	}

	// By its own timeout the waiter would find the holder stuck between
	// two renewals; by the holder's it finds it busy.
	time.Sleep(2500 * time.Millisecond)
	if waiter.Exited() {
		r := waiter.Wait(t)
		t.Fatalf("the waiter exited %d within 2.5s, stdout %q, stderr %q; want it waiting", r.Code, r.Stdout, r.Stderr)
	}
	if info := e.inspect(t, "job"); !info.Held() || info.Holders[0].Label != "t-holder" || info.Fence != fence {
		t.Fatalf("after 2.5s: %+v; want t-holder holding it, fence %d", info, fence)
	}

	holder.Kill(t)
	killed := time.Now()
	r := waiter.Wait(t)
	took := time.Since(killed)
	got, _ := strconv.ParseUint(strings.TrimSpace(r.Stdout), 10, 64)
	if r.Code != 0 || got <= fence || r.Stderr != "" {
		t.Errorf("the take-over: exit %d, fence %q, stderr %q; want 0 and a fence above %d", r.Code, r.Stdout, r.Stderr, fence)
	}
	// The last renewal came at most 4s/3 before the kill, and its token
	// is stuck 4 s after it: not 1 s (the waiter's timeout), nor a minute
	// (the lease).
	if took < 2*time.Second || took > 7*time.Second {
		t.Errorf("the take-over came %v after the kill; want between 2.7s and 4s", took)
	}
}

// trapping is a COMMAND that writes the signal it gets to the file $0,
// then exits 5; it writes $0.ready once it has set its traps. Its touch
// and sleep are in its process group, and so get the signal too and die
// of it: its stderr is /dev/null so that sh does not say so ("Hangup").
const trapping = `exec 2>/dev/null; for sig in INT TERM HUP; do trap "echo $sig > \"\$0\"; exit 5" $sig; done
touch "$0.ready"; while :; do sleep 0.05; done`

func TestRun_lost(t *testing.T) {
	cases := []struct {
		name    string
		command string
		marker  string
	}{
		{"COMMAND exits on SIGTERM", trapping, "TERM"},
		{"COMMAND ignores SIGTERM", `trap "" TERM; touch "$0.ready"; while :; do sleep 0.05; done`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			marker := e.path("marker")
			// --lease 3s: ulock refreshes it every second.
			p := e.start(t, "run", "--lease", "3s", "--grace", "300ms", "job", "--", "sh", "-c", tc.command, marker)
			await(t, "COMMAND runs", func() bool { return exists(marker + ".ready") })
			e.srv.Do(t, "DEL", e.prefix+":job")
			deleted := time.Now()
			r := p.Wait(t)
			ulocktest.WantOneLine(t, r, 76, "lost "+e.prefix+":job while COMMAND ran; COMMAND got SIGTERM")
			if got := read(marker); got != tc.marker {
				t.Errorf("COMMAND wrote %q; want %q", got, tc.marker)
			}
			if took := time.Since(deleted); took > 3*time.Second {
				t.Errorf("ulock exited %v after the lock was lost; want within about a second", took)
			}
		})
	}
}

func TestRun_signalsPassedOn(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(unix(sig), func(t *testing.T) {
			e := newEnv(t)
			marker := e.path("marker")
			p := e.start(t, "run", "job", "--", "sh", "-c", trapping, marker)
			await(t, "COMMAND runs", func() bool { return exists(marker + ".ready") })
			p.Signal(t, sig)
			r := p.Wait(t)
			if r.Code != 5 || r.Stderr != "" {
				t.Errorf("exit %d, stderr %q; want COMMAND's 5, and nothing", r.Code, r.Stderr)
			}
			if got, want := read(marker), strings.TrimPrefix(strings.ToUpper(unix(sig)), "SIG"); got != want {
				t.Errorf("COMMAND got %q; want %q", got, want)
			}
			if info := e.inspect(t, "job"); info.Held() {
				t.Errorf("after ulock run: %+v; want the lock released", info)
			}
		})
	}
}

// unix is the name of sig: "SIGINT".
func unix(sig syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"}[sig]
}

func TestRun_signalWhileWaiting(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(unix(sig), func(t *testing.T) {
			e := newEnv(t)
			e.hold(t, "job", "t-holder")
			marker := e.path("ran")
			p := e.start(t, "run", "--label", "t-waiting", "job", "--", "touch", marker)
			await(t, "ulock waits in the queue", func() bool {
				ws := e.inspect(t, "job").Waiters
				return len(ws) == 1 && ws[0].Label == "t-waiting"
			})
			p.Signal(t, sig)
			r := p.Wait(t)
			ulocktest.WantOneLine(t, r, 128+int(sig), "gave up waiting for "+e.prefix+":job: got "+unix(sig))
			if exists(marker) {
				t.Error("COMMAND ran")
			}
		})
	}
}

func TestRun_waitThenRun(t *testing.T) {
	e := newEnv(t)
	m := e.hold(t, "job", "t-holder")
	held := m.Fence()
	p := e.start(t, "run", "--wait", "10s", "--label", "t-waiting", "job", "--", "sh", "-c", "echo $ULOCK_FENCE")
	await(t, "ulock waits in the queue", func() bool { return len(e.inspect(t, "job").Waiters) == 1 })
	if err := m.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := p.Wait(t)
	if f, err := strconv.ParseUint(strings.TrimSpace(r.Stdout), 10, 64); r.Code != 0 || err != nil || f <= held {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0 and a fence above the holder's, %d", r.Code, r.Stdout, r.Stderr, held)
	}
	if r.Took > 5*time.Second {
		t.Errorf("it took %v; want the hand-off at once", r.Took)
	}
}

// TestRun_grandchild checks that the processes COMMAND starts end with it
// when ulock's stdin is not a terminal (/dev/null here): COMMAND leads a
// process group of its own, which gets the signals that ulock passes on
// and the SIGTERM and SIGKILL of a lost lock.
func TestRun_grandchild(t *testing.T) {
	cases := []struct {
		name       string
		background string // the grandchild: what COMMAND starts in the background
		lost       bool   // the test deletes the lock, rather than sending ulock SIGTERM
		code       int
		stderr     string
	}{
		{"lock lost", "sleep 30", true, 76, "COMMAND got SIGTERM"},
		{"lock lost, grandchild ignores SIGTERM", `(trap "" TERM; sleep 30)`, true, 76, "COMMAND got SIGTERM"},
		{"SIGTERM to ulock", "sleep 30", false, 128 + 15, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			pidFile := e.path("pid")
			// --lease 3s: ulock refreshes it every second.
			p := e.start(t, "run", "--lease", "3s", "--grace", "1s", "job", "--",
				"sh", "-c", tc.background+` & echo $! > "$0.tmp"; mv "$0.tmp" "$0"; wait`, pidFile)
			await(t, "COMMAND starts the grandchild", func() bool { return exists(pidFile) })
			pid, err := strconv.Atoi(read(pidFile))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if alive(pid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			if tc.lost {
				e.srv.Do(t, "DEL", e.prefix+":job")
			} else {
				p.Signal(t, syscall.SIGTERM)
			}
			r := p.Wait(t)
			if tc.stderr != "" {
				ulocktest.WantOneLine(t, r, tc.code, tc.stderr)
			} else if r.Code != tc.code || r.Stderr != "" {
				t.Errorf("exit %d, stderr %q; want %d and nothing", r.Code, r.Stderr, tc.code)
			}
			await(t, "the grandchild ends", func() bool { return !alive(pid) })
		})
	}
}

// TestRun_processGroup checks which process group COMMAND runs in: a
// group of its own when ulock's stdin is not a terminal, ulock's own when
// it is one, so that COMMAND can read the terminal.
func TestRun_processGroup(t *testing.T) {
	// COMMAND prints its PID, its process group and ulock's.
	script := `echo $$ $(cut -d " " -f 5 /proc/$$/stat) $(cut -d " " -f 5 /proc/$PPID/stat)`
	cases := []struct {
		name     string
		terminal bool
		own      bool
	}{
		{"stdin /dev/null", false, true},
		{"stdin a terminal", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var stdin *os.File // /dev/null
			if tc.terminal {
				stdin = ulocktest.Terminal(t)
			}
			r := ulocktest.StartStdin(t, stdin, nil, e.args([]string{"run", "job", "--", "sh", "-c", script})...).Wait(t)
			ids := strings.Fields(r.Stdout)
			if r.Code != 0 || len(ids) != 3 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and three numbers", r.Code, r.Stdout, r.Stderr)
			}
			if own := ids[1] == ids[0]; own != tc.own || own == (ids[1] == ids[2]) {
				t.Errorf("COMMAND %s is in process group %s, ulock in %s; want a group of its own: %v", ids[0], ids[1], ids[2], tc.own)
			}
		})
	}
}

// TestRun_lostDefaults checks that with the default --timeout and --lease
// ulock finds its lock lost within about 5 s: it renews its hold at least
// every 5 s, not every third of the timeout (100 s).
func TestRun_lostDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ready := e.path("ready")
	p := e.start(t, "run", "--grace", "100ms", "job", "--", "sh", "-c", `touch "$0"; exec sleep 30`, ready)
	await(t, "COMMAND runs", func() bool { return exists(ready) })
	// After the first second of the hold, in which the Client checks its
	// new holds once (the watch for a restarted Redis), only a renewal
	// finds the lock lost.
	time.Sleep(1500 * time.Millisecond)
	e.srv.Do(t, "DEL", e.prefix+":job")
	deleted := time.Now()
	r := p.Wait(t)
	ulocktest.WantOneLine(t, r, 76, "lost "+e.prefix+":job while COMMAND ran; COMMAND got SIGTERM")
	if took := time.Since(deleted); took > 6*time.Second {
		t.Errorf("ulock exited %v after the lock was lost; want within about 5s", took)
	}
}

// TestRun_plainName checks that run's NAME is a plain name even when it
// looks like a full one, and that its messages and ULOCK_NAME give the
// full name: "PREFIX:job" is the lock PREFIX:PREFIX%3Ajob.
func TestRun_plainName(t *testing.T) {
	e := newEnv(t)
	e.hold(t, "job", "t-holder") // PREFIX:job, which run does not lock
	name := e.prefix + ":job"
	full := e.prefix + ":" + e.prefix + "%3Ajob"
	r := e.ulock(t, "run", "--wait", "0", name, "--", "sh", "-c", "echo $ULOCK_NAME")
	if r.Code != 0 || r.Stdout != full+"\n" {
		t.Errorf("run %s: exit %d, stdout %q, stderr %q; want 0 and %s", name, r.Code, r.Stdout, r.Stderr, full)
	}
	e.hold(t, name, "t-other")
	ulocktest.WantOneLine(t, e.ulock(t, "run", "--wait", "0", name, "--", "true"), 75, "busy: "+full+" held by t-other")
}
