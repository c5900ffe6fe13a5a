package main

import (
	"context"
	"log/slog"
	"sync"
)

// lazyWith is a slog.Handler that keeps its loggers' attributes to itself
// rather than handing them to its inner handler's WithAttrs: zapslog
// encodes a logger's attributes at once into a buffer of its own (about
// 2 KiB a logger, for as long as the logger lives), and the agent derives
// loggers for every session and server (the session id, the server's
// name). A record is handed on with the attributes of its logger first,
// then its own, as zap writes them. A logger under a group (WithGroup) is
// made by the inner handler's WithAttrs and WithGroup, once, when it first
// writes. Enabled asks the inner handler as it was before any With (zap's
// level does not depend on attributes). Safe for concurrent use.
type lazyWith struct {
	base    slog.Handler // the root's inner handler
	parent  *lazyWith    // nil for the root
	attrs   []slog.Attr  // this step's attributes, or
	group   string       // this step's group
	grouped bool         // a group is on the way from the root

	once sync.Once
	h    slog.Handler // under a group: base with every step applied, once made
}

func newLazyWith(h slog.Handler) *lazyWith { return &lazyWith{base: h} }

func (l *lazyWith) Enabled(ctx context.Context, level slog.Level) bool {
	return l.base.Enabled(ctx, level)
}

func (l *lazyWith) Handle(ctx context.Context, r slog.Record) error {
	switch {
	case l.parent == nil:
		return l.base.Handle(ctx, r)
	case l.grouped:
		return l.handler().Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	l.addAttrs(&out)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return l.base.Handle(ctx, out)
}

// addAttrs adds the attributes of every step, from the root, to r.
func (l *lazyWith) addAttrs(r *slog.Record) {
	if l.parent == nil {
		return
	}
	l.parent.addAttrs(r)
	r.AddAttrs(l.attrs...)
}

// handler returns the inner handler with every step applied, made once.
func (l *lazyWith) handler() slog.Handler {
	if l.parent == nil {
		return l.base
	}
	l.once.Do(func() {
		p := l.parent.handler()
		if l.group != "" {
			l.h = p.WithGroup(l.group)
		} else {
			l.h = p.WithAttrs(l.attrs)
		}
	})
	return l.h
}

func (l *lazyWith) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return l
	}
	return &lazyWith{base: l.base, parent: l, attrs: attrs, grouped: l.grouped}
}

func (l *lazyWith) WithGroup(name string) slog.Handler {
	if name == "" {
		return l
	}
	return &lazyWith{base: l.base, parent: l, group: name, grouped: true}
}
