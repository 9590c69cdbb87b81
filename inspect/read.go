package inspect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/engine"
	"github.com/uncomplicated-mutex/uncomplicated/internal/hashslot"
	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"
	"github.com/uncomplicated-mutex/uncomplicated/internal/link"
	"github.com/uncomplicated-mutex/uncomplicated/internal/lua"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// Inspection: what an operator, or ulock status, sees of a lock in Redis
// (package inspect shows it). It reads and, for ForceRelease, writes the
// keys of the three kinds of lock, so it works on any lock whatever made
// it.

// readLock inspects the lock name through a.
func readLock(ctx context.Context, a engine.Access, name string) (snapshot, error) {
	if err := checkNames(a, name); err != nil {
		return snapshot{info: Info{Name: name}}, err
	}
	return inspect(ctx, a, name)
}

// listLocks returns the locks under a's prefix whose names match, up to
// limit (limits.ListLimit when 0), and whether there were more.
func listLocks(ctx context.Context, a engine.Access, match string, limit int) (locks []Info, more bool, err error) {
	if limit < 0 {
		return nil, false, fmt.Errorf("%w: limit must not be negative, got %d", uncomplicated.ErrInvalidArgument, limit)
	}
	if _, err := path.Match(match, ""); err != nil {
		return nil, false, fmt.Errorf("%w: pattern %q: %v", uncomplicated.ErrInvalidArgument, match, err)
	}
	if limit == 0 {
		limit = limits.ListLimit
	}
	names, more, err := scanNames(ctx, a, match, limit)
	if err != nil {
		return nil, false, err
	}
	for _, name := range names {
		in, err := inspect(ctx, a, name)
		if err != nil {
			return nil, false, a.OpError("inspect.List", name, err)
		}
		locks = append(locks, in.info)
	}
	return locks, more, nil
}

// forceRelease removes the holders of the lock name and hands it on, as
// ForceRelease says; it returns the lock as it was just before, with the
// holders it removed.
func forceRelease(ctx context.Context, a engine.Access, name string) (Info, error) {
	in, err := readLock(ctx, a, name)
	if err != nil || in.info.Kind == "" {
		return in.info, err
	}
	s, keys := lua.ForceMutex, wire.MutexKeys(a.Prefix, name)
	switch in.info.Kind {
	case KindRWMutex:
		s, keys = lua.ForceRW, wire.RWKeys(a.Prefix, name)
	case KindSemaphore:
		s, keys = lua.ForceSem, wire.SemaphoreKeys(a.Prefix, name)
	}
	reply, _, err := a.Link.Eval(ctx, a.CommandTimeout, s, keys)
	if err == nil {
		var gone []string
		if gone, err = wire.Strs(reply); err == nil {
			in.info.Holders = in.removed(gone)
			return in.info, nil
		}
	}
	return in.info, a.Error(name, "uncomplicated: "+name+": "+err.Error(), err)
}

// access checks the Client and ctx, and returns the Client's Access.
func access(ctx context.Context, c *uncomplicated.Client) (engine.Access, error) {
	var inner *engine.Client
	if c != nil {
		inner = engine.Of(c)
	}
	a, err := inner.Access()
	if err == nil && ctx == nil {
		err = fmt.Errorf("%w: nil context", uncomplicated.ErrInvalidArgument)
	}
	return a, err
}

// checkNames checks that names are full names of locks under a's prefix.
func checkNames(a engine.Access, names ...string) error {
	for _, name := range names {
		if !strings.HasPrefix(name, a.Prefix+":") || len(name) == len(a.Prefix)+1 || strings.ContainsAny(name, "{}") {
			return fmt.Errorf("%w: %q is not the full name of a lock under the prefix %q", uncomplicated.ErrInvalidArgument, name, a.Prefix)
		}
	}
	return nil
}

// An snapshot is an Info and the tokens behind its holders, which
// never leave the package.
type snapshot struct {
	info   Info
	tokens []string // of info.Holders, in order
}

