package main

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// TestHurried runs every row of the hurried workload briefly, hurried and
// patient, and checks that each ran without error, accounted for every
// Lock call and measured the process and Redis meanwhile, and that the
// patient callers acquired. Hurried callers mostly give up: some of our
// rows make single-digit acquisitions in this short run under -race, so
// the test does not demand theirs.
func TestHurried(t *testing.T) {
	e := testEnv(t)
	cfg := config{duration: 500 * time.Millisecond, workload: "hurried"}
	var results []hurriedResult
	for _, r := range allHurriedRows() {
		res := e.runHurried(r, cfg)
		for _, run := range []struct {
			name string
			r    hurriedRun
		}{{"hurried", res.hurried}, {"patient", res.patient}} {
			name, got := r.name+", "+run.name, run.r
			t.Logf("%s: %d acquisitions of %d Lock calls, at most %d goroutines and %d keys, %d new connections",
				name, got.acquisitions, got.calls, got.maxGoroutines, got.maxKeys, got.connections)
			switch {
			case got.err != nil || got.errors != 0:
				t.Errorf("%s: %v; %d errors, the first: %v", name, got.err, got.errors, got.firstErr)
			case got.calls == 0 || got.calls != got.acquisitions+got.gaveUp:
				t.Errorf("%s: %d Lock calls, %d acquisitions, %d gave up; want calls, each one or the other", name, got.calls, got.acquisitions, got.gaveUp)
			case got.maxGoroutines < hurriedGoroutines || got.maxKeys < 0 || got.connections < 0:
				t.Errorf("%s: at most %d goroutines and %d keys, %d new connections; want at least the %d callers", name, got.maxGoroutines, got.maxKeys, got.connections, hurriedGoroutines)
			case got.cpuPerAcq <= 0 || got.elapsed < cfg.duration:
				t.Errorf("%s: %v of Redis CPU an acquisition in %v; want more than 0, in %v or more", name, got.cpuPerAcq, got.elapsed, cfg.duration)
			}
		}
		if res.patient.acquisitions == 0 {
			t.Errorf("%s, patient: no acquisition in %d Lock calls", r.name, res.patient.calls)
		}
		results = append(results, res)
	}
	var out strings.Builder
	printHurried(&out, cfg, results)
	for _, want := range []string{"| uncomplicated rueidis", "| rueidislock", "hurried: our best row, ", "patient: our best row, "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printHurried lacks %q:\n%s", want, out.String())
		}
	}
}

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

func TestVersionAtLeast(t *testing.T) {
	for _, c := range []struct {
		version string
		want    bool
	}{
		{"7.0.15", true},
		{"7.0.5", true},
		{"7.2.0", true},
		{"8.0.0", true},
		{"7.0.4", false},
		{"6.2.14", false},
		{"7.0", false},
		{"", false},
	} {
		if got := versionAtLeast(c.version, noLoopTrackingSince); got != c.want {
			t.Errorf("versionAtLeast(%q, 7.0.5) = %v; want %v", c.version, got, c.want)
		}
	}
	// The rueidislock rows track with NOLOOP, which the test server must
	// support as the benchmark's does.
	if v, err := testEnv(t).info("server", "redis_version"); err != nil || !versionAtLeast(v, noLoopTrackingSince) {
		t.Errorf("the test server is Redis %q (%v); rueidislock's NoLoopTracking needs 7.0.5 or later", v, err)
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
