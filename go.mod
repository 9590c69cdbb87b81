module github.com/uncomplicated-mutex/uncomplicated

go 1.24

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/benbjohnson/clock v1.3.5
	github.com/gomodule/redigo v1.9.3
)

require github.com/yuin/gopher-lua v1.1.1 // indirect
