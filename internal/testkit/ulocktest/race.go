//go:build race

package ulocktest

// Under -race the ulock binary the tests run is built with it too.
func init() { buildFlags = append(buildFlags, "-race") }
