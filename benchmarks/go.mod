module github.com/uncomplicated-mutex/uncomplicated/benchmarks

go 1.26.0

require (
	github.com/bsm/redislock v0.9.4
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/gomodule/redigo v1.9.3
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
	github.com/uncomplicated-mutex/uncomplicated v0.1.0
	github.com/uncomplicated-mutex/uncomplicated/goredis v0.1.0
	github.com/uncomplicated-mutex/uncomplicated/uncomplicatedvalkey v0.1.0
	github.com/valkey-io/valkey-go v1.0.80
)

require (
	github.com/benbjohnson/clock v1.3.5 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/uncomplicated-mutex/uncomplicated/uncomplicatedrueidis v0.1.0
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
