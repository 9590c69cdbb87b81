package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// A FakeMode says how a Fake answers each command.
type FakeMode int

const (
	// FakeInteger answers every command, HELLO and AUTH included, with
	// the integer reply :12345, one reply per command.
	FakeInteger FakeMode = iota + 1
	// FakeGarbage answers each command with 1 to 300 random bytes, or
	// (one time in four) with nothing: seldom a valid reply, and when
	// one, not a sensible one.
	FakeGarbage
)

// fakeInteger is the reply of FakeInteger.
const fakeInteger = ":12345\r\n"

// A Fake is a server on a loopback port that reads RESP commands, whole
// and one at a time, pipelined or not, and answers each with nonsense as
// its mode says. It serves any number of connections at once, and closes
// one that sends what is not a RESP command. It is safe for concurrent use.
type Fake struct {
	ln       net.Listener
	mode     FakeMode
	commands atomic.Int64

	mu     sync.Mutex            // guards conns and closed
	conns  map[net.Conn]struct{} // every open connection
	closed bool                  // Close has begun
	serves sync.WaitGroup        // the accept loop and every connection's
}

// StartFake starts a Fake answering as mode says, closed at the end of the
// test.
func StartFake(tb testing.TB, mode FakeMode) *Fake {
	tb.Helper()
	f, err := NewFake(mode)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(f.Close)
	return f
}

// NewFake listens on a free loopback port and answers as mode says. It
// returns an error for a mode it does not know.
func NewFake(mode FakeMode) (*Fake, error) {
	if mode != FakeInteger && mode != FakeGarbage {
		return nil, fmt.Errorf("redistest: unknown FakeMode %d", mode)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Fake{ln: ln, mode: mode, conns: map[net.Conn]struct{}{}}
	f.serves.Add(1)
	go f.accept()
	return f, nil
}

// Addr is the address clients dial.
func (f *Fake) Addr() string { return f.ln.Addr().String() }

// Commands returns how many commands the Fake has read, on all
// connections.
func (f *Fake) Commands() int64 { return f.commands.Load() }

// Close stops accepting, closes every connection and waits for every
// goroutine of the Fake to end.
func (f *Fake) Close() {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.ln.Close()
	f.serves.Wait()
}

func (f *Fake) accept() {
	defer f.serves.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return // closed
		}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			c.Close()
			return
		}
		f.conns[c] = struct{}{}
		f.serves.Add(1)
		f.mu.Unlock()
		go f.serve(c)
	}
}

// serve answers c's commands until it closes, sends something that is not
// a command, or the Fake closes. Replies to pipelined commands are written
// together once none is left to read, or before closing.
func (f *Fake) serve(c net.Conn) {
	defer f.serves.Done()
	defer func() {
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
		c.Close()
	}()
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	for {
		if err := readCommand(r); err != nil {
			_ = w.Flush()
			return
		}
		f.commands.Add(1)
		if _, err := w.Write(f.reply()); err != nil {
			return
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// reply returns the answer to one command.
func (f *Fake) reply() []byte {
	if f.mode == FakeInteger {
		return []byte(fakeInteger)
	}
	if rand.IntN(4) == 0 {
		return nil
	}
	b := make([]byte, 1+rand.IntN(300))
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}

var errNotCommand = errors.New("redistest: not a RESP command")

// readCommand reads one command, as Redis accepts it, and throws it away:
// an array of bulk strings ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), or an
// inline command, a line of words ("PING\r\n"). Blank lines and empty
// arrays are skipped, as Redis skips them. It returns io.EOF or another
// read error, or errNotCommand.
func readCommand(r *bufio.Reader) error {
	for {
		line, err := readLine(r)
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if line[0] != '*' {
			return nil // an inline command
		}
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return errNotCommand
		}
		for range n {
			if err := skipBulk(r); err != nil {
				return err
			}
		}
		if n > 0 {
			return nil
		}
	}
}

// skipBulk reads one bulk string, "$3\r\nGET\r\n", without keeping it.
func skipBulk(r *bufio.Reader) error {
	line, err := readLine(r)
	if err != nil {
		return err
	}
	if len(line) == 0 || line[0] != '$' {
		return errNotCommand
	}
	size, err := strconv.ParseInt(line[1:], 10, 64)
	if err != nil || size < 0 {
		return errNotCommand
	}
	if _, err := io.CopyN(io.Discard, r, size); err != nil {
		return err
	}
	if end, err := readLine(r); err != nil || end != "" {
		return errors.Join(errNotCommand, err)
	}
	return nil
}

// readLine reads a line ending in "\n" and returns it without its "\r\n"
// or "\n".
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}
