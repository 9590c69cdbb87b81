// Package uncomplicatedvalkey runs the locks of package uncomplicated on
// valkey-go (github.com/valkey-io/valkey-go), Valkey's own client: on one
// node, on a master that Sentinel watches and on a Cluster, with
// valkey-go's auto-pipelining.
//
//	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{"localhost:6379"}, PipelineMultiplex: -1})
//	locks := uncomplicatedvalkey.NewClient(c) // import "github.com/uncomplicated-mutex/uncomplicated/uncomplicatedvalkey"
//	defer locks.Close()
//	m, err := uncomplicated.New(locks, order)
//
// valkey-go is a fork of rueidis whose API differs from it in names only,
// so this package is generated from the rueidis module's
// (uncomplicatedrueidis) with valkey-go's names (see fromrueidis_test.go),
// its tests too: it works as that one does. Concurrent calls share
// valkey-go's pipelining connections, and hand-offs are heard on them
// (RESP3 pub/sub, sharded on a Cluster). PipelineMultiplex: -1 keeps one
// such connection per node rather than 4, which costs the server less CPU
// per lock when many are taken at once.
//
// Its tests run against redis-server 7, which valkey-go speaks RESP3 to;
// no Valkey server was at hand to run them against.
package uncomplicatedvalkey

//go:generate go test -run TestGenerated_fromRueidis -update
