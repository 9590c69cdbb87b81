// Package inspection names the kinds of lock, as package inspect shows
// them and the engine's Observations name them.
package inspection

// The kinds of lock, as inspections and observers name them.
const (
	KindMutex     = "mutex"
	KindRWMutex   = "rwmutex"
	KindSemaphore = "semaphore"
)
