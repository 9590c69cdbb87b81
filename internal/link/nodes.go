package link

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/uncomplicated-mutex/uncomplicated/internal/wire"
)

// Nodes. The restart watch reads, once a second, which node owns each
// slot (CLUSTER SLOTS) and each node's run_id and clock (INFO server); a
// single Redis answers the first with an error, once.

// SlotMap returns the address of each slot's master, or nil when Redis is
// not a Cluster, or an error when it cannot tell; d bounds the call as in
// Eval. A Redis that says it is not a Cluster ("cluster support disabled")
// is not asked again.
func (r *Link) SlotMap(ctx context.Context, d time.Duration) ([]string, error) {
	if r.single.Load() {
		return nil, nil
	}
	reply, err := r.Command(ctx, d, nil, "CLUSTER", "SLOTS")
	var se *ServerError
	if errors.As(err, &se) && strings.Contains(se.Msg, "cluster support disabled") {
		r.single.Store(true)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return wire.ParseSlots(reply), nil
}

// ServerInfo returns the run_id and the clock (server_time_usec) of the
// node that owns key, "" and 0 when Redis cannot tell; silent reports that
// the node did not answer (no connection, a broken one, a reply that did
// not come: see Transient), rather than refusing INFO or having no run_id.
func (r *Link) ServerInfo(ctx context.Context, d time.Duration, key string) (runID string, usec int64, silent bool) {
	reply, err := r.Command(ctx, d, []string{key}, "INFO", "server")
	info, ok := reply.([]byte)
	if err != nil || !ok {
		return "", 0, err != nil && Transient(err)
	}
	runID, usec = wire.ParseServerInfo(info)
	return runID, usec, false
}
