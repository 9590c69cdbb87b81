package uncomplicated

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"

	"github.com/uncomplicated-mutex/uncomplicated/internal/hashslot"
)

// Inspection: what an operator, or ulock status, sees of a lock in Redis.
// It reads and, for ForceRelease, writes the keys of the three kinds of
// lock, so it works on any lock whatever made it.

// A Kind is the kind of a lock: the primitive that made it.
type Kind string

// The kinds of lock.
const (
	KindMutex     Kind = "mutex"
	KindRWMutex   Kind = "rwmutex"
	KindSemaphore Kind = "semaphore"
)

// The roles of a Holder.
const (
	RoleHolder = "holder" // of a Mutex
	RoleWriter = "writer" // of an RWMutex
	RoleReader = "reader" // of an RWMutex
	RolePermit = "permit" // of a Semaphore
)

// NoLease is the LeaseLeft of a hold without a lease (WithLease(0)).
const NoLease time.Duration = -1

// LockInfo is what Redis had of one lock at one instant.
type LockInfo struct {
	Name string // the lock's full name, as Mutex.Name returns it
	Kind Kind   // "" when Redis has nothing of the lock
	// Fence is the lock's fence counter: the highest fence handed out so
	// far, which the next holder's exceeds; 0 before the first.
	Fence uint64
	// Holders are the lock's holders: the holder of a Mutex, the writer
	// or the readers of an RWMutex, the permits of a Semaphore.
	Holders []Holder
	// Waiters are the waiters in the lock's queue, oldest first, up to
	// 100. A waiter joins the queue once its Client listens for
	// hand-offs; one that has just begun to wait may not be there yet.
	Waiters []Holder
	// WaitingWriters is, for an RWMutex, how many writers wait: while one
	// does, no new reader gets in.
	WaitingWriters int
	// Permits is, for a Semaphore, its number of permits as its waiters
	// state it; 0 when nobody waits (Redis does not keep it otherwise).
	Permits int
	At      time.Time // when Redis read it, by Redis's clock
}

// Held reports whether the lock has a holder.
func (l LockInfo) Held() bool { return len(l.Holders) > 0 }

// A Holder is one holder, or waiter, of a lock, as far as Redis shows it;
// never its secret token.
type Holder struct {
	Role  string // RoleHolder, RoleWriter, RoleReader or RolePermit
	Label string // its Client's WithHolderLabel; "" when it gave none
	// Since is when the hold began, or the waiter began to wait, by its
	// holder's clock. A hold that its holder waited for (a hand-off, a
	// take-over, an attempt after the first) shows when the wait began,
	// until the hold's first Refresh. Zero when unknown.
	Since time.Time
	// Timeout is its WithTimeout: a waiter finds a holder stuck once it
	// has kept one token for this long, or for the waiter's own timeout if
	// that is longer. Zero when unknown (a holder of an older version).
	Timeout time.Duration
	// LeaseLeft is, for a holder, how long its lease lasts from At, by
	// Redis's clock; NoLease when it has none.
	LeaseLeft time.Duration
	Fence     uint64 // a holder's fence; 0 for a reader and a waiter
}

// Inspect returns what Redis has of the lock named name.
// The name is its full name as
// Mutex.Name and List report it ("lock:orders.Order:42"; for a lock of
// Client.Named, see Named's Name). It costs Redis one script, which reads
// the lock's keys (whichever kind it is) and up to 100 of its
// holders and waiters. A name that is not under the Client's prefix, or
// holds '{' or '}', gives an error wrapping ErrInvalidArgument.
func (c *Client) Inspect(ctx context.Context, name string) (LockInfo, error) {
	cfg, err := c.inspecting(ctx, name)
	if err != nil {
		return LockInfo{}, err
	}
	in, err := c.inspect(ctx, cfg, name)
	return in.info, opError("Inspect", name, err)
}

