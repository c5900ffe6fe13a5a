package main

import (
	"bytes"
	"log/slog"
	"testing"
)

// TestLazyWith_SameOutput checks that loggers derived through lazyWith
// write what the same loggers derived from the inner handler write.
func TestLazyWith_SameOutput(t *testing.T) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	write := func(l *slog.Logger) {
		s := l.With("session", "s1")
		srv := s.With("server", "fixture").WithGroup("g").With("k", 1)
		srv.Info("connected", "tools", 21)
		srv.Debug("not enabled")
		s.Warn("warned", slog.Group("grp", "a", "b"))
		s.With("server", "other").Info("ungrouped", "n", 2)
		l.WithGroup("").With().Info("root")
	}
	var direct, lazy bytes.Buffer
	write(slog.New(slog.NewJSONHandler(&direct, opts)))
	write(slog.New(newLazyWith(slog.NewJSONHandler(&lazy, opts))))
	if lazy.String() != direct.String() {
		t.Errorf("through lazyWith:\n%s\nwant\n%s", lazy.String(), direct.String())
	}
}
