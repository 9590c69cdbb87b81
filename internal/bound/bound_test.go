package bound

import (
	"context"
	"testing"
	"time"
)

// Err tells the deadline without a timer until something waits on Done,
// and agrees with Done before and after it.
func TestContext_err(t *testing.T) {
	b := New(context.Background(), time.Now().Add(50*time.Millisecond))
	defer b.Stop()
	if err := b.Err(); err != nil || b.timer != nil || b.done != nil {
		t.Fatalf("Err() before the deadline = %v, timer %v, done %v; want nil and no timer", err, b.timer, b.done)
	}
	time.Sleep(60 * time.Millisecond)
	if err := b.Err(); err != context.DeadlineExceeded {
		t.Fatalf("Err() after the deadline = %v; want DeadlineExceeded", err)
	}
	select {
	case <-b.Done():
	default:
		t.Fatal("Done() not closed after Err() reported the deadline")
	}

	w := New(context.Background(), time.Now().Add(30*time.Millisecond))
	defer w.Stop()
	done := w.Done() // something waits: a timer closes it
	if err := w.Err(); err != nil {
		t.Fatalf("Err() with Done open = %v; want nil", err)
	}
	<-done
	if err := w.Err(); err != context.DeadlineExceeded {
		t.Fatalf("Err() after Done closed = %v; want DeadlineExceeded", err)
	}
}
