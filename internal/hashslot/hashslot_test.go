package hashslot

import "testing"

// The slots Redis's CLUSTER KEYSLOT gives for these keys.
func TestOf(t *testing.T) {
	for key, want := range map[string]int{
		"":                 0,
		"123456789":        12739, // CRC16/XMODEM's check value 0x31C3
		"foo":              12182,
		"somekey":          11058, // the Cluster specification's examples
		"foo{hash_tag}":    2515,
		"bar{hash_tag}":    2515,
		"{user1000}.a":     3443,
		"{user1000}.b":     3443,
		"user1000":         3443,
		"foo{}{bar}":       8363, // an empty first tag: the whole key
		"foo{{bar}}zap":    4015, // the tag is "{bar"
		"foo{bar}{zap}":    5061, // the first tag only
		"lock:{x}:queue":   Of("x"),
		"lock:wake:{x}:id": Of("x"),
	} {
		if got := Of(key); got != want {
			t.Errorf("Of(%q) = %d; want %d", key, got, want)
		}
	}
}
