package inspect

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/engine"
)

// slotsDriver answers CLUSTER SLOTS with err and SCAN with no keys.
type slotsDriver struct{ err error }

func (d slotsDriver) Do(_ context.Context, _ []string, cmd string, _ ...any) (any, error) {
	if cmd == "CLUSTER" {
		return nil, d.err
	}
	return []any{[]byte("0"), []any{}}, nil
}

func (slotsDriver) Eval(ctx context.Context, _ *driver.Script, _ []string, _ []any) (any, error) {
	return nil, driver.ErrUnexpectedReply
}

func (slotsDriver) EvalWait(ctx context.Context, _ *driver.Script, _ []string, _ []any, _ int, _ time.Duration) (any, int64, error) {
	return nil, 0, driver.ErrUnexpectedReply
}

func (slotsDriver) Listen(ctx context.Context, _ bool) (driver.Subscription, error) {
	return nil, driver.ErrNoPubSub
}

// replyErr is an error reply, as go-redis's errors are.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// List scans one node when Redis says it is not a Cluster, and fails,
// rather than scan one node of many, when it cannot read the slot map.
func TestList_slotMap(t *testing.T) {
	ctx := context.Background()
	list := func(err error) ([]Info, bool, error) {
		c := engine.NewClient(slotsDriver{err: err})
		defer c.Close()
		a, aerr := c.Access()
		if aerr != nil {
			t.Fatal(aerr)
		}
		return listLocks(ctx, a, "", 0)
	}
	if locks, more, err := list(replyErr("ERR This instance has cluster support disabled")); err != nil || more || len(locks) != 0 {
		t.Errorf("List on a single node = %v, %v, %v; want none, and no error", locks, more, err)
	}
	if _, _, err := list(replyErr("NOPERM this user has no permissions to run the 'cluster|slots' command")); err == nil || !strings.Contains(err.Error(), "CLUSTER SLOTS") {
		t.Errorf("List without the slot map = %v; want an error about CLUSTER SLOTS", err)
	}
}
