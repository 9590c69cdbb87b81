//go:build race

package acceptance

// raceDetector is set in a build with the race detector, which makes the
// process several times slower: the hurried load's figures need it at
// full speed (see HurriedLoad).
const raceDetector = true
