package redistest

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// shiftEnv is the environment variable from which the clock shim reads the
// shift of a StartShifted server, in whole milliseconds; clockShim passes
// its name to the C source.
const shiftEnv = "UNCOMPLICATED_CLOCK_SHIFT_MS"

// clockShiftC is the source of the clock shim: an LD_PRELOAD library that
// adds the shift to gettimeofday, time and clock_gettime of CLOCK_REALTIME
// and its variants, and leaves CLOCK_MONOTONIC alone. Redis 7.0 reads the
// wall clock only through gettimeofday (ustime and mstime: TIME, the cached
// time that key expiry and TTLs compare with, server.unixtime) and time
// (INFO, LASTSAVE, slowlog and latency samples, some replication and
// cluster bookkeeping); it calls clock_gettime only for CLOCK_MONOTONIC, the
// clock of its timers and timeouts.
//
//go:embed testdata/clockshift.c
var clockShiftC []byte

// StartShifted returns a server of the caller's own whose wall clock is
// shift ahead of the real one, or behind when negative, stopped at cleanup.
// args are extra redis-server arguments, as for Start. The shift is
// truncated to whole milliseconds; timers and timeouts run at the real
// pace. When redis-server or gcc (which compiles the clock shim) is missing
// it skips the test, or fails it as Start does.
//
// A replica shifted ahead of its master expires the master's keys early:
// Redis 7 replicates SET's PX as an absolute PXAT, which the replica
// compares with its own clock.
func StartShifted(tb testing.TB, shift time.Duration, args ...string) *Server {
	tb.Helper()
	s, err := LaunchShifted(shift, args...)
	if err != nil {
		fail(tb, err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// LaunchShifted starts a shifted server as StartShifted does, outside a
// test. The caller stops it with Server.Stop or Stop; Restart and Revive
// keep its shift. On Linux only: the shim is an ELF LD_PRELOAD library. It
// returns an *exec.Error when gcc or redis-server is not on PATH.
func LaunchShifted(shift time.Duration, args ...string) (*Server, error) {
	if runtime.GOOS != "linux" {
		return nil, errors.New("redistest: a shifted clock needs Linux")
	}
	mu.Lock()
	defer mu.Unlock()
	lib, err := clockShim()
	if err != nil {
		return nil, err
	}
	preload := lib
	if more := os.Getenv("LD_PRELOAD"); more != "" {
		preload += ":" + more
	}
	env := []string{"LD_PRELOAD=" + preload, shiftEnv + "=" + strconv.FormatInt(shift.Milliseconds(), 10)}
	return launchEnv("redis-server", env, after(args...))
}

// clockShim returns the path of the compiled clock shim, compiling it on
// first use into a directory that Stop removes. The caller holds mu.
func clockShim() (string, error) {
	if shim != "" {
		return shim, nil
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", err // an *exec.Error, so that fail skips
	}
	dir, err := os.MkdirTemp("", "redistest-clockshift-")
	if err != nil {
		return "", err
	}
	src, lib := filepath.Join(dir, "clockshift.c"), filepath.Join(dir, "clockshift.so")
	if err := os.WriteFile(src, clockShiftC, 0o600); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	out, err := exec.Command(gcc, "-shared", "-fPIC", "-O2", "-DSHIFT_ENV="+strconv.Quote(shiftEnv),
		"-o", lib, src, "-ldl").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("redistest: compiling the clock shim: %v\n%s", err, out)
	}
	shim = lib
	return shim, nil
}
