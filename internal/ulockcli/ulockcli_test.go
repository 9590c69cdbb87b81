package ulockcli_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/ulocktest"
	"github.com/uncomplicated-mutex/uncomplicated/internal/ulockcli"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// ulock runs ulockcli.Main, the core build's, with args.
func ulock(t *testing.T, args ...string) ulocktest.Result {
	t.Helper()
	var out, errs bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	code := ulockcli.Main(ctx, args, &out, &errs, ulockcli.Redigo())
	return ulocktest.Result{Code: code, Stdout: out.String(), Stderr: errs.String(), Took: time.Since(start)}
}

func TestMain_usage(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "no command given"},
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"run"}, "missing NAME"},
		{[]string{"run", "job"}, "missing -- before COMMAND"},
		{[]string{"run", "job", "--"}, "missing COMMAND after --"},
		{[]string{"run", "job", "extra", "--", "true"}, "one NAME"},
		{[]string{"run", "-x", "job", "--", "true"}, "flag provided but not defined: -x"},
		{[]string{"run", "job", "--wait", "soon", "--", "true"}, `invalid value "soon"`},
		{[]string{"run", "--kind", "spinlock", "job", "--", "true"}, "--kind must be"},
		{[]string{"run", "--kind", "semaphore:x", "job", "--", "true"}, "N must be a whole number"},
		{[]string{"run", "--kind", "semaphore:0", "job", "--", "true"}, "permits"},
		{[]string{"run", "--policy", "maybe", "job", "--", "true"}, "--policy must be takeover or fail"},
		{[]string{"run", "--wait", "-1s", "job", "--", "true"}, "--wait must not be negative"},
		{[]string{"run", "--lease", "1ms", "job", "--", "true"}, "--lease and --timeout must be at least 3ms"},
		{[]string{"run", "--timeout", "2ms", "job", "--", "true"}, "--lease and --timeout must be at least 3ms"},
		{[]string{"run", "--timeout", "0", "job", "--", "true"}, "timeout must be positive"},
		{[]string{"run", "--conflict-exit-code", "256", "job", "--", "true"}, "exit codes must be 0 to 255"},
		{[]string{"run", "--label", strings.Repeat("x", 65), "job", "--", "true"}, "holder label"},
		{[]string{"status"}, "missing NAME"},
		{[]string{"status", "--prefix", "{x}", "job"}, "prefix"},
		{[]string{"list", "job"}, "list takes no NAME"},
		{[]string{"list", "--limit", "0"}, "--limit must be at least 1"},
		{[]string{"release"}, "missing NAME"},
		{[]string{"release", "--force", "a", "b"}, "one NAME at a time"},
		{[]string{"release", "job"}, "refusing to break job without --force"},
		{[]string{"help", "nope"}, `no help on "nope"`},
		{[]string{"status", "--redis", "redis+cluster://127.0.0.1:1", "job"}, "in the repository: cd goredis && go run ./cmd/ulock; " +
			"once the modules are tagged: go install github.com/uncomplicated-mutex/uncomplicated/goredis/cmd/ulock@latest"},
		{[]string{"status", "--redis", "rediss+sentinel://127.0.0.1:1?master_name=m", "job"}, "go-redis build"},
		{[]string{"status", "--redis", "http://u:secret@127.0.0.1:1", "job"}, `unknown scheme "http"`},
		{[]string{"status", "--redis", "redis://u:secret@127.0.0.1:x", "job"}, "invalid port"},
		{[]string{"status", "--redis", "redis:///0", "job"}, "no host"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := ulock(t, tc.args...)
			ulocktest.WantOneLine(t, r, 2, tc.want, "run 'ulock help")
			if strings.Contains(r.Stderr, "secret") {
				t.Errorf("stderr = %q; it shows the password", r.Stderr)
			}
			if r.Stdout != "" {
				t.Errorf("stdout = %q; want nothing", r.Stdout)
			}
		})
	}
}

