package engine

import "sync"

// A signal is a channel closed once, and what runs when it is.
type signal struct {
	ch   chan struct{}
	once sync.Once

	mu    sync.Mutex // guards fired and then
	fired bool
	then  map[*func()]struct{} // run by fire, each once
}

// fire closes the channel and runs what waits for it; it reports whether
// this call closed it.
func (s *signal) fire() (closedNow bool) {
	if s == nil {
		return false
	}
	s.once.Do(func() {
		close(s.ch)
		s.mu.Lock()
		s.fired = true
		then := s.then
		s.then = nil
		s.mu.Unlock()
		for f := range then {
			(*f)()
		}
		closedNow = true
	})
	return closedNow
}

// whenFired runs f when s fires, or at once if it has; stop keeps it from
// running later. f must not block.
func (s *signal) whenFired(f func()) (stop func()) {
	s.mu.Lock()
	if s.fired {
		s.mu.Unlock()
		f()
		return func() {}
	}
	if s.then == nil {
		s.then = map[*func()]struct{}{}
	}
	key := &f
	s.then[key] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.then, key)
		s.mu.Unlock()
	}
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// closedChan is the channel Lost returns when nothing is held.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()
