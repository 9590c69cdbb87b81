package uncomplicated_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// stackDriver records the files of the call stack at its first Eval, and
// fails every call.
type stackDriver struct{ files []string }

var errStack = fmt.Errorf("%w: stack recorded", driver.ErrUnexpectedReply) // not transient: Lock gives up

func (d *stackDriver) Eval(context.Context, *driver.Script, []string, []any) (any, error) {
	if d.files == nil {
		pcs := make([]uintptr, 64)
		frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
		for {
			f, more := frames.Next()
			d.files = append(d.files, f.File)
			if !more {
				break
			}
		}
	}
	return nil, errStack
}

func (d *stackDriver) EvalWait(ctx context.Context, s *driver.Script, keys []string, args []any, _ int, _ time.Duration) (any, int64, error) {
	v, err := d.Eval(ctx, s, keys, args)
	return v, 0, err
}

func (d *stackDriver) Do(context.Context, []string, string, ...any) (any, error) {
	return nil, errStack
}

func (d *stackDriver) Listen(context.Context, bool) (driver.Subscription, error) {
	return nil, driver.ErrNoPubSub
}

// A Lock reads straight down: from the root's Mutex.Lock to the first
// script it sends, its calls cross at most 9 files and enter each once
// (mutex, the engine's mutex, acquiring, the taker, the wait loop, the
// attempt, the link).
func TestMutex_Lock_readsStraightDown(t *testing.T) {
	d := &stackDriver{}
	c := uncomplicated.NewClient(d)
	defer c.Close()
	m, err := uncomplicated.New(c, uncomplicated.Named("path"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Lock(context.Background()); !errors.Is(err, errStack) {
		t.Fatalf("Lock() = %v; want the driver's error", err)
	}
	var path []string // the files from Mutex.Lock down to the driver, each run of one file once
	module := filepath.Dir(thisFile(t))
	for i := len(d.files) - 1; i >= 0; i-- {
		f, ok := strings.CutPrefix(d.files[i], module+string(filepath.Separator))
		if !ok || strings.HasSuffix(f, "_test.go") {
			continue
		}
		if len(path) == 0 || path[len(path)-1] != f {
			path = append(path, f)
		}
	}
	if len(path) == 0 || path[0] != "mutex.go" {
		t.Fatalf("path %q; want it to start at mutex.go", path)
	}
	seen := map[string]bool{}
	for _, f := range path {
		if seen[f] {
			t.Errorf("path %q enters %s twice; want each file once", path, f)
		}
		seen[f] = true
	}
	if moves := len(path) - 1; moves > 9 {
		t.Errorf("path %q: %d moves between files; want at most 9", path, moves)
	}
	t.Logf("Lock to the first script: %s", strings.Join(path, " → "))
}

// thisFile is the path of this test file.
func thisFile(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return file
}
