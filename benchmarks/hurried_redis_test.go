package main

import (
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
	for _, want := range []string{"| uncomplicated rueidis", "| rueidislock", "| uncomplicated valkey-go", "| valkeylock", "hurried: our best row, ", "patient: our best row, "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printHurried lacks %q:\n%s", want, out.String())
		}
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
	// The rueidislock and valkeylock rows track with NOLOOP, which the test
	// server must support as the benchmark's does.
	if v, err := testEnv(t).info("server", "redis_version"); err != nil || !versionAtLeast(v, noLoopTrackingSince) {
		t.Errorf("the test server is Redis %q (%v); rueidislock's and valkeylock's NoLoopTracking need 7.0.5 or later", v, err)
	}
}
