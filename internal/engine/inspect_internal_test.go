package engine

import (
	"context"
	"strings"
	"testing"
)

// slotsDriver answers CLUSTER SLOTS with err and SCAN with no keys.
type slotsDriver struct {
	silentDriver
	err error
}

func (d slotsDriver) Do(_ context.Context, _ []string, cmd string, _ ...any) (any, error) {
	if cmd == "CLUSTER" {
		return nil, d.err
	}
	return []any{[]byte("0"), []any{}}, nil
}

// replyErr is an error reply, as go-redis's errors are.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// List scans one node when Redis says it is not a Cluster, and fails,
// rather than scan one node of many, when it cannot read the slot map.
func TestList_slotMap(t *testing.T) {
	ctx := context.Background()
	single := NewClient(slotsDriver{err: replyErr("ERR This instance has cluster support disabled")})
	defer single.Close()
	if locks, more, err := listLocks(ctx, single, "", 0); err != nil || more || len(locks) != 0 {
		t.Errorf("List on a single node = %v, %v, %v; want none, and no error", locks, more, err)
	}
	denied := NewClient(slotsDriver{err: replyErr("NOPERM this user has no permissions to run the 'cluster|slots' command")})
	defer denied.Close()
	if _, _, err := listLocks(ctx, denied, "", 0); err == nil || !strings.Contains(err.Error(), "CLUSTER SLOTS") {
		t.Errorf("List without the slot map = %v; want an error about CLUSTER SLOTS", err)
	}
}
