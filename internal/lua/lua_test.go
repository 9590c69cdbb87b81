package lua

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every file in lua/ is documented, loads with its pieces included, and is
// used: by a script of the package (newScript) or included by another
// file; and a script is the same code however often it is loaded.
func TestLuaFiles(t *testing.T) {
	used := map[string]bool{}
	gos, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	script := regexp.MustCompile(`(?:newScript\(\d+, |Source\()"([a-z_]+)"\)`)
	for _, f := range gos {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range script.FindAllStringSubmatch(string(src), -1) {
			used[m[1]] = true
		}
	}
	files, err := fs.Glob(luaFiles, "*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("*.lua: %v, %d files", err, len(files))
	}
	for _, f := range files {
		data, _ := luaFiles.ReadFile(f)
		doc, body, ok := strings.Cut(string(data), "\n\n")
		if !ok || !strings.HasPrefix(doc, "-- ") || strings.TrimSpace(body) == "" {
			t.Errorf("%s: want its documentation in comment lines, a blank line, then its code", f)
			continue
		}
		for line := range strings.Lines(body) {
			if piece, ok := strings.CutPrefix(line, includeLine); ok {
				used[strings.TrimSpace(piece)] = true
			}
		}
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".lua")
		if !used[name] {
			t.Errorf("%s: neither a script of the package nor included by one", f)
		}
		if src := Source(name); src != Source(name) || strings.Contains(src, includeLine) {
			t.Errorf("%s: loads as different code each time, or with a piece left out", f)
		}
	}
	want := Source("acquire")
	if CheckingKeys {
		want = Source("check_keys") + want
	}
	if got := Acquire.Source(); got != want {
		t.Errorf("Acquire is not acquire.lua")
	}
}

// The attempts of a Mutex, an RWMutex's writer and a Semaphore reply the
// grant of a free lock, their most common one, before they define any
// function, which costs Redis CPU on every call, but the Semaphore's
// grant itself (sem_only.lua), which its hand-off shares.
func TestAcquireScripts_grantBeforeAnyFunction(t *testing.T) {
	for _, name := range []string{"acquire", "rw_lock", "sem_acquire"} {
		src := strings.Replace(Source(name), Source("sem_only"), "", 1)
		grant, fn := strings.Index(src, "return fence\n"), strings.Index(src, "function")
		if grant < 0 || fn >= 0 && fn < grant {
			t.Errorf("%s.lua: the grant of a free lock at %d, the first function at %d; want the grant first", name, grant, fn)
		}
	}
}
