package link

import (
	"errors"
	"testing"
)

// redisErr is an error reply as go-redis has them.
type redisErr string

func (e redisErr) Error() string { return string(e) }

func (redisErr) RedisError() {}

func TestReplyError(t *testing.T) {
	if err := ReplyError(nil); err != nil {
		t.Errorf("replyError(nil) = %v", err)
	}
	var se *ServerError
	if err := ReplyError(redisErr("LOADING Redis is loading")); !errors.As(err, &se) || !Loading(err) {
		t.Errorf("replyError(LOADING) = %#v; want a *serverError that reads as LOADING", err)
	}
	cut := errors.New("connection reset")
	if err := ReplyError(cut); err != cut || !MayHaveRun(true, err) {
		t.Errorf("replyError(%v) = %v; want it as it is, a reply that may be lost", cut, err)
	}
}
