package redistest

import (
	"path/filepath"
	"strings"
	"testing"
)

// The test binaries of one go command add up their skips, and only the
// last to end tells the total, once.
func TestTally_lastTellsTotal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tally")
	running := map[int]bool{1: true, 2: true, 3: true}
	binary := func(pid int) tally {
		return tally{path: path, pid: pid, alive: func(pid int) bool { return running[pid] }}
	}
	for pid := range running {
		binary(pid).start()
	}
	running[1] = false
	if line := binary(1).end(4); line != "" {
		t.Errorf("first to end said %q; want nothing while others run", line)
	}
	running[2] = false
	if line := binary(2).end(0); line != "" {
		t.Errorf("second to end said %q; want nothing while one runs", line)
	}
	running[3] = false
	line := binary(3).end(3)
	if !strings.Contains(line, "7 tests skipped") || !strings.Contains(line, RequireEnv+"=1") || strings.Count(line, "\n") != 1 {
		t.Errorf("last to end said %q; want one line telling 7 skipped and how to run them", line)
	}
	if line := binary(3).end(0); line != "" {
		t.Errorf("after the total was told, a binary with no skips said %q; want nothing", line)
	}
}

// A binary that died without recording its end does not keep the others
// from telling; nothing is told when nothing was skipped.
func TestTally_deadAndNone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tally")
	dead := tally{path: path, pid: 9, alive: func(int) bool { return false }}
	dead.start()
	last := tally{path: path, pid: 10, alive: func(int) bool { return false }}
	last.start()
	if line := last.end(2); !strings.Contains(line, "2 tests skipped") {
		t.Errorf("with the other binary dead, the last said %q; want the total", line)
	}
	none := tally{path: filepath.Join(t.TempDir(), "tally"), pid: 11, alive: func(int) bool { return false }}
	none.start()
	if line := none.end(0); line != "" {
		t.Errorf("with nothing skipped, the last said %q; want nothing", line)
	}
}
