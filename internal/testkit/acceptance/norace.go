//go:build !race

package acceptance

// raceDetector is set in a build with the race detector (see race.go).
const raceDetector = false