// List returns the locks under the Client's prefix whose full names match
// the pattern match. The pattern is "" for all, or in path.Match's syntax,
// as in "lock:orders.Order:*"), each as Inspect reads it, in SCAN's order:
// the first limit found (1,000 when limit is 0), and more
// reports that there were others. A lock counts while Redis has anything of
// it, its fence counter included, which stays after its last release. It
// costs Redis a SCAN of the whole keyspace, 1000 keys per call (on a
// Cluster, of every master), and then one Inspect per lock; it is for an
// operator, not for a program's hot path. A bad pattern or a negative limit
// gives an error wrapping ErrInvalidArgument.
func (c *Client) List(ctx context.Context, match string, limit int) (locks []LockInfo, more bool, err error) {
	cfg, err := c.inspecting(ctx)
	if err == nil && limit < 0 {
		err = fmt.Errorf("%w: limit must not be negative, got %d", ErrInvalidArgument, limit)
	}
	if _, perr := path.Match(match, ""); err == nil && perr != nil {
		err = fmt.Errorf("%w: pattern %q: %v", ErrInvalidArgument, match, perr)
	}
	if err != nil {
		return nil, false, err
	}
	if limit == 0 {
		limit = limits.ListLimit
	}
	names, more, err := c.scanNames(ctx, cfg, match, limit)
	if err != nil {
		return nil, false, err
	}
	for _, name := range names {
		in, err := c.inspect(ctx, cfg, name)
		if err != nil {
			return nil, false, opError("List", name, err)
		}
		locks = append(locks, in.info)
	}
	return locks, more, nil
}

// ForceRelease breaks a lock, whoever holds it.
// It removes its holders (the holder, the
// writer and readers, or the permits) and hands the lock to its waiters as
// a release would, under a new fence; a waiter not yet queued gets it at
// its next attempt, with a higher fence too. It returns the lock as it was
// just before, whose Holders are what it removed (none when the lock was
// free). A holder that was only slow finds its hold lost at its next
// Refresh or release. It costs two scripts: an Inspect, and the removal.
func (c *Client) ForceRelease(ctx context.Context, name string) (LockInfo, error) {
	info, err := c.forceRelease(ctx, name)
	return info, opError("ForceRelease", name, err)
}

// forceRelease is ForceRelease.
func (c *Client) forceRelease(ctx context.Context, name string) (LockInfo, error) {
	cfg, err := c.inspecting(ctx, name)
	if err != nil {
		return LockInfo{}, err
	}
	in, err := c.inspect(ctx, cfg, name)
	if err != nil || in.info.Kind == "" {
		return in.info, err
	}
	s, keys := forceMutexScript, mutexKeysOf(cfg.prefix, name)
	switch in.info.Kind {
	case KindRWMutex:
		s, keys = forceRWScript, rwKeysOf(cfg.prefix, name)
	case KindSemaphore:
		s, keys = forceSemScript, semKeysOf(cfg.prefix, name)
	}
	reply, _, err := c.redis.eval(ctx, cfg.commandTimeout, s, keys)
	if err != nil {
		return in.info, newError(name, "uncomplicated: "+name+": "+err.Error(), err)
	}
	gone, err := strs(reply)
	if err != nil {
		return in.info, newError(name, "uncomplicated: "+name+": "+err.Error(), err)
	}
	in.info.Holders = in.removed(gone)
	return in.info, nil
}

// inspecting checks the Client, ctx and the names of the locks to
// inspect, and returns the Client's options.
func (c *Client) inspecting(ctx context.Context, names ...string) (config, error) {
	cfg, err := c.config(nil)
	if err != nil {
		return cfg, err
	}
	if ctx == nil {
		return cfg, fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, cfg.prefix+":") || len(name) == len(cfg.prefix)+1 || strings.ContainsAny(name, "{}") {
			return cfg, fmt.Errorf("%w: %q is not the full name of a lock under the prefix %q", ErrInvalidArgument, name, cfg.prefix)
		}
	}
	return cfg, nil
}

// An inspection is a LockInfo and the tokens behind its holders, which
// never leave the package.
type inspection struct {
	info   LockInfo
	tokens []string // of info.Holders, in order
}

