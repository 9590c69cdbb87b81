package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// decodeReply builds a reply of any shape from fuzz bytes: the types
// redigo returns (nil, int64, []byte, string, redis.Error, []any) and a
// few it never does. It returns the reply and the bytes left.
func decodeReply(b []byte, depth int) (any, []byte) {
	if len(b) == 0 {
		return nil, b
	}
	tag, b := b[0], b[1:]
	arg := byte(0)
	if len(b) > 0 {
		arg = b[0]
	}
	take := func(n int) []byte {
		n = min(n, len(b))
		v := b[:n:n]
		b = b[n:]
		return v
	}
	switch tag % 9 {
	case 0:
		return nil, b
	case 1: // a small integer, where the valid ones are
		take(1)
		return int64(int8(arg)), b
	case 2: // any int64
		v := take(8)
		var w [8]byte
		copy(w[:], v)
		return int64(binary.BigEndian.Uint64(w[:])), b
	case 3:
		take(1)
		return take(int(arg % 24)), b
	case 4:
		take(1)
		return string(take(int(arg % 24))), b
	case 5:
		take(1)
		return redis.Error(take(int(arg % 24))), b
	case 6:
		take(1)
		n := int(arg % 6)
		if depth >= 3 {
			n = 0
		}
		r := make([]any, n)
		for i := range r {
			r[i], b = decodeReply(b, depth+1)
		}
		return r, b
	case 7:
		take(1)
		return []any(nil), b
	default: // types redigo never returns
		take(1)
		return []any{int(1), uint64(1), float64(1), true, []string{"1"}, map[string]int{}, struct{}{}, []byte(nil)}[arg%8], b
	}
}

