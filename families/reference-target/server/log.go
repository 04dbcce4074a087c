package server

import (
	"io"
	"log/slog"
	"strings"
	"time"
)

// NewLogger returns a logger writing JSON lines:
// {"ts":"<RFC3339Nano>","level":"info","event":"<event>",...}.
func NewLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				return slog.String("ts", a.Value.Time().UTC().Format(time.RFC3339Nano))
			case slog.LevelKey:
				return slog.String("level", strings.ToLower(a.Value.String()))
			case slog.MessageKey:
				return slog.String("event", a.Value.String())
			}
			return a
		},
	}))
}
