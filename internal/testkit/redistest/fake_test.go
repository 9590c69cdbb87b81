package redistest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// dialFake dials f with redigo and a read timeout, closed at cleanup.
func dialFake(t *testing.T, f *Fake, readTimeout time.Duration) redis.Conn {
	t.Helper()
	c, err := redis.Dial("tcp", f.Addr(), redis.DialConnectTimeout(time.Second),
		redis.DialReadTimeout(readTimeout), redis.DialWriteTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestFake_integer(t *testing.T) {
	t.Parallel()
	f := StartFake(t, FakeInteger)
	c := dialFake(t, f, time.Second)
	big := strings.Repeat("x\r\n*3\r\n$3\r\n", 20000) // RESP inside a value
	for _, cmd := range [][]any{
		{"PING"}, {"HELLO", "3", "AUTH", "u", "p", "SETNAME", "n"}, {"HELLO"},
		{"SET", "k", big}, {"GET", "k"}, {"SET", "", ""},
	} {
		if got, err := c.Do(cmd[0].(string), cmd[1:]...); got != int64(12345) || err != nil {
			t.Errorf("%.20q = %v, %v; want 12345", cmd, got, err)
		}
	}
	// Pipelined: one reply per command, no more.
	const n = 200
	for i := range n {
		if err := c.Send("SET", fmt.Sprint("k", i), big[:i*100]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if got, err := c.Receive(); got != int64(12345) || err != nil {
			t.Fatalf("pipelined reply %d = %v, %v; want 12345", i, got, err)
		}
	}
	if got, err := redis.ReceiveWithTimeout(c, 100*time.Millisecond); err == nil {
		t.Errorf("after the pipeline, an extra reply %v; want none", got)
	}
}

// Inline commands and blank lines are read as Redis reads them; what is
// not a command ends the connection.
func TestFake_integerRaw(t *testing.T) {
	t.Parallel()
	f := StartFake(t, FakeInteger)
	c, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "PING\r\n\r\n*0\r\nECHO hi\n*1\r\n$4\r\nPING\r\n*1\r\nPING\r\n"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c) // the Fake closes c at the last, bad, command
	if want := strings.Repeat(fakeInteger, 3); string(got) != want || err != nil {
		t.Errorf("read %q, %v; want %q and the connection closed", got, err, want)
	}
	if n := f.Commands(); n != 3 {
		t.Errorf("Commands() = %d; want 3", n)
	}
}

func TestFake_integerConcurrent(t *testing.T) {
	t.Parallel()
	f := StartFake(t, FakeInteger)
	const conns, perConn = 20, 50
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for range conns {
		c := dialFake(t, f, 5*time.Second)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perConn {
				if got, err := c.Do("INCR", "n"); got != int64(12345) || err != nil {
					errs <- fmt.Errorf("INCR = %v, %v; want 12345", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := f.Commands(); n != conns*perConn {
		t.Errorf("Commands() = %d; want %d", n, conns*perConn)
	}
}

// Garbage sometimes never completes a reply (the client times out) and
// otherwise gives anything: an error, a protocol error, a value.
func TestFake_garbage(t *testing.T) {
	t.Parallel()
	f := StartFake(t, FakeGarbage)
	const n = 40
	var timeouts, answers int
	for range n {
		// A connection per command: redigo gives up on a connection
		// after a protocol error.
		_, err := dialFake(t, f, 50*time.Millisecond).Do("GET", "k")
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			timeouts++
		} else {
			answers++
		}
	}
	if timeouts == 0 || answers == 0 {
		t.Errorf("of %d GETs, %d timed out and %d were answered; want some of each", n, timeouts, answers)
	}
	// A command the client gave up on may still wait to be read.
	if err := await(5*time.Second, nil, func() error {
		if got := f.Commands(); got != n {
			return fmt.Errorf("Commands() = %d; want %d", got, n)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}

	// Pipelined, the garbage differs from reply to reply.
	c, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, strings.Repeat("*1\r\n$4\r\nPING\r\n", n)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	got, _ := io.ReadAll(c)
	if len(got) < 300 || bytes.Equal(got[:100], got[100:200]) {
		t.Errorf("%d pipelined PINGs got %d bytes: %.200q; want a few hundred bytes or more, not repeating", n, len(got), got)
	}
}

// Close ends open connections and waits for the Fake's goroutines.
func TestFake_Close(t *testing.T) {
	t.Parallel()
	f, err := NewFake(FakeInteger)
	if err != nil {
		t.Fatal(err)
	}
	c := dialFake(t, f, time.Second)
	if got, err := c.Do("PING"); got != int64(12345) || err != nil {
		t.Fatalf("PING = %v, %v; want 12345", got, err)
	}
	f.Close()
	if got, err := c.Do("PING"); err == nil {
		t.Errorf("PING after Close = %v, nil; want an error", got)
	}
	if c, err := net.DialTimeout("tcp", f.Addr(), time.Second); err == nil {
		c.Close()
		t.Errorf("dial after Close = nil; want an error")
	}
	if _, err := NewFake(0); err == nil {
		t.Errorf("NewFake(0) = nil error; want an error")
	}
}
