package ulockcli

import (
	"testing"
	"time"
)

func TestRefreshPeriod(t *testing.T) {
	cases := []struct {
		timeout, lease, want time.Duration
	}{
		{5 * time.Minute, 10 * time.Minute, 5 * time.Second}, // the defaults: not 100s
		{30 * time.Second, time.Hour, 5 * time.Second},
		{15 * time.Second, 30 * time.Second, 5 * time.Second},
		{9 * time.Second, time.Hour, 3 * time.Second},       // a third of the timeout
		{time.Minute, 3 * time.Second, time.Second},         // a third of the lease
		{time.Second, 3 * time.Second, 333333333},           // a third of the timeout, rounded down
		{3 * time.Millisecond, time.Hour, time.Millisecond}, // the least that run accepts
	}
	for _, tc := range cases {
		if got := refreshPeriod(tc.timeout, tc.lease); got != tc.want {
			t.Errorf("refreshPeriod(%v, %v) = %v; want %v", tc.timeout, tc.lease, got, tc.want)
		}
	}
}