// inspect runs lua.Inspect on the lock name.
func inspect(ctx context.Context, a engine.Access, name string) (snapshot, error) {
	keys := slices.Concat(wire.MutexKeys(a.Prefix, name), wire.RWKeys(a.Prefix, name), wire.SemaphoreKeys(a.Prefix, name))
	reply, _, err := a.Link.Eval(ctx, a.CommandTimeout, lua.Inspect, keys, limits.Inspected)
	if err != nil {
		return snapshot{info: Info{Name: name}}, a.Error(name, "uncomplicated: "+name+": "+err.Error(), err)
	}
	in, err := parseInspection(name, reply)
	if err != nil {
		return in, a.Error(name, "uncomplicated: "+name+": "+err.Error(), err)
	}
	return in, nil
}

// removed returns the holders whose tokens a force script replied, as the
// snapshot saw them, or as their tokens tell when it did not see them.
// An RWMutex's reply starts with its writer's token, "" for none.
func (in *snapshot) removed(gone []string) []Holder {
	var hs []Holder
	for i, tok := range gone {
		if tok == "" {
			continue
		}
		tok, _ = wire.CutFence(tok)
		if j := slices.Index(in.tokens, tok); j >= 0 {
			hs = append(hs, in.info.Holders[j])
			continue
		}
		role := roleOf(in.info.Kind, wire.EntryExclusive)
		if in.info.Kind == KindRWMutex && i > 0 {
			role = RoleReader
		}
		t := wire.ParseToken(tok)
		hs = append(hs, Holder{Role: role, Label: t.Label, Since: t.Since, Timeout: t.Timeout, LeaseLeft: NoLease})
	}
	return hs
}

// scanNames returns the names of the locks under cfg's prefix that match,
// up to limit, scanning every master of a Cluster; more reports that it
// stopped at limit.
func scanNames(ctx context.Context, a engine.Access, match string, limit int) (names []string, more bool, err error) {
	seen := map[string]bool{}
	routes, err := scanRoutes(ctx, a)
	if err != nil {
		return nil, false, err
	}
	for _, route := range routes {
		cursor := "0"
		for {
			reply, err := a.Link.Command(ctx, a.CommandTimeout, route, "SCAN", cursor, "MATCH", globQuote(a.Prefix)+":*", "COUNT", 1000)
			if err != nil {
				return nil, false, fmt.Errorf("uncomplicated: SCAN: %w", err)
			}
			var keys []string
			if cursor, keys, err = wire.ParseScan(reply); err != nil {
				return nil, false, fmt.Errorf("uncomplicated: SCAN: %w", err)
			}
			for _, key := range keys {
				name, ok := lockOfKey(a.Prefix, key)
				if !ok || seen[name] {
					continue
				}
				if m, _ := path.Match(match, name); match != "" && !m {
					continue
				}
				if len(names) == limit {
					return names, true, nil
				}
				seen[name] = true
				names = append(names, name)
			}
			if cursor == "0" {
				break
			}
		}
	}
	return names, false, nil
}

// scanRoutes returns, for each master of a Cluster, a key that the driver
// routes to it; for one Redis, one nil route. It fails when Redis cannot
// say whether it is a Cluster (CLUSTER SLOTS), rather than scan one node
// of many.
func scanRoutes(ctx context.Context, a engine.Access) ([][]string, error) {
	slots, err := a.Link.SlotMap(ctx, a.CommandTimeout)
	var answered *link.ServerError
	switch {
	case errors.As(err, &answered):
		return nil, fmt.Errorf("uncomplicated: asking Redis whether it is a Cluster (CLUSTER SLOTS): %w", err)
	case err != nil: // no answer: nothing is known of the deployment
		return nil, fmt.Errorf("uncomplicated: Redis did not answer: %w", err)
	}
	if slots == nil {
		return [][]string{nil}, nil
	}
	masters := map[string]bool{}
	for _, addr := range slots {
		if addr != "" {
			masters[addr] = false
		}
	}
	var routes [][]string
	for i := 0; len(routes) < len(masters) && i < 1<<22; i++ {
		key := "scan:" + strconv.Itoa(i) // never the cursor, which the driver would take for a key
		if addr := slots[hashslot.Of(key)]; addr != "" && !masters[addr] {
			masters[addr] = true
			routes = append(routes, []string{key})
		}
	}
	return routes, nil
}

