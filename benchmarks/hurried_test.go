package main

import (
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"
)

// settle reports how long the process took to be back to a goroutine count,
// and gives up, with the goroutines above it, after settleWithin.
func TestSettle(t *testing.T) {
	before := time.Now()
	if d, left := settle(1<<20, before); d < 0 || left != 0 {
		t.Errorf("settle(many) = %v, %d; want at once, 0", d, left)
	}
	if d, left := settle(0, before.Add(-settleWithin)); d != -1 || left <= 0 {
		t.Errorf("settle(0) after settleWithin = %v, %d; want -1 and the goroutines above 0", d, left)
	}
}

// The comparison line names our row of the most acquisitions per second
// and the peer's, and is left out without a peer that ran.
func TestBestAgainstPeers(t *testing.T) {
	results := []hurriedResult{
		{name: "ours slow", hurried: hurriedRun{acquisitions: 100, elapsed: time.Second}},
		{name: "ours fast", hurried: hurriedRun{acquisitions: 300, elapsed: time.Second}},
		{name: "peer", peer: true, hurried: hurriedRun{acquisitions: 200, elapsed: time.Second}},
		{name: "peer failed", peer: true, hurried: hurriedRun{acquisitions: 900, elapsed: time.Second, err: errors.New("x")}},
	}
	hurried := func(r hurriedResult) hurriedRun { return r.hurried }
	want := "our best row, ours fast, makes 300 acquisitions/s, 1.50× the best peer's, peer (200/s)."
	if got := bestAgainstPeers(results, hurried); got != want {
		t.Errorf("bestAgainstPeers() = %q; want %q", got, want)
	}
	if got := bestAgainstPeers(results[:2], hurried); got != "" {
		t.Errorf("bestAgainstPeers(no peer) = %q; want none", got)
	}
}

// A hurried row reads as one line of JSON, both runs in it, and a failed
// run as its failure.
func TestHurriedJSON(t *testing.T) {
	r := hurriedResult{name: "x",
		hurried: hurriedRun{calls: 90, acquisitions: 50, gaveUp: 40, elapsed: 2 * time.Second, maxGoroutines: 150, connections: 3, maxKeys: 12, cpuPerAcq: 18500 * time.Nanosecond, settled: 5 * time.Millisecond},
		patient: hurriedRun{err: errors.New("no server")}}
	b, err := json.Marshal(r.json())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Name    string         `json:"name"`
		Hurried map[string]any `json:"hurried"`
		Patient map[string]any `json:"patient"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	for k, want := range map[string]any{"acquisitions_per_second": 25.0, "lock_calls": 90.0, "gave_up": 40.0, "max_goroutines": 150.0,
		"new_connections": 3.0, "max_keys": 12.0, "redis_cpu_us_per_acquisition": 18.5, "goroutines_back_after_ms": 5.0} {
		if got.Hurried[k] != want {
			t.Errorf("hurried %s = %v, want %v", k, got.Hurried[k], want)
		}
	}
	if got.Name != "x" || got.Patient["failed"] != "no server" {
		t.Errorf("%s: want name x and the patient run failed", b)
	}
}

// -workload hurried runs 4s by default, or -duration when given; its rows
// are names -only knows.
func TestParseFlags_hurried(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{[]string{"-workload", "hurried"}, hurriedDuration},
		{[]string{"-workload", "hurried", "-duration", "3s"}, 3 * time.Second},
		{[]string{"-workload", "hurried", "-only", "uncomplicated pool of 128,rueidislock"}, hurriedDuration},
		{[]string{"-workload", "hurried", "-only", "uncomplicated valkey-go,valkeylock"}, hurriedDuration},
		{[]string{"-workload", "fleet"}, 3 * time.Second},
	} {
		cfg, err := parseFlags(c.args, io.Discard)
		if err != nil || cfg.duration != c.want {
			t.Errorf("%v: duration %v, error %v; want %v", c.args, cfg.duration, err, c.want)
		}
	}
	if _, err := parseFlags([]string{"-workload", "hurried", "-only", "uncomplicated pool of 64"}, io.Discard); err == nil {
		t.Errorf("-only with no such row: no error")
	}
}
