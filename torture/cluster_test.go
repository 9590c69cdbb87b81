package main

import (
	"reflect"
	"slices"
	"testing"

	"github.com/uncomplicated-mutex/uncomplicated/internal/testkit/redistest"
)

// TestPlaceNames places the default locks on three masters, each owning a
// third of the slots, and on one.
func TestPlaceNames(t *testing.T) {
	owner := func(masters int) func(string) (int, error) {
		return func(name string) (int, error) {
			return min(redistest.Slot(lockName(name))*masters/16384, masters-1), nil
		}
	}
	counts := [3]int{3, 2, 2}
	names, err := placeNames(counts, 3, owner(3))
	if err != nil {
		t.Fatal(err)
	}
	held := make([]int, 3)
	for k, kind := range names {
		if len(kind) != counts[k] {
			t.Errorf("%d names %v of kind %d; want %d", len(kind), kind, k, counts[k])
		}
		for i, name := range kind {
			m, _ := owner(3)(name)
			held[m]++
			if i == 0 && m != 0 {
				t.Errorf("the first of kind %d, %s, is on master %d; want 0, the faulted one", k, name, m)
			}
			if slices.Index(kind, name) != i {
				t.Errorf("%s named twice in %v", name, kind)
			}
		}
	}
	if !slices.Equal(held, []int{3, 2, 2}) {
		t.Errorf("masters hold %v locks; want [3 2 2]", held)
	}

	names, err = placeNames(counts, 1, owner(1))
	want := [3][]string{{"torture-0", "torture-1", "torture-2"}, {"torture-rw-0", "torture-rw-1"}, {"torture-sem-0", "torture-sem-1"}}
	if err != nil || !reflect.DeepEqual(names, want) {
		t.Errorf("placeNames(%v, 1) = %v, %v; want %v", counts, names, err, want)
	}
}
