package redistest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A Proxy forwards TCP connections from its own loopback address to an
// upstream one, and injects network faults on demand: Reset closes every
// connection at once, Refuse turns new connections away, Blackhole stops
// all forwarding until it is lifted, and SetLatency delays every chunk of
// data. Accepted counts the connections clients opened. It is safe for
// concurrent use.
type Proxy struct {
	ln       net.Listener
	upstream string
	accepted atomic.Int64
	refusing atomic.Bool

	mu      sync.Mutex            // guards the fields below
	conns   map[net.Conn]struct{} // both ends of every open pair
	open    chan struct{}         // closed while traffic flows; nil once closed
	latency time.Duration         // added to every chunk read from now on
	closed  bool                  // Close has begun
	pumps   sync.WaitGroup        // the accept loop and every pump
}

// StartProxy starts a Proxy to upstream, closed at the end of the test.
func StartProxy(tb testing.TB, upstream string) *Proxy {
	tb.Helper()
	p, err := NewProxy(upstream)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return p
}

// NewProxy listens on a free loopback port and forwards to upstream.
func NewProxy(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	open := make(chan struct{})
	close(open)
	p := &Proxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}, open: open}
	p.pumps.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops accepting, closes every connection, lifts a blackhole and
// waits for every goroutine of the proxy to end.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.Blackhole(false)
	p.Reset()
	p.pumps.Wait()
}

// Reset closes every open connection, client and upstream ends alike, as a
// network failure or a server-side kill would.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Refuse turns new connections away (on), each reset as soon as it is
// accepted, as a server that is down would, or lets them through again
// (off). Open connections are left alone: Reset ends them.
func (p *Proxy) Refuse(on bool) { p.refusing.Store(on) }

// Accepted returns how many connections clients have opened to the proxy,
// refused ones included.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Blackhole stops (on) or resumes (off) forwarding: while on, connections
// stay open and new ones are accepted, but no byte goes through in either
// direction. What was sent meanwhile is delivered on resuming.
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		if on {
			p.open = make(chan struct{})
		}
	default:
		if !on {
			close(p.open)
		}
	}
}

// SetLatency delays every chunk of data read from now on by d before it is
// forwarded; 0 ends the delay. Order within a connection is kept.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// gate returns the channel that is closed while traffic flows, and the
// current latency.
func (p *Proxy) gate() (<-chan struct{}, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open, p.latency
}

func (p *Proxy) accept() {
	defer p.pumps.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.accepted.Add(1)
		if p.refusing.Load() {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // a reset, not an orderly close
			}
			c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.upstream, time.Second)
		if err != nil { // the server is down: the client sees a reset
			c.Close()
			continue
		}
		if !p.track(c, up) {
			return
		}
		p.pumps.Add(2)
		go p.pump(up, c)
		go p.pump(c, up)
	}
}

// track registers a pair of connections, or closes them when the proxy is
// closing.
func (p *Proxy) track(a, b net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		a.Close()
		b.Close()
		return false
	}
	p.conns[a], p.conns[b] = struct{}{}, struct{}{}
	return true
}

func (p *Proxy) untrack(a, b net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, a)
	delete(p.conns, b)
}

// A chunk is data read from one end, due at the other end not before due.
type chunk struct {
	data []byte
	due  time.Time
}

// pump copies src to dst through the gate and the latency: a reader stamps
// each chunk with its due time, a writer waits for it and for the gate.
// When either end fails or ends, both ends are closed: Redis clients never
// half-close, so this loses nothing they rely on. A pump cut off by Reset
// during a blackhole or a delay ends once that is over.
func (p *Proxy) pump(dst, src net.Conn) {
	defer p.pumps.Done()
	defer p.untrack(dst, src)
	chunks := make(chan chunk, 64)
	stop := make(chan struct{})
	go func() { // the writer; the reader below owns chunks
		defer close(stop)
		for ch := range chunks {
			if !p.deliver(dst, ch) {
				src.Close()
				dst.Close()
				for range chunks { // let the reader end
				}
				return
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			_, lat := p.gate()
			chunks <- chunk{data: append([]byte(nil), buf[:n]...), due: time.Now().Add(lat)}
		}
		if err != nil {
			break
		}
	}
	close(chunks)
	<-stop
	src.Close()
	dst.Close()
}

// deliver waits until ch is due and the gate is open, then writes it; it
// reports whether the write succeeded.
func (p *Proxy) deliver(dst net.Conn, ch chunk) bool {
	if wait := time.Until(ch.due); wait > 0 {
		time.Sleep(wait)
	}
	open, _ := p.gate()
	<-open
	_, err := dst.Write(ch.data)
	return err == nil
}
