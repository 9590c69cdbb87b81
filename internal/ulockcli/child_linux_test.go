package ulockcli

import (
	"os"
	"testing"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/ulocktest"
)

func TestIsTerminal(t *testing.T) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(t.TempDir() + "/file")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	cases := []struct {
		name string
		f    *os.File
		want bool
	}{
		{"/dev/null", null, false}, // a character device, but no terminal
		{"a pipe", r, false},
		{"a file", file, false},
		{"a pseudo-terminal", ulocktest.Terminal(t), true},
	}
	for _, tc := range cases {
		if got := isTerminal(tc.f); got != tc.want {
			t.Errorf("isTerminal(%s) = %v; want %v", tc.name, got, tc.want)
		}
	}
}
