package main

import (
	"context"
	"log/slog"
)

// takeOvers is a slog.Handler that turns the library's "lock taken over"
// debug records into takeover events and drops every other record.
type takeOvers struct{ out *emitter }

var _ slog.Handler = takeOvers{}

func (h takeOvers) Enabled(context.Context, slog.Level) bool { return true }

func (h takeOvers) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "lock taken over" {
		return nil
	}
	e := event{Ev: evTakeOver}
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
