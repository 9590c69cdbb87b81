package ulockcli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// update makes TestHelp_doc rewrite docs/ulock.md rather than check it.
var update = flag.Bool("update", false, "rewrite docs/ulock.md from ulock's help")

// docPath is the page of ulock's help, from this package's directory.
var docPath = filepath.Join("..", "..", "docs", "ulock.md")

// TestHelp_doc fails when docs/ulock.md is not what ulock's help prints:
// "ulock help", then "ulock help COMMAND" for each command, as helpDoc
// lays them out. After changing the help, rewrite the page with
//
//	go test ./internal/ulockcli -run TestHelp_doc -update
//
// and review its diff.
func TestHelp_doc(t *testing.T) {
	want := helpDoc(t)
	if *update {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("%v; write it with: go test ./internal/ulockcli -run TestHelp_doc -update", err)
	}
	if string(got) != want {
		t.Errorf("%s is not ulock's help (first difference at line %d); "+
			"rewrite it with: go test ./internal/ulockcli -run TestHelp_doc -update", docPath, firstDiff(string(got), want))
	}
}

// docIntro begins docs/ulock.md.
const docIntro = `# ulock

ulock is the operator's command line of package uncomplicated: it runs a
command while holding a lock in Redis (flock(1) for a fleet), shows what
locks there are and who holds them, breaks a stuck one, and runs a demo.
It has two builds with the same commands: cmd/ulock reaches one Redis node
through redigo (` + "`go build ./cmd/ulock`" + `), and goredis/cmd/ulock also Redis
Cluster and Sentinel through go-redis (` + "`cd goredis && go build ./cmd/ulock`" + `).

This page is what ` + "`ulock help`" + ` and ` + "`ulock help COMMAND`" + ` print; a test
(TestHelp_doc in internal/ulockcli) checks that it is. After changing the
help, rewrite it with ` + "`go test ./internal/ulockcli -run TestHelp_doc -update`" + `.
`

// helpDoc is docs/ulock.md: docIntro, then the help of "ulock help" and
// of each command, in the order "ulock help" lists them, each under a
// heading in a code block.
func helpDoc(t *testing.T) string {
	var doc strings.Builder
	doc.WriteString(docIntro)
	topics := [][]string{nil}
	for _, c := range commands {
		topics = append(topics, []string{c.name})
	}
	for _, args := range topics {
		var out, errs bytes.Buffer
		s := &session{stdout: &out, stderr: &errs, cmd: "ulock help"}
		if code := s.help(context.Background(), args); code != exitOK || errs.Len() > 0 {
			t.Fatalf("ulock help %s: exit %d, stderr %q", strings.Join(args, ""), code, &errs)
		}
		doc.WriteString("\n## " + strings.Join(append([]string{"ulock", "help"}, args...), " ") + "\n\n")
		doc.WriteString("```text\n" + out.String() + "```\n")
	}
	return doc.String()
}

// firstDiff is the number of the first line where a and b differ.
func firstDiff(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

// TestHelp_jsonFields checks that 'ulock help status' documents every
// field of status --json and list --json.
func TestHelp_jsonFields(t *testing.T) {
	help := helpTopics["status"]
	for _, v := range []any{lockView{}, holderView{}, waiterView{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if !strings.Contains(help, "  "+name+" ") && !strings.Contains(help, " "+name+",") {
				t.Errorf("ulock help status does not document the JSON field %s (%s.%s)", name, typ.Name(), typ.Field(i).Name)
			}
		}
	}
}
