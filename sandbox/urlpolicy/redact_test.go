package urlpolicy

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"https://mcp.example.com/mcp", "https://mcp.example.com/mcp"},
		{"https://mcp.example.com/mcp?token=secret", "https://mcp.example.com/mcp?REDACTED"},
		{"https://h/mcp?b=secret&a=secret2&b=x", "https://h/mcp?REDACTED"},
		{"https://h/mcp?secret", "https://h/mcp?REDACTED"},
		{"https://user:secret@h/mcp", "https://user:xxxxx@h/mcp"},
		{"https://h/mcp#access_token=secret", "https://h/mcp"},
		{"http://h/%zz?token=secret", "http://h/%zz?REDACTED"},
		{"http://user:secret@h:bad/?token=secret", "http://REDACTED@h:bad/?REDACTED"},
	} {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedactError(t *testing.T) {
	base := errors.New("boom")
	err := RedactError(fmt.Errorf(`sending "initialize": rejected: Post "http://127.0.0.1:9/mcp?key=secret&x=1": %w`, base))
	if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), `"http://127.0.0.1:9/mcp?REDACTED"`) {
		t.Errorf("err = %v", err)
	}
	if !errors.Is(err, base) {
		t.Error("the redacted error lost its chain")
	}
	if RedactError(nil) != nil || RedactError(base) != base {
		t.Error("nil and errors without URLs must pass unchanged")
	}
}

func TestRedactingHandler(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(RedactingHandler(slog.NewTextHandler(&buf, nil))).With("url", "https://h/mcp?token=secret1")
	log.Info("GET https://h/sse?token=secret2 failed",
		"err", errors.New(`Get "https://h/sse?token=secret3": EOF`),
		slog.Group("req", "u", "https://h/x?k=secret4"))
	if out := buf.String(); strings.Contains(out, "secret") || !strings.Contains(out, "?REDACTED") {
		t.Errorf("log line: %s", out)
	}
}

func FuzzRedactURL(f *testing.F) {
	for _, s := range []string{"https://h/mcp?token=secretvalue", "https://h/mcp?secretvalue", "http://u:secret@h/?a=secret#secret", "?secret", "http://h:x/?secret"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := RedactURL(raw)
		if i := strings.IndexAny(raw, "?#"); i >= 0 && strings.Count(got, "secretvalue") > strings.Count(raw[:i], "secretvalue") {
			t.Errorf("RedactURL(%q) = %q keeps the query", raw, got)
		}
	})
}
