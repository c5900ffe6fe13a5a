package quota

import (
	"errors"
	"testing"
	"time"
)

func TestCallLimiter(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	l := NewCallLimiter("github", 3, clock)
	for i := range 3 {
		if err := l.Allow(); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	err := l.Allow()
	var rle *RateLimitError
	if !errors.As(err, &rle) || !errors.Is(err, ErrRateLimited) {
		t.Fatalf("4th call: %v, want a RateLimitError", err)
	}
	if want := "rate limit: server github allows 3 calls/min"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if rle.Server != "github" || rle.PerMinute != 3 || rle.RetryAfter != 20*time.Second || rle.RetrySeconds() != 20 {
		t.Errorf("error = %+v (retry in %d s), want github, 3/min, retry after 20 s", rle, rle.RetrySeconds())
	}
	// A refused call takes no token: 20 s later exactly one call is allowed.
	now = now.Add(20 * time.Second)
	if err := l.Allow(); err != nil {
		t.Errorf("after 20 s: %v", err)
	}
	if err := l.Allow(); err == nil {
		t.Error("two calls allowed after one refill")
	}
	now = now.Add(time.Minute)
	for i := range 3 {
		if err := l.Allow(); err != nil {
			t.Fatalf("after a minute, call %d: %v", i, err)
		}
	}
}

func TestCallLimiter_DefaultsAndUnlimited(t *testing.T) {
	now := time.Unix(0, 0)
	l := NewCallLimiter("s", 0, func() time.Time { return now })
	n := 0
	for l.Allow() == nil {
		n++
	}
	if n != DefaultCallsPerMinute {
		t.Errorf("default burst = %d, want %d", n, DefaultCallsPerMinute)
	}
	u := NewCallLimiter("s", -1, nil)
	for range 10_000 {
		if err := u.Allow(); err != nil {
			t.Fatal(err)
		}
	}
}