func TestMain_help(t *testing.T) {
	flags := map[string][]string{
		"run": {"--kind", "--wait", "--timeout", "--policy", "--lease", "--ticks", "--label", "--grace",
			"--conflict-exit-code", "--lost-exit-code", "--redis", "--prefix"},
		"status":  {"--json", "--redis", "--prefix"},
		"list":    {"--json", "--match", "--limit", "--redis", "--prefix"},
		"release": {"--force", "--redis", "--prefix"},
		"demo":    {"-policy", "-workers", "-orders", "-jobs", "-timeout", "-lease", "-work", "-seed"},
		"help":    nil,
	}
	overview := ulock(t, "help")
	if overview.Code != 0 || !strings.Contains(overview.Stdout, "Exit codes:") {
		t.Fatalf("ulock help: exit %d, stdout:\n%s", overview.Code, overview.Stdout)
	}
	for _, args := range [][]string{{"--help"}, {"-h"}} {
		if r := ulock(t, args...); r.Code != 0 || r.Stdout != overview.Stdout {
			t.Errorf("ulock %s: exit %d; want 0 and the overview", args[0], r.Code)
		}
	}
	for cmd, names := range flags {
		help := ulock(t, "help", cmd)
		if help.Code != 0 || !strings.HasPrefix(help.Stdout, "usage: ulock "+cmd) {
			t.Errorf("ulock help %s: exit %d, stdout:\n%s", cmd, help.Code, help.Stdout)
		}
		if !strings.Contains(overview.Stdout, "ulock "+cmd) {
			t.Errorf("ulock help does not list %s", cmd)
		}
		if cmd != "help" {
			if r := ulock(t, cmd, "--help"); r.Code != 0 || r.Stdout != help.Stdout {
				t.Errorf("ulock %s --help: exit %d, stdout %q; want 0 and ulock help %s", cmd, r.Code, r.Stdout, cmd)
			}
		}
		for _, name := range names {
			if !strings.Contains(help.Stdout, name+" ") {
				t.Errorf("ulock help %s does not document %s", cmd, name)
			}
			where := help.Stdout
			if name == "--redis" || name == "--prefix" {
				where = overview.Stdout // the commands' helps point there
			}
			if entry := flagEntry(where, name); !strings.Contains(strings.ToLower(entry), "default") {
				t.Errorf("ulock help %s: %s has no default: %q", cmd, name, entry)
			}
			// Documented flags are defined: the parser knows them, whatever
			// it then thinks of their missing value or NAME.
			if cmd != "demo" && cmd != "help" {
				if r := ulock(t, cmd, name); strings.Contains(r.Stderr, "not defined") {
					t.Errorf("ulock %s %s: %s", cmd, name, r.Stderr)
				}
			}
		}
	}
}

// flagEntry returns the entry of the flag name in help: its line, which
// begins with two spaces and name, and the lines below it that are
// indented further.
func flagEntry(help, name string) string {
	var entry []string
	for _, line := range strings.Split(help, "\n") {
		switch {
		case entry == nil && strings.HasPrefix(line, "  "+name+" "):
			entry = append(entry, line)
		case entry != nil && strings.HasPrefix(line, "   "):
			entry = append(entry, line)
		case entry != nil:
			return strings.Join(entry, "\n")
		}
	}
	return strings.Join(entry, "\n")
}

func TestMain_helpExitCodes(t *testing.T) {
	overview := ulock(t, "help").Stdout
	for _, code := range []string{"0", "1", "2", "75", "76", "126", "127", "128+N"} {
		if !strings.Contains(overview, "\n  "+code+" ") {
			t.Errorf("ulock help does not document exit code %s", code)
		}
	}
}

// closedPort returns the address of a loopback port that nothing listens
// on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestMain_unreachable(t *testing.T) {
	url := "--redis=redis://" + closedPort(t) + "/0"
	for _, args := range [][]string{
		{"status", url, "job"},
		{"list", url},
		{"release", "--force", url, "job"},
		{"run", url, "job", "--", "true"},
	} {
		start := time.Now()
		r := ulock(t, args...)
		ulocktest.WantOneLine(t, r, 1, "connect")
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("ulock %s took %v; want a prompt failure", args[0], took)
		}
	}
}

func TestMain_panic(t *testing.T) {
	var out, errs bytes.Buffer
	boom := ulockcli.Dialers{"redis": func(string, ...uncomplicated.Option) (*uncomplicated.Client, func(), error) {
		panic("boom\nat line 2")
	}}
	code := ulockcli.Main(context.Background(), []string{"status", "job"}, &out, &errs, boom)
	ulocktest.WantOneLine(t, ulocktest.Result{Code: code, Stdout: out.String(), Stderr: errs.String()}, 1, "internal error: boom; at line 2")
}