// globQuote quotes the characters of s that a SCAN MATCH pattern would
// read as a pattern.
func globQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lockOfKey returns the name of the lock that key belongs to: the name in
// its braces, or for a key without braces (a Mutex's) the key itself.
func lockOfKey(prefix, key string) (string, bool) {
	if !strings.HasPrefix(key, prefix+":") {
		return "", false
	}
	kind, rest, ok := strings.Cut(key, "{")
	if !ok {
		return key, !strings.Contains(key, "}")
	}
	if earlierKeys[strings.TrimSuffix(strings.TrimPrefix(kind, prefix+":"), ":")] {
		return "", false
	}
	name, _, ok := strings.Cut(rest, "}")
	return name, ok && strings.HasPrefix(name, prefix+":")
}

// earlierKeys are the kinds of key that earlier builds kept and no lock
// reads now (fence counters, a leader's announcement): they stay until
// deleted, and name no lock.
var earlierKeys = map[string]bool{"fence": true, "rwfence": true, "semfence": true, "leader": true}

// parseInspection reads lua.Inspect's reply about the lock name. A name
// that locks of several kinds have used shows the kind that has holders,
// else the one with waiters, else the first of mutex, rwmutex and
// semaphore that Redis has a key of. Its Fence is the highest of its
// holders' fences: 0 when it is free, whatever keys are left.
func parseInspection(name string, reply any) (snapshot, error) {
	r, ok := reply.([]any)
	if !ok || len(r) != 4 {
		return snapshot{info: Info{Name: name}}, fmt.Errorf("%w: snapshot %T", driver.ErrUnexpectedReply, reply)
	}
	now, _ := r[0].(int64)
	var found []snapshot
	sizes := [...]int{3, 5, 4} // of each kind's part (see lua.Inspect)
	for i, kind := range []Kind{KindMutex, KindRWMutex, KindSemaphore} {
		part, _ := r[i+1].([]any)
		if len(part) != sizes[i] {
			return snapshot{info: Info{Name: name}}, fmt.Errorf("%w: snapshot of a %s: %T", driver.ErrUnexpectedReply, kind, r[i+1])
		}
		if n, _ := part[0].(int64); n == 0 {
			continue
		}
		in, err := parseKind(name, kind, now, part)
		if err != nil {
			return in, err
		}
		found = append(found, in)
	}
	for _, pick := range []func(snapshot) bool{
		func(in snapshot) bool { return len(in.info.Holders) > 0 },
		func(in snapshot) bool { return len(in.info.Waiters) > 0 },
		func(snapshot) bool { return true },
	} {
		if i := slices.IndexFunc(found, pick); i >= 0 {
			return found[i], nil
		}
	}
	return snapshot{info: Info{Name: name, At: time.UnixMilli(now)}}, nil
}

// parseKind reads the part of lua.Inspect's reply about the lock's keys
// of kind.
func parseKind(name string, kind Kind, now int64, part []any) (snapshot, error) {
	in := snapshot{info: Info{Name: name, Kind: kind, At: time.UnixMilli(now)}}
	p := inspectParser{in: &in, now: now}
	switch kind {
	case KindMutex:
		p.token(part[1], RoleHolder)
		p.queue(part[2])
	case KindRWMutex:
		p.token(part[1], RoleWriter)
		p.holders(part[2], nil, RoleReader)
		waiting, _ := part[3].(int64)
		in.info.WaitingWriters = int(waiting)
		p.queue(part[4])
	case KindSemaphore:
		p.holders(part[1], part[2], RolePermit)
		p.queue(part[3])
	}
	for _, h := range in.info.Holders {
		in.info.Fence = max(in.info.Fence, h.Fence)
	}
	in.sort()
	return in, p.err
}

