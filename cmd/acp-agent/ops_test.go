package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/internal/metrics"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// downStore is a store whose Get fails as a lost database does.
type downStore struct{ store.Store }

func (downStore) Get(context.Context, string) (store.Record, error) {
	return store.Record{}, errors.New("dial tcp 127.0.0.1:5432: connection refused")
}

func TestStoreReady(t *testing.T) {
	if storeReady(nil) != nil {
		t.Error("storeReady(nil) is a check; want nil (always ready)")
	}
	if err := storeReady(memory.New())(t.Context()); err != nil {
		t.Errorf("ready of a memory store = %v", err)
	}
	err := storeReady(downStore{})(t.Context())
	if err == nil || !strings.Contains(err.Error(), "session store does not answer") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("ready of a store that is down = %v", err)
	}
}

func TestCheckListenFlag_MetricsAddr(t *testing.T) {
	for _, c := range []struct{ addr, token, want string }{
		{"127.0.0.1:0", "", ""},
		{"localhost:9464", "", ""},
		{":9464", "", "--metrics-addr \":9464\" has no host"},
		{"0.0.0.0:9464", "", "--metrics-addr \"0.0.0.0:9464\" is not a loopback address: set a token (--metrics-token-file or " + metricsTokenEnv + ")"},
		{"0.0.0.0:9464", "0123456789abcdef0123456789abcdef", ""},
	} {
		err := checkListenFlag("--metrics-addr", c.addr, c.token, metricsTokenEnv)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("checkListenFlag(%q, token %t) = %v, want %q", c.addr, c.token != "", err, c.want)
		}
	}
}

func TestStartMetricsAddr(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	if _, err := startMetricsAddr("0.0.0.0:0", "", metrics.New(), nil, log); err == nil {
		t.Fatal("a non-loopback --metrics-addr without a token was served")
	}
	m := metrics.New()
	m.SessionOpened()
	// Port 0: the bound address is logged (as an operator finds it).
	var logged strings.Builder
	log = slog.New(slog.NewTextHandler(&logged, nil))
	stop, err := startMetricsAddr("127.0.0.1:0", "", m, storeReady(downStore{}), log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, rest, ok := strings.Cut(logged.String(), "url=")
	if !ok {
		t.Fatalf("no url logged: %s", logged.String())
	}
	base := strings.TrimSuffix(strings.Fields(rest)[0], metrics.PathMetrics)
	for path, want := range map[string]int{metrics.PathHealth: 200, metrics.PathReady: 503, metrics.PathMetrics: 200} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d %q, want %d", path, resp.StatusCode, b, want)
		}
		if path == metrics.PathMetrics && !strings.Contains(string(b), "acp_agent_sessions_open 1") {
			t.Errorf("/metrics lacks acp_agent_sessions_open 1:\n%s", b)
		}
	}
}
