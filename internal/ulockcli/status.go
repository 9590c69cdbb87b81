package ulockcli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/inspect"
	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"
)

// ulock status and ulock list: what locks there are and who holds them,
// as a table or as JSON Lines. "ulock help status" documents both.

// status is ulock status: it shows the locks that args name.
func (s *session) status(ctx context.Context, args []string) int {
	fs := newFlags("status")
	var r redisFlags
	r.add(fs)
	asJSON := fs.Bool("json", false, "")
	names, rest, done, code := s.parse(fs, args)
	if done {
		return code
	}
	names = append(names, rest...)
	if len(names) == 0 {
		return s.usage("missing NAME")
	}
	ctx, c, closeAll, err := s.inspecting(ctx, r)
	if err != nil {
		return s.fail(err)
	}
	defer closeAll()
	var locks []inspect.Info
	for _, name := range names {
		full, err := fullName(c, r.prefix, name)
		if err != nil {
			return s.fail(err)
		}
		info, err := inspect.Lock(ctx, c, full)
		if err != nil {
			return s.failIn(ctx, err, "")
		}
		locks = append(locks, info)
	}
	markElections(r.prefix, locks)
	if err := show(s.stdout, locks, *asJSON); err != nil {
		return s.fail(err)
	}
	return exitOK
}

// list is ulock list: it shows the locks under the prefix.
func (s *session) list(ctx context.Context, args []string) int {
	fs := newFlags("list")
	var r redisFlags
	r.add(fs)
	asJSON := fs.Bool("json", false, "")
	match := fs.String("match", "", "")
	limit := fs.Int("limit", limits.ListLimit, "")
	names, rest, done, code := s.parse(fs, args)
	if done {
		return code
	}
	if len(names)+len(rest) > 0 {
		return s.usage(fmt.Sprintf("list takes no NAME (got %q); use --match", append(names, rest...)))
	}
	if *limit < 1 {
		return s.usage(fmt.Sprintf("--limit must be at least 1, got %d", *limit))
	}
	pattern := *match
	if pattern != "" && !strings.HasPrefix(pattern, r.prefix+":") {
		pattern = r.prefix + ":" + pattern
	}
	ctx, c, closeAll, err := s.inspecting(ctx, r)
	if err != nil {
		return s.fail(err)
	}
	defer closeAll()
	locks, more, err := inspect.List(ctx, c, pattern, *limit)
	if err != nil {
		return s.failIn(ctx, err, "")
	}
	markElections(r.prefix, locks)
	if err := show(s.stdout, locks, *asJSON); err != nil {
		return s.fail(err)
	}
	switch {
	case more:
		s.say("showing the first %d locks; more match (raise --limit, or narrow --match)", *limit)
	case len(locks) == 0 && !*asJSON:
		s.say("no locks match %s", cmp.Or(pattern, r.prefix+":*"))
	}
	return exitOK
}

// show prints locks as a table, or as JSON Lines.
func show(w io.Writer, locks []inspect.Info, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, l := range locks {
			if err := enc.Encode(viewOf(l)); err != nil {
				return err
			}
		}
		return nil
	}
	if len(locks) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSTATE\tHOLDER\tHELD FOR\tLEASE LEFT\tTIMEOUT\tFENCE\tWAITERS\tIN USE")
	for _, l := range locks {
		fmt.Fprintln(tw, strings.Join(row(l), "\t"))
	}
	return tw.Flush()
}

// row is the table's row of l.
func row(l inspect.Info) []string {
	kind, state, holder, since, lease, timeout := cmp.Or(string(l.Kind), "-"), "free", "-", "-", "-", "-"
	if l.Held() {
		first := l.Holders[0]
		state, holder = "held", holderCell(l)
		since = "?"
		if d, ok := heldFor(l, first); ok {
			since = short(d)
		}
		lease = "none"
		if first.LeaseLeft != inspect.NoLease {
			lease = short(first.LeaseLeft)
		}
		if first.Timeout > 0 {
			timeout = short(first.Timeout)
		}
	}
	waiters := strconv.Itoa(len(l.Waiters))
	if l.WaitingWriters > 0 {
		waiters += fmt.Sprintf(" (%d %s)", l.WaitingWriters, plural(l.WaitingWriters, "writer", "writers"))
	}
	return []string{l.Name, kind, state, holder, since, lease, timeout, strconv.FormatUint(l.Fence, 10), waiters, inUse(l)}
}

// holderCell names the first holder of l, and how many more there are:
// "web-3:4127 +2".
func holderCell(l inspect.Info) string {
	cell := cmp.Or(l.Holders[0].Label, "(no label)")
	if n := len(l.Holders) - 1; n > 0 {
		cell += fmt.Sprintf(" +%d", n)
	}
	return cell
}