// sort puts the holders in the order they came, as their fences, or for
// readers when they began, tell; Redis orders them by their leases' end.
func (in *snapshot) sort() {
	hs, toks := in.info.Holders, in.tokens
	idx := make([]int, len(hs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if c := cmp.Compare(hs[a].Fence, hs[b].Fence); c != 0 {
			return c
		}
		return hs[a].Since.Compare(hs[b].Since)
	})
	in.info.Holders, in.tokens = make([]Holder, len(hs)), make([]string, len(hs))
	for i, j := range idx {
		in.info.Holders[i], in.tokens[i] = hs[j], toks[j]
	}
}

// An inspectParser reads the parts of lua.Inspect's reply into in; it
// keeps the first error.
type inspectParser struct {
	in  *snapshot
	now int64 // Redis's time, in ms
	err error
}

func (p *inspectParser) fail(what string, v any) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: %s %T", driver.ErrUnexpectedReply, what, v)
	}
}

// add records a holder with token, its lease left in ms (-1: none) and
// fence.
func (p *inspectParser) add(token, role string, left int64, fence uint64) {
	t := wire.ParseToken(token)
	lease := NoLease
	if left >= 0 {
		lease = time.Duration(left) * time.Millisecond
	}
	p.in.info.Holders = append(p.in.info.Holders, Holder{Role: role, Label: t.Label, Since: t.Since, Timeout: t.Timeout, LeaseLeft: lease, Fence: fence})
	p.in.tokens = append(p.in.tokens, token)
}

// token reads {value, pttl} of a Mutex's holder or an RWMutex's writer,
// whose value carries its fence (see wire.CutFence).
func (p *inspectParser) token(v any, role string) {
	r, _ := v.([]any)
	if len(r) != 2 {
		p.fail("token", v)
		return
	}
	value, _ := r[0].([]byte)
	pttl, _ := r[1].(int64)
	if len(value) > 0 {
		token, fence := wire.CutFence(string(value))
		p.add(token, role, pttl, fence)
	}
}

// holders reads {token, expiry} pairs of a set of holders, and their
// fences when fences is not nil.
func (p *inspectParser) holders(v, fences any, role string) {
	r, err := wire.Strs(v)
	fs, ferr := wire.Strs(fences)
	if err != nil || ferr != nil || len(r)%2 != 0 || fences != nil && len(fs) != len(r)/2 {
		p.fail("holders", v)
		return
	}
	for i := 0; i < len(r); i += 2 {
		left := int64(-1)
		if score, err := strconv.ParseFloat(r[i+1], 64); err == nil && score < 1e18 {
			left = max(int64(score)-p.now, 0)
		}
		var fence uint64
		if fences != nil {
			fence, _ = strconv.ParseUint(fs[i/2], 10, 64)
		}
		p.add(r[i], role, left, fence)
	}
}

// queue reads {token, entry} pairs of queued waiters.
func (p *inspectParser) queue(v any) {
	r, err := wire.Strs(v)
	if err != nil || len(r)%2 != 0 {
		p.fail("queue", v)
		return
	}
	for i := 0; i < len(r); i += 2 {
		kind, _, _ := strings.Cut(r[i+1], " ")
		if n, err := strconv.Atoi(kind); err == nil && p.in.info.Kind == KindSemaphore {
			p.in.info.Permits = n
		}
		t := wire.ParseToken(r[i])
		p.in.info.Waiters = append(p.in.info.Waiters, Holder{Role: roleOf(p.in.info.Kind, kind), Label: t.Label, Since: t.Since, Timeout: t.Timeout})
	}
}

// roleOf names the role of a queue entry of kind (see wire.QueueEntry) in a lock
// of k.
func roleOf(k Kind, kind string) string {
	switch {
	case k == KindMutex:
		return RoleHolder
	case k == KindSemaphore:
		return RolePermit
	case kind == wire.EntryShared:
		return RoleReader
	}
	return RoleWriter
}
