package wire

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/hashslot"
)

// Grant is the reply of an acquiring script: {1, fence} when it acquired
// (fence 0 for a reader), or the fence alone when the attempt of a Mutex,
// an RWMutex's writer or a Semaphore took a free lock, else {0, writer,
// holders}: what blocks the caller, the holder of a Mutex or the writer of
// an RWMutex ("" none), as the lock holds it (see CutFence), and the
// readers or permit holders.
type Grant struct {
	OK bool
	// Free reports a grant replied by the fence alone: the attempt took
	// the lock free at once, without reading its queue (see
	// internal/lua/set_if_free.lua).
	Free    bool
	Fence   uint64   // the fence of the hold; 0 for a reader
	Writer  string   // the token of the Mutex's holder or the RWMutex's writer, if it blocks the caller
	Holders []string // the readers or permit holders that block the caller
}

// Blockers lists what blocks the caller, the writer first.
func (g Grant) Blockers() []string {
	if g.Writer == "" {
		return g.Holders
	}
	return append([]string{WriterMark + g.Writer}, g.Holders...)
}

// MinFence is the lowest fence Redis's clock gives: its time in
// microseconds on 9 September 2001. Every grant's fence is at least
// Redis's clock when it was made (see new_fence.lua), and below 2^53,
// which Lua's numbers hold exactly.
const MinFence = 1_000_000_000_000_000

// FromClock reports whether fence could be a grant's: what a server that
// answers nonsense (an integer to every command) replies is not.
func FromClock(fence uint64) bool { return fence >= MinFence && fence < 1<<53 }

// ParseGrant reads an acquiring script's reply; bare: the script may
// reply the fence alone (that of a hold with fences).
func ParseGrant(reply any, bare bool) (Grant, error) {
	if f, ok := reply.(int64); ok && f > 0 && bare {
		return Grant{OK: true, Free: true, Fence: uint64(f)}, nil
	}
	r, ok := reply.([]any)
	if !ok || len(r) < 2 {
		return Grant{}, fmt.Errorf("%w: %T", driver.ErrUnexpectedReply, reply)
	}
	switch {
	case r[0] == int64(1) && len(r) == 2:
		if f, ok := r[1].(int64); ok && f >= 0 {
			return Grant{OK: true, Fence: uint64(f)}, nil
		}
	case r[0] == int64(0) && len(r) == 3:
		w, wok := r[1].([]byte)
		hs, hok := r[2].([]any)
		if !wok || !hok {
			break
		}
		writer, _ := CutFence(string(w))
		g := Grant{Writer: writer, Holders: make([]string, 0, len(hs))}
		for _, h := range hs {
			b, ok := h.([]byte)
			if !ok {
				return Grant{}, fmt.Errorf("%w: a holder of %T", driver.ErrUnexpectedReply, h)
			}
			g.Holders = append(g.Holders, string(b))
		}
		return g, nil
	}
	return Grant{}, fmt.Errorf("%w: a reply of %d elements", driver.ErrUnexpectedReply, len(r))
}

// ParseRelease reads the reply of a release: whether the hold was ours,
// and the tokens of the waiters the lock went to, if any.
func ParseRelease(reply any) (ok bool, next []string, err error) {
	switch r := reply.(type) {
	case int64:
		if r == 0 || r == 1 {
			return r == 1, nil, nil
		}
	case []byte:
		if len(r) > 0 {
			return true, []string{string(r)}, nil
		}
	case []any:
		next = make([]string, 0, len(r))
		for _, t := range r {
			b, ok := t.([]byte)
			if !ok || len(b) == 0 {
				return false, nil, fmt.Errorf("%w: a token of %T", driver.ErrUnexpectedReply, t)
			}
			next = append(next, string(b))
		}
		if len(next) > 0 {
			return true, next, nil
		}
	}
	return false, nil, fmt.Errorf("%w: %T", driver.ErrUnexpectedReply, reply)
}

// ParseResume reads lua.Resume's reply: a holder's value or a token, and
// the lease left (-1 for none, -2 for a hold not there).
func ParseResume(reply any) (value string, left time.Duration, err error) {
	r, ok := reply.([]any)
	if ok && len(r) == 2 {
		v, okV := r[0].([]byte)
		ms, okMs := r[1].(int64)
		if okV && okMs && ms >= -2 {
			if ms < 0 {
				return string(v), time.Duration(ms), nil
			}
			return string(v), time.Duration(ms) * time.Millisecond, nil
		}
	}
	return "", 0, fmt.Errorf("%w: %T", driver.ErrUnexpectedReply, reply)
}

// ParseFlag reads the 1 or 0 of a refresh.
func ParseFlag(reply any) (bool, error) {
	switch reply {
	case int64(1):
		return true, nil
	case int64(0):
		return false, nil
	}
	return false, fmt.Errorf("%w: %T", driver.ErrUnexpectedReply, reply)
}

// Strs reads a reply of bulk strings.
func Strs(reply any) ([]string, error) {
	r, ok := reply.([]any)
	if !ok && reply != nil {
		return nil, fmt.Errorf("%w: %T", driver.ErrUnexpectedReply, reply)
	}
	out := make([]string, 0, len(r))
	for _, v := range r {
		b, ok := v.([]byte)
		if !ok {
			return nil, fmt.Errorf("%w: %T in a list", driver.ErrUnexpectedReply, v)
		}
		out = append(out, string(b))
	}
	return out, nil
}

// ParseScan reads SCAN's reply: the next cursor and the keys.
func ParseScan(reply any) (cursor string, keys []string, err error) {
	r, ok := reply.([]any)
	if !ok || len(r) != 2 {
		return "", nil, fmt.Errorf("%w: SCAN replied %T", driver.ErrUnexpectedReply, reply)
	}
	c, ok := r[0].([]byte)
	if !ok {
		return "", nil, fmt.Errorf("%w: SCAN cursor %T", driver.ErrUnexpectedReply, r[0])
	}
	keys, err = Strs(r[1])
	return string(c), keys, err
}

// ParseSlots reads a CLUSTER SLOTS reply: the address of each slot's
// master, "" for a slot it does not name; nil for an empty reply.
func ParseSlots(reply any) []string {
	ranges, _ := reply.([]any)
	if len(ranges) == 0 {
		return nil
	}
	slots := make([]string, hashslot.Count)
	for _, r := range ranges {
		// [first slot, last slot, [ip, port, id, ...], replicas...]
		r, _ := r.([]any)
		if len(r) < 3 {
			continue
		}
		first, _ := r[0].(int64)
		last, _ := r[1].(int64)
		master, _ := r[2].([]any)
		if len(master) < 2 || first < 0 || last >= hashslot.Count || first > last {
			continue
		}
		ip, _ := master[0].([]byte)
		port, _ := master[1].(int64)
		addr := net.JoinHostPort(string(ip), strconv.FormatInt(port, 10))
		for i := first; i <= last; i++ {
			slots[i] = addr
		}
	}
	return slots
}

// ParseServerInfo reads the run_id and the clock (server_time_usec, in
// microseconds since 1970) from the reply of INFO server; "" and 0 for
// what it lacks.
func ParseServerInfo(info []byte) (runID string, usec int64) {
	sc := bufio.NewScanner(bytes.NewReader(info))
	for sc.Scan() {
		line := sc.Bytes()
		if v, ok := bytes.CutPrefix(line, []byte("run_id:")); ok {
			runID = string(bytes.TrimSpace(v))
		} else if v, ok := bytes.CutPrefix(line, []byte("server_time_usec:")); ok {
			usec, _ = strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	return runID, usec
}