// inUse tells how much of l is taken: "writer" or "3 readers" for an
// RWMutex, "2 of 3" permits of a Semaphore (of N only when its waiters
// tell N), "-" for a Mutex.
func inUse(l inspect.Info) string {
	switch l.Kind {
	case inspect.KindRWMutex:
		if l.Held() && l.Holders[0].Role == inspect.RoleWriter {
			return "writer"
		}
		return fmt.Sprintf("%d %s", len(l.Holders), plural(len(l.Holders), "reader", "readers"))
	case inspect.KindSemaphore:
		if l.Permits > 0 {
			return fmt.Sprintf("%d of %d", len(l.Holders), l.Permits)
		}
		return strconv.Itoa(len(l.Holders))
	}
	return "-"
}

// heldFor is how long h had held l, or waited for it, when Redis read l:
// from h's Since, by its holder's clock, to l.At, by Redis's, and so never
// below 0. It reports false when Since is unknown.
func heldFor(l inspect.Info, h inspect.Holder) (time.Duration, bool) {
	if h.Since.IsZero() {
		return 0, false
	}
	return max(l.At.Sub(h.Since), 0), true
}

// short prints d for the table: to 0.1 s below 10 s, to the second
// below an hour, to the minute above.
func short(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
}

// lockView is a lock as status --json and list --json print it.
type lockView struct {
	Name           string       `json:"name"`
	Kind           string       `json:"kind"`
	State          string       `json:"state"`
	Fence          uint64       `json:"fence"`
	Holders        []holderView `json:"holders"`
	Waiters        []waiterView `json:"waiters"`
	WaitingWriters int          `json:"waiting_writers"`
	Permits        *int         `json:"permits"`
	At             string       `json:"at"`
}

// holderView is a holder as lockView shows it.
type holderView struct {
	Role      string   `json:"role"`
	Label     string   `json:"label"`
	Since     *string  `json:"since"`
	HeldFor   *float64 `json:"held_for_seconds"`
	LeaseLeft *float64 `json:"lease_left_seconds"`
	Timeout   *float64 `json:"timeout_seconds"`
	Fence     uint64   `json:"fence"`
}

// waiterView is a waiter as lockView shows it.
type waiterView struct {
	Role    string   `json:"role"`
	Label   string   `json:"label"`
	Since   *string  `json:"since"`
	Waited  *float64 `json:"waited_seconds"`
	Timeout *float64 `json:"timeout_seconds"`
}

// rfc3339 is the format of the times of lockView: RFC 3339 in UTC, to
// the millisecond.
const rfc3339 = "2006-01-02T15:04:05.000Z07:00"

func viewOf(l inspect.Info) lockView {
	v := lockView{
		Name: l.Name, Kind: string(l.Kind), State: "free", Fence: l.Fence,
		Holders: []holderView{}, Waiters: []waiterView{},
		WaitingWriters: l.WaitingWriters, At: l.At.UTC().Format(rfc3339),
	}
	if l.Held() {
		v.State = "held"
	}
	if l.Permits > 0 {
		v.Permits = &l.Permits
	}
	for _, h := range l.Holders {
		hv := holderView{Role: h.Role, Label: h.Label, Since: timeOf(h.Since), Timeout: timeoutOf(h.Timeout), Fence: h.Fence}
		if d, ok := heldFor(l, h); ok {
			hv.HeldFor = seconds(d)
		}
		if h.LeaseLeft != inspect.NoLease {
			hv.LeaseLeft = seconds(h.LeaseLeft)
		}
		v.Holders = append(v.Holders, hv)
	}
	for _, w := range l.Waiters {
		wv := waiterView{Role: w.Role, Label: w.Label, Since: timeOf(w.Since), Timeout: timeoutOf(w.Timeout)}
		if d, ok := heldFor(l, w); ok {
			wv.Waited = seconds(d)
		}
		v.Waiters = append(v.Waiters, wv)
	}
	return v
}

// timeOf is t for lockView: nil when unknown.
func timeOf(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(rfc3339)
	return &s
}

// timeoutOf is a holder's or a waiter's timeout for lockView, in
// seconds: nil when unknown (0, a holder of an older version).
func timeoutOf(d time.Duration) *float64 {
	if d <= 0 {
		return nil
	}
	return seconds(d)
}

// seconds is d in seconds, to the millisecond.
func seconds(d time.Duration) *float64 {
	f := math.Round(d.Seconds()*1000) / 1000
	return &f
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
