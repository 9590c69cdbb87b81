package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

func printHeader(w io.Writer, d *deployments, cfg config) error {
	version, err := d.server.info("server", "redis_version")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# Redis lock benchmarks\n\n")
	fmt.Fprintf(w, "%s %s/%s, %d CPUs, %s; redis-server %s on loopback, PING p50 %s µs\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel(), version, micros(d.server.ping))
	if d.cluster != nil {
		fmt.Fprintf(w, "cluster rows: %s on loopback, no replicas, PING p50 %s µs to the first\n", d.cluster.name(), micros(d.cluster.ping))
	}
	if cfg.workload != "contended" {
		return nil // printFleet or printHurried says what the run did
	}
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
	"utilisation %", "p99 wait ms", "acquisitions / worker", "cmds / acquisition", "Redis CPU µs/acq",
	"hand-off p50 µs (RTTs)", "hand-off p99 µs", "errors", "overlaps",
}

func printTable(w io.Writer, d *deployments, results []result) {
	rows := [][]string{columns}
	var notes []string
	for _, r := range results {
		rows = append(rows, r.cells(d.on(r.cluster).ping))
		if r.failed != nil {
			notes = append(notes, fmt.Sprintf("%s: could not run: %v", r.name, r.failed))
		} else if r.errors > 0 {
			notes = append(notes, fmt.Sprintf("%s: %d errors, the first: %v", r.name, r.errors, r.firstErr))
		}
	}
	writeMarkdown(w, rows)
	fmt.Fprintln(w, "\nRTTs: multiples of the PING p50. Waits and hand-offs count acquisitions only; a Lock that failed is an error. "+
		"Acquisitions / worker: the fewest and the most of one worker. "+
		"Redis CPU: redis-server's used_cpu_user + used_cpu_sys over the contended run, idle background work included, per acquisition.")
	if slices.ContainsFunc(results, func(r result) bool { return r.base != "" }) {
		fmt.Fprintln(w, "go-redis: the Mutex through goredis.NewClient on the same server; cluster: the same on a Cluster, "+
			"whose commands and Redis CPU are those of all its masters, the gossip between them included.")
	}
	if slices.ContainsFunc(results, func(r result) bool { return r.own }) {
		fmt.Fprintln(w, "RWMutex writers only: RWMutex Lock+Unlock; Semaphore(1): Acquire+Release of 1 permit; "+
			"RW read: RLock+RUnlock, readers only; Semaphore: Acquire+Release of the permits above.")
	}
	if slices.ContainsFunc(results, func(r result) bool { return r.capacity != 1 }) {
		fmt.Fprintln(w, "Utilisation is against the holders allowed × the run (readers: one per worker); "+
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
	ifRedis := func(s string) string {
		if r.inProcess {
			return "-"
		}
		return s
	}
	cmds := func(v float64) string { return ifRedis(fmt.Sprintf("%.2f", v)) }
	return []string{
		r.name,
		withRTTs(r.lockUnlock, ping),
		cmds(r.cmdsLockUnlock),
		fmt.Sprintf("%.1f", 100*r.utilisation),
		millis(r.waitP99),
		fmt.Sprintf("%d–%d", r.acqMin, r.acqMax),
		cmds(r.cmdsPerAcq),
		ifRedis(micros(r.cpuPerAcq)),
		handoff(r.handoffs, withRTTs(r.handoffP50, ping)),
		handoff(r.handoffs, micros(r.handoffP99)),
		fmt.Sprint(r.errors),
		fmt.Sprint(r.overlaps),
	}
}

// jsonRow is a row of the contended table as -json prints it, in the
// table's units; a row that could not run has failed and zeros.
type jsonRow struct {
	Name           string  `json:"name"`
	Failed         string  `json:"failed,omitempty"`
	LockUnlockP50  float64 `json:"lock_unlock_p50_us"`
	CmdsLockUnlock float64 `json:"cmds_per_lock_unlock"`
	Utilisation    float64 `json:"utilisation_pct"`
	WaitP99        float64 `json:"wait_p99_ms"`
	AcqMin         int     `json:"acquisitions_per_worker_min"`
	AcqMax         int     `json:"acquisitions_per_worker_max"`
	Acquisitions   int     `json:"acquisitions"`
	CmdsPerAcq     float64 `json:"cmds_per_acquisition"`
	CPUPerAcq      float64 `json:"redis_cpu_us_per_acquisition"`
	HandoffP50     float64 `json:"handoff_p50_us"` // 0 when there was no hand-off
	HandoffP99     float64 `json:"handoff_p99_us"`
	Handoffs       int     `json:"handoffs"`
	Errors         int     `json:"errors"`
	Overlaps       int64   `json:"overlaps"`
}

// printJSON writes each of results as one line of JSON (see jsonRow).
func printJSON(w io.Writer, results []result) error {
	enc := json.NewEncoder(w)
	for _, r := range results {
		if err := enc.Encode(r.json()); err != nil {
			return err
		}
	}
	return nil
}

func (r result) json() jsonRow {
	if r.failed != nil {
		return jsonRow{Name: r.name, Failed: r.failed.Error()}
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	return jsonRow{
		Name:           r.name,
		LockUnlockP50:  us(r.lockUnlock),
		CmdsLockUnlock: r.cmdsLockUnlock,
		Utilisation:    100 * r.utilisation,
		WaitP99:        float64(r.waitP99) / float64(time.Millisecond),
		AcqMin:         r.acqMin,
		AcqMax:         r.acqMax,
		Acquisitions:   r.acquisitions,
		CmdsPerAcq:     r.cmdsPerAcq,
		CPUPerAcq:      us(r.cpuPerAcq),
		HandoffP50:     us(r.handoffP50),
		HandoffP99:     us(r.handoffP99),
		Handoffs:       r.handoffs,
		Errors:         r.errors,
		Overlaps:       r.overlaps,
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
