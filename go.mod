module github.com/uncomplicated-mutex/uncomplicated

go 1.24

require (
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/benbjohnson/clock v1.3.5 // indirect
	github.com/gomodule/redigo v1.9.3 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
)
