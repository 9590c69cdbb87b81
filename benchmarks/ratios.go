package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

const (
	ours    = "uncomplicated"
	ceiling = "sync.Mutex"
)

// A metric is one line of the ratio table.
type metric struct {
	name   string
	value  func(result) (v float64, ok bool) // ok is false when not measured
	higher bool                              // higher is better
	format func(float64) string
	// perHolder marks a metric that depends on how many workers share
	// each holder's place: comparable only between rows of one capacity.
	perHolder bool
}

var metrics = []metric{
	{name: "lock+unlock p50 µs", value: always(func(r result) time.Duration { return r.lockUnlock }), format: microsF},
	{name: "hand-off p50 µs", value: func(r result) (float64, bool) { return float64(r.handoffP50), r.handoffs > 0 }, format: microsF},
	{name: "p99 wait ms", value: func(r result) (float64, bool) { return float64(r.waitP99), r.acquisitions > 0 }, format: millisF, perHolder: true},
	{name: "utilisation %", value: func(r result) (float64, bool) { return r.utilisation, true }, higher: true,
		format: func(v float64) string { return fmt.Sprintf("%.1f", 100*v) }, perHolder: true},
}

// loadMetrics are further lines of our rows' ratios to our Mutex: what an
// acquisition costs the server, and how unevenly the workers acquired
// (the most acquisitions of one worker less the fewest).
var loadMetrics = []metric{
	{name: "Redis CPU / acquisition µs", value: func(r result) (float64, bool) {
		return float64(r.cpuPerAcq), !r.inProcess && r.acquisitions > 0
	}, format: microsF, perHolder: true},
	{name: "acquisitions / worker, max−min", value: func(r result) (float64, bool) {
		return float64(r.acqMax - r.acqMin), r.acquisitions > 0
	}, format: func(v float64) string { return fmt.Sprintf("%.0f", v) }, perHolder: true},
}

func always(f func(result) time.Duration) func(result) (float64, bool) {
	return func(r result) (float64, bool) { return float64(f(r)), true }
}

func microsF(v float64) string { return micros(time.Duration(v)) }
func millisF(v float64) string { return millis(time.Duration(v)) }

// printRatios compares uncomplicated with the best of the other Redis
// locks, metric by metric, and shows the sync.Mutex ceiling.
func printRatios(w io.Writer, results []result) {
	us, ok := find(results, ours)
	if !ok {
		return
	}
	var peers []result
	for _, r := range results {
		if r.name != ours && !r.inProcess && !r.floor && !r.own && r.base == "" && r.failed == nil {
			peers = append(peers, r)
		}
	}
	ceil, haveCeil := find(results, ceiling)
	rows := [][]string{{"metric", ours, "best peer", ours + " ÷ best peer", ceiling + " ceiling"}}
	for _, m := range append(slices.Clone(metrics), interleavedMetric) {
		rows = append(rows, m.cells(us, peers, ceil, haveCeil))
	}
	fmt.Fprintln(w)
	writeMarkdown(w, rows)
	if best, found := metrics[3].best(peers); found && haveCeil && ceil.utilisation > 0 {
		fmt.Fprintf(w, "\nUtilisation as a share of the %s ceiling: %s %.0f%%, best peer (%s) %.0f%%.\n",
			ceiling, ours, 100*us.utilisation/ceil.utilisation, best.name, 100*best.utilisation/ceil.utilisation)
	}
	printInterleavedClients(w, results, peers)
	printFloorRatios(w, results)
	printSteps(w, results)
}

// interleavedMetric is the uncontended lock+unlock timed in turn with the
// other rows (see interleave), which the drift of a noisy machine between
// the rows' own runs does not move.
var interleavedMetric = metric{name: "lock+unlock p50 µs, interleaved", value: func(r result) (float64, bool) {
	return float64(r.interleaved), r.interleaved > 0
}, format: microsF}

// printInterleavedClients divides the interleaved lock+unlock of the Mutex
// on each client library, on the server, by the fastest peer's.
func printInterleavedClients(w io.Writer, results, peers []result) {
	best, found := interleavedMetric.best(peers)
	if !found {
		return
	}
	if parts := clientRatios(results, func(r result) time.Duration { return r.interleaved }, best.interleaved); parts != "" {
		fmt.Fprintf(w, "\nInterleaved lock+unlock ÷ the fastest peer's (%s, %s): %s.\n",
			best.name, micros(best.interleaved), parts)
	}
}

// clientRatios lists, for the Mutex on each client library on the server,
// its value by ref: "uncomplicated 1.05×, ..."; a row without the value
// (0) is left out.
func clientRatios(results []result, value func(result) time.Duration, ref time.Duration) string {
	var parts []string
	for _, name := range []string{ours, ownGoredis, ownRueidis, ownValkey} {
		if r, ok := find(results, name); ok && value(r) > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f×", name, float64(value(r))/float64(ref)))
		}
	}
	return strings.Join(parts, ", ")
}

func find(results []result, name string) (result, bool) {
	for _, r := range results {
		if r.name == name && r.failed == nil {
			return r, true
		}
	}
	return result{}, false
}

