package bound

import (
	"context"
	"math"
	"runtime/metrics"
	"testing"
	"time"
)

// Err tells the deadline without a timer until something waits on Done,
// and agrees with Done before and after it.
func TestContext_err(t *testing.T) {
	b := New(context.Background(), time.Now().Add(50*time.Millisecond))
	defer b.Stop()
	if err := b.Err(); err != nil || b.done != nil {
		t.Fatalf("Err() before the deadline = %v, done %v; want nil and no alarm", err, b.done)
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
	done := w.Done() // something waits: an alarm closes it
	if err := w.Err(); err != nil {
		t.Fatalf("Err() with Done open = %v; want nil", err)
	}
	<-done
	if err := w.Err(); err != context.DeadlineExceeded {
		t.Fatalf("Err() after Done closed = %v; want DeadlineExceeded", err)
	}
}

// Calls made together share one alarm rather than a timer each, and the
// alarm closes Done after the deadline, within a grain and the timer's
// own lateness; Err agrees with Done throughout.
func TestContext_callsShareAnAlarm(t *testing.T) {
	// The start of a grain 40 ms or so away, so that all 100 fall in it.
	deadline := epoch.Add((time.Since(epoch)+40*time.Millisecond)/minGrain*minGrain + time.Microsecond)
	var dones []<-chan struct{}
	for i := range 100 {
		b := New(context.Background(), deadline.Add(time.Duration(i)*time.Microsecond))
		defer b.Stop()
		dones = append(dones, b.Done())
		if err := b.Err(); err != nil {
			t.Fatalf("Err() before the deadline = %v; want nil", err)
		}
	}
	if dones[0] != dones[99] {
		t.Fatal("two Contexts whose deadlines are 99 µs apart have alarms of their own")
	}
	<-dones[0]
	if late := time.Since(deadline); late < 99*time.Microsecond || late > minGrain+50*time.Millisecond {
		t.Fatalf("the alarm went off %v after the first deadline; want from 99 µs to about a grain (%v)", late, minGrain)
	}
}

// Far deadlines share coarser grains, so that a Client under load keeps
// a few alarms per command timeout rather than one per 2 ms; a deadline
// beyond what a time.Duration holds (WithCommandTimeout(math.MaxInt64))
// never goes off.
func TestContext_farDeadlines(t *testing.T) {
	start := time.Now().Add(10 * time.Second)
	distinct := map[<-chan struct{}]bool{}
	for i := range 100 {
		b := New(context.Background(), start.Add(time.Duration(i)*time.Millisecond))
		distinct[b.Done()] = true
		b.Stop()
	}
	if len(distinct) > 2 {
		t.Errorf("100 deadlines 10 s away, over 100 ms, took %d alarms; want 2 at most (a grain of 256 ms)", len(distinct))
	}
	b := New(context.Background(), time.Now().Add(math.MaxInt64))
	defer b.Stop()
	done := b.Done()
	time.Sleep(20 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("Done of a deadline 290 years away closed")
	default:
	}
	if err := b.Err(); err != nil {
		t.Fatalf("Err() of a deadline 290 years away = %v; want nil", err)
	}
}

// A Done asked after Stop never closes: nobody waits on a call that has
// ended, and it takes no alarm.
func TestContext_doneAfterStop(t *testing.T) {
	b := New(context.Background(), time.Now().Add(time.Millisecond))
	b.Stop()
	done := b.Done()
	time.Sleep(5*time.Millisecond + minGrain)
	select {
	case <-done:
		t.Fatal("Done asked after Stop closed")
	default:
	}
}

// A ctx made from a Context (context.WithCancel, context.AfterFunc) ends
// with it, through its alarm rather than a goroutine of package context's
// each; a func stopped in time is not called, nor one of a deadline that
// never comes.
func TestContext_afterFunc(t *testing.T) {
	b := New(context.Background(), time.Now().Add(5*time.Millisecond))
	before := goroutinesCreated()
	child, cancel := context.WithCancel(b)
	defer cancel()
	called := make(chan struct{})
	context.AfterFunc(b, func() { close(called) })
	stopped := make(chan struct{})
	stop := context.AfterFunc(b, func() { close(stopped) })
	if n := goroutinesCreated() - before; n != 0 {
		t.Errorf("ctxs made from a Context started %d goroutines before its deadline; want none", n)
	}
	if !stop() {
		t.Error("stop before the deadline = false; want true")
	}
	for name, done := range map[string]<-chan struct{}{"the child's Done": child.Done(), "AfterFunc's func": called} {
		select {
		case <-done:
		case <-time.After(time.Second):
			t.Fatalf("%s: not done a second after the deadline", name)
		}
	}
	if child.Err() != context.DeadlineExceeded {
		t.Errorf("the child's Err = %v; want context.DeadlineExceeded", child.Err())
	}
	select {
	case <-stopped:
		t.Error("a stopped func was called")
	case <-time.After(5 * time.Millisecond):
	}

	past := New(context.Background(), time.Now().Add(-time.Millisecond))
	ran := make(chan struct{})
	context.AfterFunc(past, func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(time.Second):
		t.Error("AfterFunc of a Context past its deadline: not called")
	}
	far := New(context.Background(), time.Unix(1<<62, 0))
	if stop := context.AfterFunc(far, func() { t.Error("AfterFunc of a deadline that never comes: called") }); !stop() {
		t.Error("stop of a deadline that never comes = false; want true")
	}
}

// goroutinesCreated is how many goroutines the process has started.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