// encodeSeeds are fuzz inputs for decodeReply: every valid reply shape
// and near misses.
var encodeSeeds = [][]byte{
	{},
	{1, 1}, {1, 0}, {1, 0xff}, {1, 7},
	{2, 0x80, 0, 0, 0, 0, 0, 0, 0}, {2, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	{3, 3, 'a', 'b', 'c'}, {3, 0}, {4, 2, 'O', 'K'}, {5, 4, 'E', 'R', 'R', ' '},
	{6, 2, 1, 1, 1, 5},                             // [1, 5]: acquired, fence 5
	{6, 3, 1, 0, 3, 2, 'h', 'i', 6, 0},             // [0, "hi", []]: held by hi
	{6, 3, 1, 0, 3, 4, 'h', ' ', '1', '7', 6, 0},   // [0, "h 17", []]: held by h, fence 17
	{6, 3, 1, 0, 3, 3, 'h', ' ', 'x', 6, 0},        // [0, "h x", []]
	{6, 3, 1, 0, 3, 0, 6, 2, 3, 1, 'a', 3, 1, 'b'}, // [0, "", ["a", "b"]]: held by a and b
	{6, 3, 1, 0, 3, 1, 'h', 7, 0},                  // [0, "h", nil]
	{6, 3, 1, 0, 3, 1, 'h', 6, 1, 1, 1},            // [0, "h", [1]]
	{6, 4, 1, 0, 1, 7, 3, 1, 'h', 6, 0},            // [0, 7, "h", []]: an older version's reply
	{6, 3, 1, 0, 1, 7, 6, 0},                       // [0, 7, []]
	{6, 4, 1, 0, 3, 1, 'h', 6, 0, 1, 1},            // [0, "h", [], 1]
	{6, 2, 1, 0, 3, 2, 'h', 'i'},                   // [0, "hi"]: the old Mutex's reply
	{6, 3, 1, 0, 3, 2, 'h', 'i', 1, 7},             // [0, "hi", 7]: the old Mutex's reply
	{6, 2, 1, 1, 1, 0},                             // [1, 0]: a reader is in
	{6, 2, 1, 1, 1, 0xfb},                          // [1, -5]
	{6, 2, 1, 1, 3, 1, 'x'},                        // [1, "x"]
	{6, 2, 1, 0, 0},                                // [0, nil]
	{6, 3, 1, 1, 1, 1, 1, 1},                       // [1, 1, 1]
	{6, 1, 1, 1},                                   // [1]
	{6, 2, 6, 1, 1, 1, 1, 1},                       // [[1], 1]
	{6, 2, 8, 0, 1, 1},                             // [int(1), 1]
	{6, 2, 2, 0, 0, 0, 0, 0, 0, 0},                 // [0, ...]
	{6, 2, 3, 1, 'a', 3, 1, 'b'},                   // ["a", "b"]: readers let in
	{6, 1, 3, 0},                                   // [""]
	{6, 0},                                         // []
	{6, 2, 3, 1, 'a', 1, 1},                        // ["a", 1]
	{7, 0}, {8, 0}, {8, 4}, {8, 7},
}

// validGrant is what the acquiring scripts reply: {1, fence}, or {0,
// writer, {holders...}}, with no negative number, or with bare (a
// Mutex's) a fence above 0 alone, Free. The writer is read as CutFence
// reads a holder's value, marked or not.
func validGrant(reply any, bare bool) (Grant, bool) {
	if f, ok := reply.(int64); ok {
		return Grant{OK: true, Free: true, Fence: uint64(f)}, f > 0 && bare
	}
	r, ok := reply.([]any)
	if !ok || len(r) < 2 {
		return Grant{}, false
	}
	switch {
	case r[0] == int64(1) && len(r) == 2:
		f, ok := r[1].(int64)
		return Grant{OK: true, Fence: uint64(f)}, ok && f >= 0
	case r[0] == int64(0) && len(r) == 3:
		w, wok := r[1].([]byte)
		hs, hok := r[2].([]any)
		if !wok || !hok {
			break
		}
		g := Grant{Writer: string(w)}
		v := bytes.TrimSuffix(w, []byte(QueuedMark))
		if i := bytes.LastIndexByte(v, ' '); i >= 0 {
			if f, err := strconv.ParseUint(string(v[i+1:]), 10, 64); err == nil && f < 1<<53 {
				g.Writer = string(v[:i])
			}
		}
		for _, h := range hs {
			b, ok := h.([]byte)
			if !ok {
				return Grant{}, false
			}
			g.Holders = append(g.Holders, string(b))
		}
		return g, true
	}
	return Grant{}, false
}

func FuzzParseGrant(f *testing.F) {
	for _, s := range encodeSeeds {
		f.Add(s, int64(1), []byte("holder"))
	}
	f.Add([]byte{}, int64(0), []byte{})
	f.Add([]byte{}, int64(-1), []byte(nil))
	f.Fuzz(func(t *testing.T, data []byte, fence int64, holder []byte) {
		reply, _ := decodeReply(data, 0)
		for _, bare := range []bool{false, true} {
			got, err := ParseGrant(reply, bare)
			if want, ok := validGrant(reply, bare); ok {
				if err != nil || !grantsEqual(got, want) {
					t.Fatalf("parseGrant(%#v, %v) = %+v, %v; want %+v, nil", reply, bare, got, err, want)
				}
			} else if !errors.Is(err, driver.ErrUnexpectedReply) || !grantsEqual(got, Grant{}) {
				t.Fatalf("parseGrant(%#v, %v) = %+v, %v; want driver.ErrUnexpectedReply", reply, bare, got, err)
			}
		}

		// Valid replies round-trip, a holder's value to its token.
		acquired := []any{int64(1), fence}
		token := string(bytes.ReplaceAll(holder, []byte(" "), nil))
		blocked := []any{int64(0), []byte(token + " " + strconv.FormatInt(max(fence, 0), 10)), []any{slicesClone(holder)}}
		want := Grant{Writer: token, Holders: []string{string(holder)}}
		if got, err := ParseGrant(blocked, false); err != nil || !grantsEqual(got, want) {
			t.Fatalf("parseGrant(%#v) = %+v, %v; want %+v", blocked, got, err, want)
		}
		if fence >= 0 {
			if got, err := ParseGrant(acquired, false); err != nil || !grantsEqual(got, Grant{OK: true, Fence: uint64(fence)}) {
				t.Fatalf("parseGrant({1, %d}) = %+v, %v", fence, got, err)
			}
		} else if _, err := ParseGrant(acquired, true); !errors.Is(err, driver.ErrUnexpectedReply) {
			t.Fatalf("parseGrant(%#v) = %v; want driver.ErrUnexpectedReply", acquired, err)
		}
	})
}

// slicesClone returns a non-nil copy of b: redigo's bulk strings are never
// nil slices.
func slicesClone(b []byte) []byte { return append([]byte{}, b...) }

// validRelease is what the release scripts reply: 0, 1, the non-empty
// token of the waiter the lock went to, or the non-empty tokens of the
// readers an RWMutex let in.
func validRelease(reply any) (ok bool, next []string, valid bool) {
	switch r := reply.(type) {
	case int64:
		return r == 1, nil, r == 0 || r == 1
	case []byte:
		return true, []string{string(r)}, len(r) > 0
	case []any:
		for _, t := range r {
			b, ok := t.([]byte)
			if !ok || len(b) == 0 {
				return false, nil, false
			}
			next = append(next, string(b))
		}
		return true, next, len(next) > 0
	}
	return false, nil, false
}

func FuzzParseRelease(f *testing.F) {
	for _, s := range encodeSeeds {
		f.Add(s, []byte("next"))
	}
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, data []byte, token []byte) {
		reply, _ := decodeReply(data, 0)
		ok, next, err := ParseRelease(reply)
		if wantOK, wantNext, valid := validRelease(reply); valid {
			if err != nil || ok != wantOK || !slices.Equal(next, wantNext) {
				t.Fatalf("parseRelease(%#v) = %v, %q, %v; want %v, %q, nil", reply, ok, next, err, wantOK, wantNext)
			}
		} else if !errors.Is(err, driver.ErrUnexpectedReply) || ok || next != nil {
			t.Fatalf("parseRelease(%#v) = %v, %q, %v; want driver.ErrUnexpectedReply", reply, ok, next, err)
		}

		// Valid replies round-trip.
		for _, r := range []struct {
			reply any
			next  []string
		}{
			{slicesClone(token), []string{string(token)}},
			{[]any{slicesClone(token), slicesClone(token)}, []string{string(token), string(token)}},
		} {
			ok, next, err = ParseRelease(r.reply)
			if len(token) > 0 && (err != nil || !ok || !slices.Equal(next, r.next)) {
				t.Fatalf("parseRelease(%#v) = %v, %q, %v; want true, %q, nil", r.reply, ok, next, err, r.next)
			}
			if len(token) == 0 && !errors.Is(err, driver.ErrUnexpectedReply) {
				t.Fatalf("parseRelease(%#v) = %v; want driver.ErrUnexpectedReply", r.reply, err)
			}
		}
	})
}

func FuzzParseFlag(f *testing.F) {
	for _, s := range encodeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		reply, _ := decodeReply(data, 0)
		got, err := ParseFlag(reply)
		if n, ok := reply.(int64); ok && (n == 0 || n == 1) {
			if err != nil || got != (n == 1) {
				t.Fatalf("parseFlag(%#v) = %v, %v; want %v, nil", reply, got, err, n == 1)
			}
		} else if !errors.Is(err, driver.ErrUnexpectedReply) || got {
			t.Fatalf("parseFlag(%#v) = %v, %v; want false, driver.ErrUnexpectedReply", reply, got, err)
		}
	})
}
