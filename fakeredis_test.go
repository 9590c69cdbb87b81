package uncomplicated_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gomodule/redigo/redis"
)

// fakeRedis is a tiny RESP server on a loopback port that answers every
// command with whatever raw reply the test sets: a server that is not Redis,
// or a proxy that mangles replies. It reads each command whole before it
// answers, and counts them.
type fakeRedis struct {
	ln       net.Listener
	reply    atomic.Pointer[[]byte] // raw RESP written for every command
	hangUp   atomic.Bool            // write reply, then close the connection
	commands atomic.Int64           // commands read

	mu    sync.Mutex // guards conns
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup // the accept loop and one goroutine per connection
}

// newFakeRedis starts a fakeRedis answering reply, stopped at cleanup.
func newFakeRedis(t *testing.T, reply string) *fakeRedis {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRedis{ln: ln, conns: map[net.Conn]struct{}{}}
	f.answer(reply)
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

// answer makes every later command get reply, raw RESP.
func (f *fakeRedis) answer(reply string) {
	b := []byte(reply)
	f.reply.Store(&b)
}

// pool returns a pool dialling f, closed at cleanup.
func (f *fakeRedis) pool(t *testing.T) *redis.Pool {
	t.Helper()
	p := &redis.Pool{MaxIdle: 4, DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", f.ln.Addr().String())
	}}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func (f *fakeRedis) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns[c] = struct{}{}
		f.mu.Unlock()
		f.wg.Add(1)
		go f.serve(c)
	}
}

func (f *fakeRedis) serve(c net.Conn) {
	defer f.wg.Done()
	defer func() {
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReader(c)
	for {
		if err := readCommand(r); err != nil {
			return
		}
		f.commands.Add(1)
		if _, err := c.Write(*f.reply.Load()); err != nil || f.hangUp.Load() {
			return
		}
	}
}

func (f *fakeRedis) close() {
	f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// readCommand reads one command, an array of bulk strings, as clients send.
func readCommand(r *bufio.Reader) error {
	n, err := readLen(r, '*')
	if err != nil {
		return err
	}
	for range n {
		size, err := readLen(r, '$')
		if err != nil {
			return err
		}
		if _, err := io.CopyN(io.Discard, r, int64(size)+2); err != nil {
			return err
		}
	}
	return nil
}

// readLen reads a line "<kind><n>\r\n".
func readLen(r *bufio.Reader, kind byte) (int, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 3 || line[0] != kind {
		return 0, io.ErrUnexpectedEOF
	}
	return strconv.Atoi(line[1 : len(line)-2])
}
