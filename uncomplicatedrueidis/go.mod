module github.com/uncomplicated-mutex/uncomplicated/uncomplicatedrueidis

go 1.26.0

require (
	github.com/gomodule/redigo v1.9.3
	github.com/redis/rueidis v1.0.79
	github.com/uncomplicated-mutex/uncomplicated v0.1.0
)

require (
	github.com/benbjohnson/clock v1.3.5 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
