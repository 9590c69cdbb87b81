package redistest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
)

// go test ./... shows a passing package's output only with -v, so that a
// machine without redis-server would pass in silence, its real-server tests
// skipped. The test binaries of one go command therefore add up their skips
// in a file named after that command's process, and the last of them to end
// writes one line with the total to the terminal, which go test does not
// capture.

// skipped counts the tests this process skipped for want of redis-server
// (or gcc).
var skipped atomic.Int64

// tally is the file in which the test binaries of one go command add up
// their skips: one line per event, "start PID", "end PID SKIPPED".
type tally struct {
	path  string
	pid   int
	alive func(pid int) bool // whether a process runs
}

// goTally is the tally of this process's go command.
func goTally() tally {
	return tally{
		path:  filepath.Join(os.TempDir(), fmt.Sprintf("uncomplicated-redistest-skips-%d", os.Getppid())),
		pid:   os.Getpid(),
		alive: alive,
	}
}

// start records that this process runs tests.
func (t tally) start() { t.append(fmt.Sprintf("start %d", t.pid)) }

// end records this process's skips and returns the line to print: the
// total skips of the go command's test binaries, when this process is the
// last of them to end, or "" when it is not or nothing was skipped.
func (t tally) end(n int64) string {
	t.append(fmt.Sprintf("end %d %d", t.pid, n))
	f, err := os.Open(t.path)
	if err != nil {
		return ""
	}
	defer f.Close()
	running := map[int]bool{}
	var total int64
	last := 0 // the process whose end was recorded last
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var what string
		var pid int
		var n int64
		if k, _ := fmt.Sscan(sc.Text(), &what, &pid, &n); k < 2 {
			continue
		}
		switch what {
		case "start":
			running[pid] = true
		case "end":
			delete(running, pid)
			total += n
			last = pid
		}
	}
	for pid := range running {
		if t.alive(pid) {
			return "" // another binary ends later, and will tell
		}
	}
	if last != t.pid {
		return "" // another binary ended after this one read
	}
	os.Remove(t.path)
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("redistest: %d tests skipped: they need redis-server (or gcc), which is not on PATH (Debian: apt-get install redis-server gcc); %s=1 makes them fail instead\n", total, RequireEnv)
}

// append adds a line to the tally; a write of one short line to a file
// opened for appending lands whole.
func (t tally) append(line string) {
	f, err := os.OpenFile(t.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.WriteString(f, line+"\n")
}

// tell writes line to the terminal, when there is one.
func tell(line string) {
	if line == "" {
		return
	}
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer tty.Close()
	_, _ = io.WriteString(tty, line)
}
