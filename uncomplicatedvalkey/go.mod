module github.com/uncomplicated-mutex/uncomplicated/uncomplicatedvalkey

go 1.26.0

require (
	github.com/gomodule/redigo v1.9.3
	github.com/uncomplicated-mutex/uncomplicated v0.1.0
	github.com/valkey-io/valkey-go v1.0.80
)

require (
	github.com/benbjohnson/clock v1.3.5 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
