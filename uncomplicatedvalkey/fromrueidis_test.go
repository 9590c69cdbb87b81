package uncomplicatedvalkey

import (
	"bytes"
	"flag"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The package is generated from the rueidis module (../uncomplicatedrueidis),
// its tests too: valkey-go is a fork of rueidis whose API differs in names
// only, so that one implementation serves both. go generate (or this test
// with -update) writes the files; without -update the test fails when one
// differs from what the rueidis module's would make, so that a change made
// there and not generated here fails CI.

var update = flag.Bool("update", false, "write the files generated from ../uncomplicatedrueidis")

// renames are the rueidis module's names and their valkey-go ones, in the
// order they are replaced.
var renames = []struct{ from, to string }{
	{`"github.com/redis/rueidis"`, `"github.com/valkey-io/valkey-go"`},
	{"rueidis.RedisError", "valkey.ValkeyError"},
	{"rueidis.RedisMessage", "valkey.ValkeyMessage"},
	{"rueidis.RedisResult", "valkey.ValkeyResult"},
	{"rueidis.", "valkey."},
	{"uncomplicatedrueidis", "uncomplicatedvalkey"},
	{"rueidislock", "valkeylock"},
	{"rueidisDriver", "valkeyDriver"},
	{"rueidisClient", "valkeyClient"},
	{"rueidis", "valkey-go"}, // in comments and messages only, by now
}

// packageDoc is the rueidis package's own doc comment, which doc.go
// replaces here.
var packageDoc = regexp.MustCompile(`(?s)\A(//[^\n]*\n)+package `)

// fromRueidis returns the file generated from src, the rueidis module's
// file name, formatted as gofmt does.
func fromRueidis(name string, src []byte) ([]byte, error) {
	s := packageDoc.ReplaceAllString(string(src), "package ")
	for _, r := range renames {
		s = strings.ReplaceAll(s, r.from, r.to)
	}
	return format.Source([]byte("// Code generated from ../uncomplicatedrueidis/" + name + " by fromrueidis_test.go; DO NOT EDIT.\n\n" + s))
}

// generatedName is the name here of the rueidis module's file name.
func generatedName(name string) string {
	return strings.ReplaceAll(name, "rueidis", "valkey")
}

func TestGenerated_fromRueidis(t *testing.T) {
	sources, err := filepath.Glob("../uncomplicatedrueidis/*.go")
	if err != nil || len(sources) == 0 {
		t.Fatalf("the rueidis module's files: %v, %v", sources, err)
	}
	want := map[string]bool{}
	for _, src := range sources {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(src)
		out, err := fromRueidis(name, b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		gen := generatedName(name)
		want[gen] = true
		if *update {
			if err := os.WriteFile(gen, out, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if have, err := os.ReadFile(gen); err != nil || !bytes.Equal(have, out) {
			t.Errorf("%s is not what ../uncomplicatedrueidis/%s makes (%v): run go generate", gen, name, err)
		}
	}
	// A file generated from one that the rueidis module no longer has.
	here, _ := filepath.Glob("*.go")
	for _, f := range here {
		b, _ := os.ReadFile(f)
		if bytes.HasPrefix(b, []byte("// Code generated from ../uncomplicatedrueidis/")) && !want[f] {
			if *update {
				_ = os.Remove(f)
			} else {
				t.Errorf("%s was generated from a file the rueidis module no longer has: run go generate", f)
			}
		}
	}
}
