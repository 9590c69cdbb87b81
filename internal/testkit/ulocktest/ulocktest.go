// Package ulocktest is the harness of the ulock tests; only tests use it.
//
// The tests of a ulock command call Main from TestMain, which builds the
// command of the test's package once; Start and Run run that binary as a
// process. WantOneLine checks how a ulock ended, whether it ran as a
// process or as ulockcli.Main in the test's own process.
package ulocktest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

var (
	bin        string   // the ulock binary that Main built
	buildFlags []string // of go build, besides -o
)

// Main builds the command in the current directory, the test's package,
// as the ulock binary that Start runs, with -race when the test binary has
// it; then it runs the tests, removes the binary, stops the redis-servers
// the tests started and exits with the tests' code. When the build fails
// it exits 1 without running them.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "ulock-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "ulock")
	build := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", bin, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building ulock: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := redistest.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}
