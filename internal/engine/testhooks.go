package engine

// What the tests of package uncomplicated, which see the engine from
// outside, need of it.

// SetMaxIdleChannels changes how many idle subscriptions a Client keeps,
// until the returned func restores it.
func SetMaxIdleChannels(n int) (restore func()) {
	old := maxIdleChannels
	maxIdleChannels = n
	return func() { maxIdleChannels = old }
}

// CutFence is cutFence: the token and fence of a holder's value.
func CutFence(value string) (token string, fence uint64) { return cutFence(value) }

// IsClosed reports whether ch is closed.
func IsClosed(ch <-chan struct{}) bool { return isClosed(ch) }
