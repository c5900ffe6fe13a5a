package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// --debug-addr refuses every address that is not loopback host:port, before
// anything is served, with an error naming the flag and the rule.
func TestRun_DebugAddrRefusesNonLoopback(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, addr := range []string{"0.0.0.0:0", ":6060", "[::]:0", "192.168.1.2:6060", "example.com:6060", "127.0.0.1", "127.0.0.1:port"} {
		var stdout, stderr bytes.Buffer
		err := run([]string{"--store", "memory", "--debug-addr", addr}, strings.NewReader(""), &stdout, &stderr)
		if err == nil {
			t.Errorf("--debug-addr %q: run succeeded, want a refusal", addr)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "--debug-addr") || !strings.Contains(msg, "loopback") {
			t.Errorf("--debug-addr %q: error %q does not name the flag and the loopback rule", addr, msg)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// On 127.0.0.1:0 the debug server logs the address it bound at info and
// serves pprof's index, goroutine and heap profiles there; stop closes it.
func TestStartDebug_ServesPprofOnLoopback(t *testing.T) {
	var logs lockedBuffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	stop, err := startDebug("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	var rec struct {
		Msg, Addr, URL string
	}
	if err := jsonLine(logs.String(), "serving pprof", &rec); err != nil || !strings.HasPrefix(rec.Addr, "127.0.0.1:") || strings.HasSuffix(rec.Addr, ":0") {
		t.Fatalf("no info line with the bound address (%v); logs:\n%s", err, logs.String())
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for path, want := range map[string]string{
		"/debug/pprof/":                     "goroutine",
		"/debug/pprof/goroutine?debug=1":    "goroutine profile: total",
		"/debug/pprof/heap?debug=1":         "heap profile:",
		"/debug/pprof/cmdline":              "",
		"/debug/pprof/threadcreate?debug=1": "threadcreate profile",
		"/debug/vars":                       `"HeapReleased"`,
	} {
		res, err := client.Get("http://" + rec.Addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %s, want 200 with %q; body starts %.200q", path, res.Status, want, body)
		}
	}
	// A name rebound to 127.0.0.1, or a web page's request: 403, as the
	// --metrics-addr listener answers.
	for _, h := range []struct{ host, origin, path string }{
		{"attacker.example", "", "/debug/pprof/cmdline"}, {"attacker.example:6060", "", "/debug/pprof/cmdline"},
		{"", "http://attacker.example", "/debug/pprof/cmdline"}, {"", "http://" + rec.Addr, "/debug/pprof/cmdline"},
		{"attacker.example", "", "/debug/vars"}, {"", "http://attacker.example", "/debug/vars"}, // the command line too
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+rec.Addr+h.path, nil)
		if h.host != "" {
			req.Host = h.host
		}
		if h.origin != "" {
			req.Header.Set("Origin", h.origin)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusForbidden || strings.Contains(string(body), "debug-addr") {
			t.Errorf("%s, Host %q Origin %q: %s %.100q, want 403", h.path, h.host, h.origin, res.Status, body)
		}
	}
	stop()
	stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+rec.Addr+"/debug/pprof/", nil)
	if res, err := client.Do(req); err == nil {
		_ = res.Body.Close()
		t.Errorf("the debug server still answers after stop: %s", res.Status)
	}
}

// With no --debug-addr nothing is served and stop is a no-op.
func TestStartDebug_OffByDefault(t *testing.T) {
	var logs lockedBuffer
	stop, err := startDebug("", slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if logs.String() != "" {
		t.Errorf("logs = %q, want nothing", logs.String())
	}
}

// jsonLine decodes into v the first JSON log line whose msg is msg.
func jsonLine(logs, msg string, v any) error {
	for _, line := range strings.Split(logs, "\n") {
		var m struct{ Msg string }
		if json.Unmarshal([]byte(line), &m) == nil && m.Msg == msg {
			return json.Unmarshal([]byte(line), v)
		}
	}
	return fmt.Errorf("no log line %q", msg)
}