func (m metric) cells(us result, peers []result, ceil result, haveCeil bool) []string {
	c := []string{m.name, "-", "-", "-", "-"}
	v, ok := m.value(us)
	if ok {
		c[1] = m.format(v)
	}
	if best, found := m.best(peers); found {
		b, _ := m.value(best)
		c[2] = fmt.Sprintf("%s (%s)", m.format(b), best.name)
		if ok && b != 0 {
			c[3] = fmt.Sprintf("%.2f×", v/b)
		}
	}
	if cv, measured := m.value(ceil); haveCeil && measured {
		c[4] = m.format(cv)
	}
	return c
}

// best returns the peer with the best measured value of m.
func (m metric) best(peers []result) (best result, found bool) {
	var bv float64
	for _, p := range peers {
		v, ok := m.value(p)
		if !ok {
			continue
		}
		if !found || (m.higher && v > bv) || (!m.higher && v < bv) {
			best, bv, found = p, v, true
		}
	}
	return best, found
}

// interleaveRows times the Redis rows among results in turn (see
// interleave): the Mutex, the RWMutex and Semaphore rows for
// printOwnRatios, the Mutex on the other clients and deployments for
// printBaseRatios, and the peers for printRatios.
func (d *deployments) interleaveRows(cfg config, results []result) error {
	var rs []row
	var at []int
	for _, r := range allRows() {
		i := slices.IndexFunc(results, func(res result) bool { return res.name == r.name && res.failed == nil })
		if i >= 0 && !r.inProcess && !r.floor {
			rs, at = append(rs, r), append(at, i)
		}
	}
	if len(rs) < 2 {
		return nil
	}
	p50s, err := d.interleave(rs, cfg)
	for j, i := range at {
		results[i].interleaved = p50s[j]
	}
	return err
}

// ratioMetrics are the columns of a table of rows divided by another row.
var ratioMetrics = slices.Concat(metrics, loadMetrics)

// ratioHeader returns the header of a table of rows divided by another
// row, whose first column is named first: the ratioMetrics, the
// interleaved lock+unlock second among them.
func ratioHeader(first string) []string {
	header := []string{first}
	for _, m := range ratioMetrics {
		header = append(header, unitless(m.name))
	}
	return slices.Insert(header, 2, "lock+unlock p50, interleaved")
}

// ratioCells returns the cells of r ÷ base under ratioHeader, the first
// named name: "-" for a metric not measured on either, and for one that
// depends on the workers per holder when r and base let in different
// numbers of holders.
func ratioCells(name string, r, base result) []string {
	c := []string{name}
	for _, m := range ratioMetrics {
		if m.perHolder && r.capacity != base.capacity { // another load
			c = append(c, "-")
			continue
		}
		c = append(c, m.ratio(r, base))
	}
	interleaved := "-"
	if r.interleaved > 0 && base.interleaved > 0 {
		interleaved = fmt.Sprintf("%.2f×", float64(r.interleaved)/float64(base.interleaved))
	}
	return slices.Insert(c, 2, interleaved)
}

// printOwnRatios compares our RWMutex and Semaphore rows with our Mutex:
// the uncontended lock+unlock, as timed in the table and interleaved, and
// the hand-off (the wake-up after a release) always; utilisation, p99
// wait, Redis CPU per acquisition and the spread of acquisitions per
// worker only for a row that lets one holder in, as the Mutex does: the
// workers of the others contend for more places. Each row's utilisation
// is also compared with its in-process ceiling's; their waits,
// microseconds, make no useful ratio.
func printOwnRatios(w io.Writer, results []result) {
	us, ok := find(results, ours)
	if !ok {
		return
	}
	rows := [][]string{append(ratioHeader("row ÷ "+ours+" (Mutex)"), "utilisation ÷ ceiling")}
	for _, r := range results {
		if !r.own || r.failed != nil {
			continue
		}
		c := ratioCells(r.name, r, us)
		if ceil, found := find(results, r.ceiling); found {
			c = append(c, metrics[3].ratio(r, ceil)+" ("+r.ceiling+")")
		} else {
			c = append(c, "-")
		}
		rows = append(rows, c)
	}
	if len(rows) == 1 {
		return
	}
	fmt.Fprintln(w)
	writeMarkdown(w, rows)
}

// printBaseRatios compares each row of our Mutex on another client or
// deployment with its base, in every column of printOwnRatios: go-redis
// with redigo, both on the server, and the Cluster with go-redis on the
// server. On the Cluster, Redis CPU is that of every master.
func printBaseRatios(w io.Writer, results []result) {
	rows := [][]string{ratioHeader("row ÷ its base")}
	for _, r := range results {
		base, ok := find(results, r.base)
		if r.base == "" || r.failed != nil || !ok {
			continue
		}
		rows = append(rows, ratioCells(r.name+" ÷ "+base.name, r, base))
	}
	if len(rows) == 1 {
		return
	}
	fmt.Fprintln(w)
	writeMarkdown(w, rows)
}

// ratio returns m of a ÷ m of b, "-" when either is not measured or b is 0.
func (m metric) ratio(a, b result) string {
	va, okA := m.value(a)
	vb, okB := m.value(b)
	if !okA || !okB || vb == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", va/vb)
}

// unitless returns a metric's name without its unit, for a ratio.
func unitless(name string) string {
	for _, unit := range []string{" µs", " ms", " %"} {
		if s, ok := strings.CutSuffix(name, unit); ok {
			return s
		}
	}
	return name
}
