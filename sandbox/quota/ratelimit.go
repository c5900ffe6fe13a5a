package quota

import (
	"errors"
	"fmt"
	"math"
	"time"

	"golang.org/x/time/rate"
)

// DefaultCallsPerMinute is the default rate limit of tool calls per server.
const DefaultCallsPerMinute = 100

// ErrRateLimited is wrapped by every *RateLimitError.
var ErrRateLimited = errors.New("rate limit")

// RateLimitError is a call refused by a server's rate limit
// ([CallLimiter.Allow]). Its text states the limit; [RateLimitError.Remedy]
// says when to retry, from RetryAfter.
type RateLimitError struct {
	// Server is the MCP server's name.
	Server string
	// PerMinute is the server's limit, in calls a minute.
	PerMinute int
	// RetryAfter is how long until the limit allows the next call.
	RetryAfter time.Duration
}

// Error reads like "rate limit: server github allows 3 calls/min".
func (e *RateLimitError) Error() string {
	return fmt.Sprintf("rate limit: server %s allows %d calls/min", e.Server, e.PerMinute)
}

// RetrySeconds is RetryAfter in whole seconds, rounded up: the wait a user
// is told ("retry in 20 s").
func (e *RateLimitError) RetrySeconds() int { return int(math.Ceil(e.RetryAfter.Seconds())) }

// Unwrap makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitError) Unwrap() error { return ErrRateLimited }

// Remedy says when to retry, "retry in 20 s" ([RateLimitError.RetrySeconds]),
// as the front ends show it after the error's text (gateway.ErrorText,
// whose Remedier contract it meets).
func (e *RateLimitError) Remedy() string { return fmt.Sprintf("retry in %d s", e.RetrySeconds()) }

// CallLimiter is the rate limit of one MCP server's tool calls: a token bucket
// (golang.org/x/time/rate) holding perMinute calls, refilled evenly over a
// minute. A call over the limit fails at once; it never waits. Safe for
// concurrent use.
type CallLimiter struct {
	server    string
	perMinute int
	lim       *rate.Limiter // nil: no limit
	now       func() time.Time
}

// NewCallLimiter returns the limiter of server. perMinute 0 means
// DefaultCallsPerMinute; a negative perMinute means no limit. now is the
// clock (nil means time.Now); tests inject one.
func NewCallLimiter(server string, perMinute int, now func() time.Time) *CallLimiter {
	if perMinute == 0 {
		perMinute = DefaultCallsPerMinute
	}
	if now == nil {
		now = time.Now
	}
	l := &CallLimiter{server: server, perMinute: perMinute, now: now}
	if perMinute > 0 {
		l.lim = rate.NewLimiter(rate.Every(time.Minute/time.Duration(perMinute)), perMinute)
	}
	return l
}

// Allow takes one call from the bucket, or returns a *RateLimitError saying
// when the next call will be allowed.
func (l *CallLimiter) Allow() error {
	if l.lim == nil {
		return nil
	}
	t := l.now()
	r := l.lim.ReserveN(t, 1)
	if d := r.DelayFrom(t); d > 0 {
		r.CancelAt(t)
		return &RateLimitError{Server: l.server, PerMinute: l.perMinute, RetryAfter: d}
	}
	return nil
}
