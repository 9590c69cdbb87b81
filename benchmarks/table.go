package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

func printHeader(w io.Writer, e *env, cfg config) error {
	version, err := e.info("server", "redis_version")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# Redis lock benchmarks\n\n")
	fmt.Fprintf(w, "%s %s/%s, %d CPUs, %s; redis-server %s on loopback, PING p50 %s µs\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), version, micros(e.ping))
	fmt.Fprintf(w, "uncontended: %d lock+unlock by one goroutine; contended: %d workers (one client each) for %v, hold %v, think %v; semaphores: %d permits\n\n",
		cfg.uncontended, cfg.workers, cfg.duration, cfg.hold, cfg.think, cfg.semPermits())
	return nil
}

// cpuModel returns the first model name of /proc/cpuinfo, or "CPU model
// unknown".
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "CPU model unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "CPU model unknown"
}

var columns = []string{
	"lock", "lock+unlock p50 µs (RTTs)", "cmds / lock+unlock",
	"utilisation %", "p99 wait ms", "acquisitions / worker", "cmds / acquisition",
	"hand-off p50 µs (RTTs)", "hand-off p99 µs", "errors", "overlaps",
}

func printTable(w io.Writer, e *env, results []result) {
	rows := [][]string{columns}
	var notes []string
	for _, r := range results {
		rows = append(rows, r.cells(e.ping))
		if r.failed != nil {
			notes = append(notes, fmt.Sprintf("%s: could not run: %v", r.name, r.failed))
		} else if r.errors > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d errors, the first: %v", r.name, r.errors, r.firstErr))
		}
	}
	writeMarkdown(w, rows)
	fmt.Fprintln(w, "\nRTTs: multiples of the PING p50. Waits and hand-offs count acquisitions only; a Lock that failed is an error.")
	if slices.ContainsFunc(results, func(r result) bool { return r.capacity != 1 }) {
		fmt.Fprintln(w, "RW write: RWMutex Lock+Unlock; RW read: RLock+RUnlock, readers only; Semaphore: Acquire+Release. "+
			"Utilisation is against the holders allowed × the run (readers: one per worker); "+
			"with several holders, a hand-off is an acquisition that began with every permit taken; an overlap, more holders than allowed.")
	}
	for _, n := range notes {
		fmt.Fprintln(w, "- "+n)
	}
}

func (r result) cells(ping time.Duration) []string {
	if r.failed != nil {
		c := []string{r.name}
		for range columns[1:] {
			c = append(c, "-")
		}
		return c
	}
	cmds := func(v float64) string {
		if r.inProcess {
			return "-"
		}
		return fmt.Sprintf("%.2f", v)
	}
	return []string{
		r.name,
		withRTTs(r.lockUnlock, ping),
		cmds(r.cmdsLockUnlock),
		fmt.Sprintf("%.1f", 100*r.utilisation),
		millis(r.waitP99),
		fmt.Sprintf("%d–%d", r.acqMin, r.acqMax),
		cmds(r.cmdsPerAcq),
		handoff(r.handoffs, withRTTs(r.handoffP50, ping)),
		handoff(r.handoffs, micros(r.handoffP99)),
		fmt.Sprint(r.errors),
		fmt.Sprint(r.overlaps),
	}
}

// handoff returns s, or "-" when there was no hand-off to measure.
func handoff(n int, s string) string {
	if n == 0 {
		return "-"
	}
	return s
}

func micros(d time.Duration) string {
	us := float64(d) / float64(time.Microsecond)
	if us < 10 {
		return fmt.Sprintf("%.2f", us)
	}
	return fmt.Sprintf("%.0f", us)
}

func millis(d time.Duration) string {
	return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond))
}

func withRTTs(d, ping time.Duration) string {
	return fmt.Sprintf("%s (%.1f)", micros(d), float64(d)/float64(ping))
}

// writeMarkdown writes rows as a markdown table whose first row is the
// header, padding the cells to line up.
func writeMarkdown(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	line := func(cells []string) {
		for i, c := range cells {
			fmt.Fprintf(w, "| %s%s ", c, strings.Repeat(" ", widths[i]-len([]rune(c))))
		}
		fmt.Fprintln(w, "|")
	}
	line(rows[0])
	rule := make([]string, len(widths))
	for i, n := range widths {
		rule[i] = strings.Repeat("-", n)
	}
	line(rule)
	for _, row := range rows[1:] {
		line(row)
	}
}
