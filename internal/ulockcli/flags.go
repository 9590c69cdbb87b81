package ulockcli

import (
	"errors"
	"flag"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/uncomplicated-mutex/uncomplicated/internal/limits"

	"github.com/uncomplicated-mutex/uncomplicated"
)

// newFlags returns the flag set of a command, which reports its errors
// through parse rather than printing them.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// redisFlags are the flags of every command that talks to Redis.
type redisFlags struct {
	url    string // --redis
	prefix string // --prefix
}

func (r *redisFlags) add(fs *flag.FlagSet) {
	def := os.Getenv("REDIS_URL")
	if def == "" {
		def = DefaultURL
	}
	fs.StringVar(&r.url, "redis", def, "")
	fs.StringVar(&r.prefix, "prefix", limits.Prefix, "")
}

// parse parses args, whose flags may come before and after the positional
// arguments, as far as the first "--"; it returns the positional arguments
// and what follows "--", nil when there is no "--". For -h and --help it
// prints the command's help and reports done, with the exit code; so it
// does for a mistake.
func (s *session) parse(fs *flag.FlagSet, args []string) (positional, rest []string, done bool, code int) {
	if i := slices.Index(args, "--"); i >= 0 {
		args, rest = args[:i], append([]string{}, args[i+1:]...) // not nil: there is a "--"
	}
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, true, s.helpOf(fs.Name())
		}
		if err != nil {
			return nil, nil, true, s.usage(err.Error())
		}
		if fs.NArg() == 0 {
			return positional, rest, false, 0
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// given reports whether the flag name was on the command line.
func given(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// fullName returns the full name of the lock that NAME names: NAME itself
// when it begins with the Client's prefix and a colon, as ulock list
// prints names; the lock of the Election <name> for "election:<name>";
// and otherwise the name that Named gives it.
func fullName(c *uncomplicated.Client, prefix, name string) (string, error) {
	if strings.HasPrefix(name, prefix+":") {
		return name, nil
	}
	if full, ok, err := electionName(c, name); ok {
		return full, err
	}
	m, err := uncomplicated.New(c, uncomplicated.Named(name))
	if err != nil {
		return "", err
	}
	return m.Name(), nil
}
