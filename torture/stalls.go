package main

import (
	"runtime/metrics"
	"slices"
	"time"
)

// A stall is a time in which a worker process could not run its
// goroutines: the machine gave it no CPU, or too little for the goroutines
// it had ready. A hurried caller's call ends within ms of its deadline,
// so that a stall of a tenth of a second around it makes it late by as
// much, although the library returned in time; a late call is excused
// when its process stalled during it, as when it was stopped (see
// lateCalls). On a busy machine the few steps from a ctx's end to the
// call's return can each wait for the CPU, none long, all together past
// lateSlack: a stall is counted from a quarter of it. Each worker watches for its stalls every stallTick, and
// reports one when its own wake-up came stallMin or more late, or when the
// Go scheduler's latencies (runtime/metrics' /sched/latencies: how long
// goroutines waited, ready, to run) show one that waited stallMin or more
// since the last look.

// The stall watch's settings.
const (
	stallTick = 10 * time.Millisecond // between two looks
	stallMin  = 25 * time.Millisecond // the least wait reported as a stall: a quarter of lateSlack
)

// schedLatencies is the runtime metric of the Go scheduler's latencies.
const schedLatencies = "/sched/latencies:seconds"

// watchStalls reports the worker's stalls until stop is closed.
func (w *worker) watchStalls(stop <-chan struct{}) {
	sample := []metrics.Sample{{Name: schedLatencies}}
	metrics.Read(sample)
	seen := bucketCounts(sample[0].Value)
	tick := time.NewTicker(stallTick)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		from := now
		if late := now.Sub(last) - stallTick; late >= stallMin { // this goroutine's own wait
			from = now.Add(-late)
		}
		metrics.Read(sample)
		if h := sample[0].Value; h.Kind() == metrics.KindFloat64Histogram {
			// A goroutine that ran since the last look waited this long
			// before, ready.
			if waited := longestSince(h.Float64Histogram(), seen); waited >= stallMin && last.Add(-waited).Before(from) {
				from = last.Add(-waited)
			}
			seen = bucketCounts(h)
		}
		if from.Before(now) {
			w.out.emit(event{Ev: evStall, Enter: from.UnixNano(), Ret: now.UnixNano()})
		}
		last = now
	}
}

// bucketCounts returns a copy of the bucket counts of v, a histogram; nil
// when v is not one.
func bucketCounts(v metrics.Value) []uint64 {
	if v.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return slices.Clone(v.Float64Histogram().Counts)
}

// longestSince returns the lower bound of the highest bucket of h that has
// counted more than seen, its counts at the last look: a wait at least that
// long happened since.
func longestSince(h *metrics.Float64Histogram, seen []uint64) time.Duration {
	for i := len(h.Counts) - 1; i >= 0; i-- {
		if i < len(seen) && h.Counts[i] > seen[i] {
			return time.Duration(h.Buckets[i] * float64(time.Second))
		}
	}
	return 0
}

// stalledDuring reports whether pid stalled at some time in [from, to].
func (r *record) stalledDuring(pid int, from, to int64) bool {
	for _, st := range r.Stalls {
		if st.pid == pid && st.at <= to && st.at+int64(st.n) >= from {
			return true
		}
	}
	return false
}

// unstopped returns the stalls that no stop of their worker explains, and
// the longest of them (the zero gauge when none).
func (r *record) unstopped() (stalls []gauge, longest gauge) {
	for _, st := range r.Stalls {
		if !r.stoppedDuring(st.pid, st.at, st.at+int64(st.n)) {
			stalls = append(stalls, st)
		}
	}
	if len(stalls) > 0 {
		longest = slices.MaxFunc(stalls, func(a, b gauge) int { return a.n - b.n })
	}
	return stalls, longest
}