// inspect runs inspectScript on the lock name.
func (c *Client) inspect(ctx context.Context, cfg config, name string) (inspection, error) {
	keys := slices.Concat(mutexKeysOf(cfg.prefix, name), rwKeysOf(cfg.prefix, name), semKeysOf(cfg.prefix, name))
	reply, _, err := c.redis.eval(ctx, cfg.commandTimeout, inspectScript, keys, limits.Inspected)
	if err != nil {
		return inspection{info: LockInfo{Name: name}}, newError(name, "uncomplicated: "+name+": "+err.Error(), err)
	}
	in, err := parseInspection(name, reply)
	if err != nil {
		return in, newError(name, "uncomplicated: "+name+": "+err.Error(), err)
	}
	return in, nil
}

// removed returns the holders whose tokens a force script replied, as the
// inspection saw them, or as their tokens tell when it did not see them.
// An RWMutex's reply starts with its writer's token, "" for none.
func (in *inspection) removed(gone []string) []Holder {
	var hs []Holder
	for i, tok := range gone {
		if tok == "" {
			continue
		}
		if j := slices.Index(in.tokens, tok); j >= 0 {
			hs = append(hs, in.info.Holders[j])
			continue
		}
		role := roleOf(in.info.Kind, entryExclusive)
		if in.info.Kind == KindRWMutex && i > 0 {
			role = RoleReader
		}
		t := parseToken(tok)
		hs = append(hs, Holder{Role: role, Label: t.label, Since: t.since, Timeout: t.timeout, LeaseLeft: NoLease})
	}
	return hs
}

