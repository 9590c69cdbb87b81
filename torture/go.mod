module github.com/uncomplicated-mutex/uncomplicated/torture

go 1.24

replace github.com/uncomplicated-mutex/uncomplicated => ..

require (
	github.com/gomodule/redigo v1.9.3
	github.com/uncomplicated-mutex/uncomplicated v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

require github.com/benbjohnson/clock v1.3.5 // indirect
