package urlpolicy

import (
	"context"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
)

// Redacted replaces secrets RedactURL removes.
const Redacted = "REDACTED"

// RedactURL returns raw for logs and error messages: the query (API keys and
// tokens often travel as ?token=..., or as a bare ?key) becomes ?REDACTED; a
// userinfo password becomes "xxxxx" (as url.URL.Redacted); a fragment is
// dropped. A string that does not parse as a URL is cut at its first '?' or
// '#', and anything before an '@' in it is dropped.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			raw = raw[:i] + "?" + Redacted
		}
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			scheme, _, ok := strings.Cut(raw, "://")
			if !ok {
				scheme = ""
			} else {
				scheme += "://"
			}
			raw = scheme + Redacted + raw[i:]
		}
		return raw
	}
	if u.RawQuery == "" && u.Fragment == "" && u.User == nil {
		return raw
	}
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery, u.ForceQuery = Redacted, false
	}
	u.Fragment, u.RawFragment = "", ""
	return u.Redacted()
}

// urlInText finds http(s) URLs in free text: up to white space or a quote.
var urlInText = regexp.MustCompile(`(?i)\bhttps?://[^\s"'<>\x60]+`)

// RedactURLs returns text with every http or https URL in it passed through
// RedactURL: for error messages of libraries that embed the URL they
// requested (net/http's *url.Error, go-sdk's transports).
func RedactURLs(text string) string {
	if !strings.Contains(text, "://") {
		return text
	}
	return urlInText.ReplaceAllStringFunc(text, RedactURL)
}

// RedactError returns err with the URLs in its message redacted
// (RedactURLs); errors.Is and errors.As still see err. A nil err stays nil,
// and an error with nothing to redact is returned as is.
func RedactError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := RedactURLs(msg); red != msg {
		return &redactedError{err: err, msg: red}
	}
	return err
}

type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// RedactingHandler returns a slog.Handler that passes every record to h with
// the URLs in its message and in its string and error attributes redacted
// (RedactURLs), for loggers that libraries log URLs to.
func RedactingHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(*redactingHandler); ok {
		return h
	}
	return &redactingHandler{h: h}
}

type redactingHandler struct{ h slog.Handler }

func (r *redactingHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return r.h.Enabled(ctx, l)
}

func (r *redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, RedactURLs(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return r.h.Handle(ctx, out)
}

func (r *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = redactAttr(a)
	}
	return &redactingHandler{h: r.h.WithAttrs(red)}
}

func (r *redactingHandler) WithGroup(name string) slog.Handler {
	return &redactingHandler{h: r.h.WithGroup(name)}
}

func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, RedactURLs(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = redactAttr(ga)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.Any(a.Key, RedactError(err))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
