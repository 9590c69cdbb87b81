package uncomplicated

// SetMaxIdleChannels changes how many idle subscriptions a Client keeps,
// until the returned func restores it.
func SetMaxIdleChannels(n int) (restore func()) {
	old := maxIdleChannels
	maxIdleChannels = n
	return func() { maxIdleChannels = old }
}
