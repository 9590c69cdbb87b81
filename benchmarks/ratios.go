package main

import (
	"fmt"
	"io"
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
}

var metrics = []metric{
	{name: "lock+unlock p50 µs", value: always(func(r result) time.Duration { return r.lockUnlock }), format: microsF},
	{name: "hand-off p50 µs", value: func(r result) (float64, bool) { return float64(r.handoffP50), r.handoffs > 0 }, format: microsF},
	{name: "p99 wait ms", value: func(r result) (float64, bool) { return float64(r.waitP99), r.acquisitions > 0 }, format: millisF},
	{name: "utilisation %", value: func(r result) (float64, bool) { return r.utilisation, true }, higher: true,
		format: func(v float64) string { return fmt.Sprintf("%.1f", 100*v) }},
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
		if r.name != ours && !r.inProcess && r.failed == nil {
			peers = append(peers, r)
		}
	}
	ceil, haveCeil := find(results, ceiling)
	rows := [][]string{{"metric", ours, "best peer", ours + " ÷ best peer", ceiling + " ceiling"}}
	for _, m := range metrics {
		rows = append(rows, m.cells(us, peers, ceil, haveCeil))
	}
	fmt.Fprintln(w)
	writeMarkdown(w, rows)
	if best, found := metrics[3].best(peers); found && haveCeil && ceil.utilisation > 0 {
		fmt.Fprintf(w, "\nUtilisation as a share of the %s ceiling: %s %.0f%%, best peer (%s) %.0f%%.\n",
			ceiling, ours, 100*us.utilisation/ceil.utilisation, best.name, 100*best.utilisation/ceil.utilisation)
	}
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
