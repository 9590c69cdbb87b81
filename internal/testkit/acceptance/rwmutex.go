package acceptance

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// The RWMutex on a real deployment: exclusion under concurrency and writer
// preference.

// Never a reader with a writer, never two writers: writers and readers in
// three clients, each checking on entry what the others are doing.
func rwMutexExclusion(t *testing.T, d Deployment) {
	r := newRig(t, d)
	var readers, writers, maxReaders atomic.Int64
	var violations, reads, writes atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for c := range 3 {
		client := r.client(uncomplicated.WithTimeout(10 * time.Second))
		for g := range 5 {
			rw, err := uncomplicated.NewRW(client, uncomplicated.Named("doc"))
			if err != nil {
				t.Fatal(err)
			}
			writer := g < 2
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					var err error
					if writer {
						err = rw.Do(ctx, func(context.Context) error {
							if writers.Add(1) != 1 || readers.Load() != 0 {
								violations.Add(1)
							}
							time.Sleep(time.Millisecond)
							writers.Add(-1)
							writes.Add(1)
							return nil
						})
					} else {
						err = rw.RDo(ctx, func(context.Context) error {
							n := readers.Add(1)
							if writers.Load() != 0 {
								violations.Add(1)
							}
							for m := maxReaders.Load(); n > m && !maxReaders.CompareAndSwap(m, n); m = maxReaders.Load() {
							}
							time.Sleep(2 * time.Millisecond)
							readers.Add(-1)
							reads.Add(1)
							return nil
						})
					}
					if err != nil && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("client %d goroutine %d: %v", c, g, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("%d reads, %d writes, at most %d readers at once", reads.Load(), writes.Load(), maxReaders.Load())
	if n := violations.Load(); n != 0 {
		t.Errorf("%d sections shared the lock with a writer", n)
	}
	if writes.Load() == 0 || reads.Load() == 0 {
		t.Errorf("%d reads and %d writes; want both", reads.Load(), writes.Load())
	}
	if maxReaders.Load() < 2 {
		t.Errorf("at most %d readers at once; want readers to share the lock", maxReaders.Load())
	}
}

// A steady stream of readers, always at least one inside, cannot starve a
// writer: each Lock waits only for the readers already in.
func rwMutexWriterNotStarved(t *testing.T, d Deployment) {
	r := newRig(t, d)
	const readHold = 20 * time.Millisecond
	stop := make(chan struct{})
	var reads atomic.Int64
	var wg sync.WaitGroup
	for i := range 4 {
		rw, err := uncomplicated.NewRW(r.client(uncomplicated.WithTimeout(10*time.Second)), uncomplicated.Named("report"))
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * readHold / 4) // staggered: the readers overlap
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := rw.RDo(ctx, func(context.Context) error {
					time.Sleep(readHold)
					reads.Add(1)
					return nil
				})
				cancel()
				if err != nil {
					t.Errorf("RDo() = %v", err)
					return
				}
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	time.Sleep(100 * time.Millisecond) // the stream is running

	writer, err := uncomplicated.NewRW(r.client(uncomplicated.WithTimeout(10*time.Second)), uncomplicated.Named("report"))
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	for range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		err := writer.Lock(ctx)
		waits = append(waits, time.Since(start))
		cancel()
		if err != nil {
			t.Fatalf("Lock() under a stream of readers = %v after %v", err, waits[len(waits)-1])
		}
		time.Sleep(2 * time.Millisecond)
		if err := writer.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock() = %v", err)
		}
		time.Sleep(3 * readHold) // the readers pile in again
	}
	slices.Sort(waits)
	t.Logf("writer waits under %d reads: median %v, max %v", reads.Load(), waits[len(waits)/2], waits[len(waits)-1])
	if max := waits[len(waits)-1]; max > 2*time.Second {
		t.Errorf("max writer wait %v; want well below 2s, as readers hold for %v", max, readHold)
	}
}
