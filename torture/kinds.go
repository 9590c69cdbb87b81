package main

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/gomodule/redigo/redis"

	"github.com/uncomplicated-mutex/uncomplicated"
	"github.com/uncomplicated-mutex/uncomplicated/driver"
)

// kind names the class of err for the report: "ok" for nil, else the
// package sentinel it matches (errors.Is), with the cause when it has one,
// or what the network or Redis made of the fault.
func kind(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			if c := cause(err); c != "" && s.name != c {
				return s.name + " (" + c + ")"
			}
			return s.name
		}
	}
	if c := cause(err); c != "" {
		return c
	}
	return "other"
}

// sentinels are the package's errors, most specific first.
var sentinels = []struct {
	name string
	err  error
}{
	{"ErrLost", uncomplicated.ErrLost},
	{"ErrStale", uncomplicated.ErrStale},
	{"ErrNotObtained", uncomplicated.ErrNotObtained},
	{"ErrNotHeld", uncomplicated.ErrNotHeld},
	{"ErrClosed", uncomplicated.ErrClosed},
	{"driver.ErrUnexpectedReply", driver.ErrUnexpectedReply},
	{"ErrInvalidArgument", uncomplicated.ErrInvalidArgument},
}

// cause names what lies under err: the ctx's end, a network failure or a
// Redis error reply (redigo's, or go-redis's, which has a RedisError
// method); "" when none of those.
func cause(err error) string {
	var rerr redis.Error
	var gerr interface {
		error
		RedisError()
	}
	var nerr net.Error
	switch {
	case errors.Is(err, uncomplicated.ErrClosed):
		return "closed"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "EOF"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.As(err, &nerr) && nerr.Timeout():
		return "i/o timeout"
	case errors.As(err, &rerr):
		word, _, _ := strings.Cut(string(rerr), " ")
		return "Redis " + word
	case errors.As(err, &gerr):
		word, _, _ := strings.Cut(gerr.Error(), " ")
		return "Redis " + word
	case errors.Is(err, net.ErrClosed):
		return "closed connection"
	}
	return ""
}