// scanNames returns the names of the locks under cfg's prefix that match,
// up to limit, scanning every master of a Cluster; more reports that it
// stopped at limit.
func (c *Client) scanNames(ctx context.Context, cfg config, match string, limit int) (names []string, more bool, err error) {
	seen := map[string]bool{}
	routes, err := c.scanRoutes(ctx)
	if err != nil {
		return nil, false, err
	}
	for _, route := range routes {
		cursor := "0"
		for {
			reply, err := c.redis.command(ctx, cfg.commandTimeout, route, "SCAN", cursor, "MATCH", globQuote(cfg.prefix)+":*", "COUNT", 1000)
			if err != nil {
				return nil, false, fmt.Errorf("uncomplicated: SCAN: %w", err)
			}
			var keys []string
			if cursor, keys, err = parseScan(reply); err != nil {
				return nil, false, fmt.Errorf("uncomplicated: SCAN: %w", err)
			}
			for _, key := range keys {
				name, ok := lockOfKey(cfg.prefix, key)
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
func (c *Client) scanRoutes(ctx context.Context) ([][]string, error) {
	slots, err := c.slotMap(ctx)
	if err != nil {
		return nil, fmt.Errorf("uncomplicated: reading the Cluster's slots (CLUSTER SLOTS): %w", err)
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
	_, rest, ok := strings.Cut(key, "{")
	if !ok {
		return key, !strings.Contains(key, "}")
	}
	name, _, ok := strings.Cut(rest, "}")
	return name, ok && strings.HasPrefix(name, prefix+":")
}

// parseInspection reads inspectScript's reply about the lock name. A name
// that locks of several kinds have used shows the kind that has holders,
// else the one with waiters, else the first of mutex, rwmutex and
// semaphore that Redis has a key of (a fence counter stays for ever).
func parseInspection(name string, reply any) (inspection, error) {
	r, ok := reply.([]any)
	if !ok || len(r) != 4 {
		return inspection{info: LockInfo{Name: name}}, fmt.Errorf("%w: inspection %T", ErrUnexpectedReply, reply)
	}
	now, _ := r[0].(int64)
	var found []inspection
	sizes := [...]int{4, 6, 5} // of each kind's part (see inspectScript)
	for i, kind := range []Kind{KindMutex, KindRWMutex, KindSemaphore} {
		part, _ := r[i+1].([]any)
		if len(part) != sizes[i] {
			return inspection{info: LockInfo{Name: name}}, fmt.Errorf("%w: inspection of a %s: %T", ErrUnexpectedReply, kind, r[i+1])
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
	for _, pick := range []func(inspection) bool{
		func(in inspection) bool { return len(in.info.Holders) > 0 },
		func(in inspection) bool { return len(in.info.Waiters) > 0 },
		func(inspection) bool { return true },
	} {
		if i := slices.IndexFunc(found, pick); i >= 0 {
			return found[i], nil
		}
	}
	return inspection{info: LockInfo{Name: name, At: time.UnixMilli(now)}}, nil
}

// parseKind reads the part of inspectScript's reply about the lock's keys
// of kind.
func parseKind(name string, kind Kind, now int64, part []any) (inspection, error) {
	in := inspection{info: LockInfo{Name: name, Kind: kind, At: time.UnixMilli(now)}}
	p := inspectParser{in: &in, now: now}
	switch kind {
	case KindMutex:
		p.token(part[1], RoleHolder)
		p.fence(part[2])
		p.queue(part[3])
	case KindRWMutex:
		p.token(part[1], RoleWriter)
		p.holders(part[2], nil, RoleReader)
		waiting, _ := part[3].(int64)
		in.info.WaitingWriters = int(waiting)
		p.fence(part[4])
		p.queue(part[5])
	case KindSemaphore:
		p.holders(part[1], part[2], RolePermit)
		p.fence(part[3])
		p.queue(part[4])
	}
	in.sort()
	return in, p.err
}

// sort puts the holders in the order they came, as their fences, or for
// readers when they began, tell; Redis orders them by their leases' end.
func (in *inspection) sort() {
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

// An inspectParser reads the parts of inspectScript's reply into in; it
// keeps the first error.
type inspectParser struct {
	in  *inspection
	now int64 // Redis's time, in ms
	err error
}

func (p *inspectParser) fail(what string, v any) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: %s %T", ErrUnexpectedReply, what, v)
	}
}

// add records a holder with token, its lease left in ms (-1: none) and
// fence.
func (p *inspectParser) add(token, role string, left int64, fence uint64) {
	t := parseToken(token)
	lease := NoLease
	if left >= 0 {
		lease = time.Duration(left) * time.Millisecond
	}
	p.in.info.Holders = append(p.in.info.Holders, Holder{Role: role, Label: t.label, Since: t.since, Timeout: t.timeout, LeaseLeft: lease, Fence: fence})
	p.in.tokens = append(p.in.tokens, token)
}

// token reads {token, pttl} of a Mutex's holder or an RWMutex's writer,
// whose fence is the counter's (fence fills it in).
func (p *inspectParser) token(v any, role string) {
	r, _ := v.([]any)
	if len(r) != 2 {
		p.fail("token", v)
		return
	}
	tok, _ := r[0].([]byte)
	pttl, _ := r[1].(int64)
	if len(tok) > 0 {
		p.add(string(tok), role, pttl, 0)
	}
}

// fence reads the fence counter; a Mutex's holder and an RWMutex's writer
// hold the counter's fence.
func (p *inspectParser) fence(v any) {
	b, ok := v.([]byte)
	if !ok {
		p.fail("fence counter", v)
		return
	}
	f, _ := strconv.ParseUint(string(b), 10, 64)
	p.in.info.Fence = f
	for i := range p.in.info.Holders {
		if r := p.in.info.Holders[i].Role; r == RoleHolder || r == RoleWriter {
			p.in.info.Holders[i].Fence = f
		}
	}
}

// holders reads {token, expiry} pairs of a set of holders, and their
// fences when fences is not nil.
func (p *inspectParser) holders(v, fences any, role string) {
	r, err := strs(v)
	fs, ferr := strs(fences)
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
	r, err := strs(v)
	if err != nil || len(r)%2 != 0 {
		p.fail("queue", v)
		return
	}
	for i := 0; i < len(r); i += 2 {
		kind, _, _ := strings.Cut(r[i+1], " ")
		if n, err := strconv.Atoi(kind); err == nil && p.in.info.Kind == KindSemaphore {
			p.in.info.Permits = n
		}
		t := parseToken(r[i])
		p.in.info.Waiters = append(p.in.info.Waiters, Holder{Role: roleOf(p.in.info.Kind, kind), Label: t.label, Since: t.since, Timeout: t.timeout})
	}
}

// roleOf names the role of a queue entry of kind (see queueLua) in a lock
// of k.
func roleOf(k Kind, kind string) string {
	switch {
	case k == KindMutex:
		return RoleHolder
	case k == KindSemaphore:
		return RolePermit
	case kind == entryShared:
		return RoleReader
	}
	return RoleWriter
}
