package ulockcli

import (
	"io"
	"testing"
)

// --redis takes an address without a scheme as a redis:// URL.
func TestConnect_addressWithoutScheme(t *testing.T) {
	s := &session{stdout: io.Discard, stderr: io.Discard, dialers: Redigo(), cmd: "ulock"}
	for _, addr := range []string{"127.0.0.1:6379", "localhost", "redis://localhost:6379/0"} {
		c, stop, err := s.connect(addr, "lock")
		if err != nil {
			t.Errorf("connect(%q) = %v; want a Client of redis://%s", addr, err, addr)
			continue
		}
		if c == nil {
			t.Errorf("connect(%q) = nil Client", addr)
		}
		stop()
	}
	if got := withScheme("10.0.0.1:7000"); got != "redis://10.0.0.1:7000" {
		t.Errorf("withScheme = %q; want redis://10.0.0.1:7000", got)
	}
}
