package redistest

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echo starts a server that echoes each connection back, closed at
// cleanup.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// through starts a proxy to an echo server and dials it; both are closed
// at cleanup, and Close waits for the proxy's goroutines.
func through(t *testing.T) (*Proxy, net.Conn, *bufio.Reader) {
	t.Helper()
	p := StartProxy(t, echo(t))
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return p, c, bufio.NewReader(c)
}

// roundTrip sends a line and reads it back within limit.
func roundTrip(c net.Conn, r *bufio.Reader, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	_ = c.SetDeadline(start.Add(limit))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	_, err := r.ReadString('\n')
	return time.Since(start), err
}

func TestProxy_forwards(t *testing.T) {
	_, c, r := through(t)
	if _, err := roundTrip(c, r, time.Second); err != nil {
		t.Fatalf("roundTrip() = %v; want nil", err)
	}
}

func TestProxy_Reset(t *testing.T) {
	p, c, r := through(t)
	if _, err := roundTrip(c, r, time.Second); err != nil {
		t.Fatal(err)
	}
	p.Reset()
	if _, err := roundTrip(c, r, time.Second); err == nil {
		t.Fatal("roundTrip() after Reset = nil; want an error")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("roundTrip() after Reset = %v; want the connection closed, not a timeout", err)
	}
	c2, err := net.Dial("tcp", p.Addr()) // new connections still work
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := roundTrip(c2, bufio.NewReader(c2), time.Second); err != nil {
		t.Errorf("roundTrip() on a new connection = %v; want nil", err)
	}
}

func TestProxy_Blackhole(t *testing.T) {
	p, c, r := through(t)
	p.Blackhole(true)
	if _, err := roundTrip(c, r, 200*time.Millisecond); err == nil {
		t.Fatal("roundTrip() in a blackhole = nil; want a timeout")
	}
	p.Blackhole(false)
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("after the blackhole read %q, %v; want the held-back ping", line, err)
	}
	if _, err := roundTrip(c, r, time.Second); err != nil {
		t.Errorf("roundTrip() after the blackhole = %v; want nil", err)
	}
}

func TestProxy_SetLatency(t *testing.T) {
	p, c, r := through(t)
	const lat = 150 * time.Millisecond
	p.SetLatency(lat)
	// Both directions are delayed: at least 2*lat for a round trip.
	if d, err := roundTrip(c, r, time.Second); err != nil || d < 2*lat {
		t.Fatalf("roundTrip() with latency %v = %v, %v; want at least %v", lat, d, err, 2*lat)
	}
	p.SetLatency(0)
	if d, err := roundTrip(c, r, time.Second); err != nil || d >= lat {
		t.Errorf("roundTrip() without latency = %v, %v; want under %v", d, err, lat)
	}
}

func TestProxy_Refuse(t *testing.T) {
	p, c, r := through(t)
	if _, err := roundTrip(c, r, time.Second); err != nil { // c is accepted
		t.Fatal(err)
	}
	p.Refuse(true)
	c2, err := net.Dial("tcp", p.Addr()) // reset at once, or on first use
	if err == nil {
		defer c2.Close()
		_, err = roundTrip(c2, bufio.NewReader(c2), time.Second)
	}
	if err == nil {
		t.Fatal("roundTrip() on a refused connection = nil; want an error")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("roundTrip() on a refused connection = %v; want it reset, not a timeout", err)
	}
	if _, err := roundTrip(c, r, time.Second); err != nil {
		t.Errorf("roundTrip() on the connection opened before = %v; want nil", err)
	}
	p.Refuse(false)
	c3, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if _, err := roundTrip(c3, bufio.NewReader(c3), time.Second); err != nil {
		t.Errorf("roundTrip() once let through = %v; want nil", err)
	}
	if n := p.Accepted(); n != 3 {
		t.Errorf("Accepted() = %d; want 3", n)
	}
}
