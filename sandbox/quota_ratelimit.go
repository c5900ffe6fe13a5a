package sandbox

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

// RateLimitError is a tool call refused by a server's rate limit.
type RateLimitError struct {
	Server     string
	PerMinute  int
	RetryAfter time.Duration
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("rate limit: server %s allows %d calls/min; retry in %d s",
		e.Server, e.PerMinute, int(math.Ceil(e.RetryAfter.Seconds())))
}

// Unwrap makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitError) Unwrap() error { return ErrRateLimited }

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
