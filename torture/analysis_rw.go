package main

// rwFigures are what the spans of the RWMutex sections show. A writer
// conflicts with every other section of its lock, a reader only with
// writers. Readers have no fence: what keeps their reads whole is their
// second LOOK at the store, which changes when a writer READ or WRITE
// between the two (see glance).
type rwFigures struct {
	// Writer-writer overlaps, split as overlaps splits a Mutex's: unfenced
	// when both WRITEs were accepted (must be 0), else fenced.
	WWFenced, WWUnfenced int
	// Writer-reader overlaps, and those the store caught: the reader's
	// second LOOK differed, or the writer's WRITE was not accepted. The
	// others are a stale writer that READ before the reader came and
	// WROTE after it left, or did not write at all: the reader saw
	// consistent data, though not under the lock.
	WR, WRCaught int
	// Overlapping pairs, either kind, of two holds Do confirmed: the lock
	// let two in together while Redis had them both (must be 0).
	Confirmed int
	// Confirmed is split by why the rest are excused: pairs in which
	// either hold was found lost, unsure, or cut by a kill.
	Excused [cut + 1]int
	// ReadsChanged counts the readers whose second LOOK differed, and
	// ReadsChangedConfirmed those of them whose RDo confirmed the hold:
	// then the writer must have been one that had lost the lock.
	ReadsChanged, ReadsChangedConfirmed int
	MaxReaders                          int // the most readers at once on one lock
}

// rw analyses the RWMutex sections.
func (r *record) rw() rwFigures {
	var f rwFigures
	byKey := r.spans(roleWriter, roleReader)
	pairs(byKey, func(a, b span) {
		wa, wb := a.h.role() == roleWriter, b.h.role() == roleWriter
		switch {
		case wa && wb:
			if a.written && b.written {
				f.WWUnfenced++
			} else {
				f.WWFenced++
			}
		case wa || wb:
			w, rd := a, b
			if wb {
				w, rd = b, a
			}
			f.WR++
			if !w.written || rd.h.rec == nil || rd.h.rec.End != accepted {
				f.WRCaught++
			}
		default:
			return // readers share the lock
		}
		sa, sb := a.h.status(), b.h.status()
		if sa == confirmed && sb == confirmed {
			f.Confirmed++
			r.example(exRWBoth, a.h, b.h)
		} else {
			f.Excused[max(sa, sb)]++
		}
	})
	for _, ss := range byKey {
		var readers []span
		for _, s := range ss {
			if s.h.role() == roleReader {
				readers = append(readers, s)
			}
			if rec := s.h.rec; s.h.role() == roleReader && rec != nil && rec.End == rejected {
				f.ReadsChanged++
				if s.h.status() == confirmed {
					f.ReadsChangedConfirmed++
				}
			}
		}
		f.MaxReaders = max(f.MaxReaders, concurrency(readers, nil).all)
	}
	return f
}
