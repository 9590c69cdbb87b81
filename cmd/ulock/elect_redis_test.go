package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tests of ulock elect.

// Two ulock elect --again processes take turns leading: COMMAND runs in
// one of them at a time, under rising fences, and each resignation elects
// the other at once; ulock status shows the election and its leader's
// value; a signal ends the campaigning.
func TestElect_again(t *testing.T) {
	e := newEnv(t)
	log := e.path("log")
	script := `echo "start $$ $ULOCK_FENCE $(date +%s%N)" >> "$0"; sleep 0.1; echo "end $$ $ULOCK_FENCE $(date +%s%N)" >> "$0"`
	a := e.start(t, "elect", "--again", "--label", "replica-a", "scheduler", "--", "sh", "-c", script, log)
	b := e.start(t, "elect", "--again", "--label", "replica-b", "scheduler", "--", "sh", "-c", script, log)
	await(t, "six runs", func() bool { return strings.Count(read(log), "end") >= 6 })
	r := e.ulock(t, "status", "--json", "election:scheduler")
	var view struct {
		Name, Kind, State string
		Holders           []struct{ Label string }
	}
	if err := json.Unmarshal([]byte(r.Stdout), &view); r.Code != 0 || err != nil || view.Name != e.prefix+":election:scheduler" ||
		view.Kind != "election" || view.State != "held" || len(view.Holders) != 1 || !strings.HasPrefix(view.Holders[0].Label, "replica-") {
		t.Errorf("ulock status --json election:scheduler: exit %d, stdout %q (%v); want the election held by a replica", r.Code, r.Stdout, err)
	}
	a.Signal(t, syscall.SIGTERM)
	b.Signal(t, syscall.SIGTERM)
	for _, p := range []interface{ Exited() bool }{a, b} {
		await(t, "ulock elect to exit after SIGTERM", p.Exited)
	}

	var lastEnd int64
	var lastFence uint64
	for i, r := range runs(t, log) {
		fence, _ := strconv.ParseUint(r[0][2], 10, 64)
		begin, _ := strconv.ParseInt(r[0][3], 10, 64)
		stop, _ := strconv.ParseInt(r[1][3], 10, 64)
		if begin < lastEnd || fence <= lastFence {
			t.Errorf("run %d: fence %d from %d overlaps the previous one (fence %d) to %d", i, fence, begin, lastFence, lastEnd)
		}
		if lastEnd > 0 && time.Duration(begin-lastEnd) > time.Second {
			t.Errorf("run %d began %v after the previous one ended; want the next leader at once", i, time.Duration(begin-lastEnd))
		}
		lastEnd, lastFence = stop, fence
	}
}

// Without --again, ulock elect runs COMMAND once, as leader, and exits
// with its status; its lease is 15s by default, so that a dead leader
// makes way within it; --lease 0 and --wait 0 are refused.
func TestElect_once(t *testing.T) {
	e := newEnv(t)
	_, port, _ := strings.Cut(e.srv.Addr, ":")
	r := e.ulock(t, "elect", "once", "--", "sh", "-c", `echo "$ULOCK_NAME $ULOCK_FENCE $(redis-cli -p `+port+` PTTL "$ULOCK_NAME")"; exit 3`)
	fields := strings.Fields(r.Stdout)
	if len(fields) != 3 {
		t.Fatalf("ulock elect: exit %d, stdout %q, stderr %q; want the name, fence and PTTL", r.Code, r.Stdout, r.Stderr)
	}
	name, fence := fields[0], fields[1]
	if f, err := strconv.ParseUint(fence, 10, 64); r.Code != 3 || name != e.prefix+":election:once" || err != nil || f == 0 {
		t.Errorf("ulock elect: exit %d, stdout %q; want 3, the election's name and a fence", r.Code, r.Stdout)
	}
	if pttl, err := strconv.Atoi(fields[2]); err != nil || pttl <= 10000 || pttl > 15000 {
		t.Errorf("the leader's key lives %q ms; want the default lease, 15s", fields[2])
	}
	for _, flag := range []string{"--lease=0", "--wait=0"} {
		if r := e.ulock(t, "elect", flag, "once", "--", "true"); r.Code != 2 {
			t.Errorf("ulock elect %s: exit %d, stderr %q; want 2", flag, r.Code, r.Stderr)
		}
	}
}
