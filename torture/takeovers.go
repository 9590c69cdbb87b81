package main

import (
	"context"
	"log/slog"
)

// takeOvers is a slog.Handler that turns the library's "... taken over"
// records (at Warn) into takeover events, by role, and drops every other
// record.
type takeOvers struct{ out *emitter }

var _ slog.Handler = takeOvers{}

// takeOverRoles maps the library's take-over messages to roles.
var takeOverRoles = map[string]string{
	"lock taken over":       roleMutex,
	"write lock taken over": roleWriter,
	"read lock taken over":  roleReader,
	"permit taken over":     rolePermit,
}

func (h takeOvers) Enabled(context.Context, slog.Level) bool { return true }

func (h takeOvers) Handle(_ context.Context, r slog.Record) error {
	role, ok := takeOverRoles[r.Message]
	if !ok {
		return nil
	}
	e := event{Ev: evTakeOver, Kind: role}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "lock" {
			e.Key = a.Value.String()
		}
		return true
	})
	h.out.emit(e)
	return nil
}

func (h takeOvers) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h takeOvers) WithGroup(string) slog.Handler      { return h }
