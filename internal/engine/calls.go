package engine

import (
	"context"
	"fmt"

	"github.com/uncomplicated-mutex/uncomplicated/driver"
	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// A lock's calls to Redis, through its Client's link (see link.go),
// bounded by its command timeout.

// flag runs a script that replies 1 or 0. With wait it then waits for
// the replicas of WithReplicas, and reports how many acknowledged.
func (b *base) flag(ctx context.Context, wait bool, s *driver.Script, keys []string, args ...any) (ok bool, acked int64, err error) {
	var reply any
	if wait {
		reply, acked, err = b.evalReplicated(ctx, s, keys, args...)
	} else {
		reply, _, err = b.eval(ctx, s, keys, args...)
	}
	if err == nil {
		if ok, err = wire.ParseFlag(reply); err == nil {
			return ok, acked, nil
		}
	}
	return false, 0, b.redisError(ctx, err)
}

// eval runs s with keys and args for the lock, bounded by the lock's
// command timeout (see driver).
func (b *base) eval(ctx context.Context, s *driver.Script, keys []string, args ...any) (reply any, sent bool, err error) {
	reply, sent, err = b.c.redis.Eval(ctx, b.cfg.commandTimeout, s, keys, args...)
	if err != nil {
		b.logFailure(ctx, err)
	}
	return reply, sent, err
}

// evalReplicated runs s as eval does and then, under WithReplicas, waits
// for the replicas (WAIT) and reports how many acknowledged.
func (b *base) evalReplicated(ctx context.Context, s *driver.Script, keys []string, args ...any) (reply any, acked int64, err error) {
	if b.cfg.replicas == 0 {
		reply, _, err = b.eval(ctx, s, keys, args...)
		return reply, 0, err
	}
	d := b.cfg.commandTimeout
	if d > 0 {
		d += b.cfg.replicaWait
	}
	if reply, acked, err = b.c.redis.EvalWait(ctx, d, s, keys, args, b.cfg.replicas, b.cfg.replicaWait); err != nil {
		b.logFailure(ctx, err)
	}
	return reply, acked, err
}

// get reads a string key of the lock; "" when it does not exist.
func (b *base) get(ctx context.Context, key string) (string, error) {
	reply, err := b.c.redis.Command(ctx, b.cfg.commandTimeout, []string{key}, "GET", key)
	if err != nil {
		b.logFailure(ctx, err)
		return "", err
	}
	switch r := reply.(type) {
	case nil:
		return "", nil
	case []byte:
		return string(r), nil
	}
	return "", fmt.Errorf("%w: GET replied %T", driver.ErrUnexpectedReply, reply)
}
