package config

import (
	"testing"
	"time"
)

func TestConfig_tick(t *testing.T) {
	cases := []struct {
		timeout time.Duration
		ticks   int
		want    time.Duration
	}{
		{5 * time.Minute, 100, time.Second},             // 3s, capped
		{10 * time.Second, 100, 100 * time.Millisecond}, // timeout/ticks
		{time.Second, 1000, time.Millisecond},
		{50 * time.Nanosecond, 100, time.Millisecond}, // raised to the floor
	}
	for _, tc := range cases {
		cfg, err := Build([]Option{WithTimeout(tc.timeout), WithTicks(tc.ticks)})
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Tick(); got != tc.want {
			t.Errorf("tick(%v, %d) = %v; want %v", tc.timeout, tc.ticks, got, tc.want)
		}
	}
}

// jitter draws from [0, bound): never the bound, and spread over the range
// rather than one value.
func TestJitter(t *testing.T) {
	if got := jitter(0); got != 0 {
		t.Errorf("jitter(0) = %v; want 0", got)
	}
	const bound, n = 4, 4000
	var counts [bound]int
	for range n {
		d := jitter(bound)
		if d < 0 || d >= bound {
			t.Fatalf("jitter(%d) = %d; want [0, %d)", bound, d, bound)
		}
		counts[d]++
	}
	for v, c := range counts {
		if c < n/bound/2 {
			t.Errorf("jitter(%d) gave %d %d times in %d; want about %d", bound, v, c, n, n/bound)
		}
	}
}

func TestLeaseMillis(t *testing.T) {
	for lease, want := range map[time.Duration]int64{
		0: 0, time.Nanosecond: 1, time.Millisecond: 1, 1500 * time.Microsecond: 2, time.Minute: 60000,
		1<<63 - 1: (1<<63-1)/int64(time.Millisecond) + 1,
	} {
		cfg := Config{Lease: lease}
		if got := cfg.LeaseMillis(); got != want {
			t.Errorf("leaseMillis(%v) = %d; want %d", lease, got, want)
		}
	}
}
