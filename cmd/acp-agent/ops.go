package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/seed02d3eb6b/acp-agent/internal/metrics"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// metricsTokenEnv holds the token of --metrics-addr when no
// --metrics-token-file is given.
const metricsTokenEnv = "ACP_AGENT_METRICS_TOKEN"

// readyProbeID is the session ID readiness reads: no session has it (IDs
// are UUIDs), so a store that answers says "not found".
const readyProbeID = "acp-agent-readyz-probe"

// storeReady is the readiness check of a process whose work needs st: one
// Get of a session that does not exist, which a working store answers with
// store.ErrNotFound (PostgreSQL: a round trip to the database). A nil st
// is always ready.
func storeReady(st store.Store) func(ctx context.Context) error {
	if st == nil {
		return nil
	}
	return func(ctx context.Context) error {
		_, err := st.Get(ctx, readyProbeID)
		if err == nil || errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("the session store does not answer: %w", err)
	}
}

// metricsStopTimeout bounds how long exiting waits for the --metrics-addr
// server's open requests.
const metricsStopTimeout = 2 * time.Second

// startMetricsAddr serves /healthz, /readyz and /metrics of m on addr
// (--metrics-addr; "" serves nothing) under the listen rules of the other
// listeners: an explicit host, loopback unless token is set, and then
// /metrics needs "Authorization: Bearer <token>". The bound address is
// logged at info. stop shuts the server down (at most metricsStopTimeout)
// and waits for its goroutine; call it once.
func startMetricsAddr(addr, token string, m *metrics.Metrics, ready func(context.Context) error, log *slog.Logger) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	if err := checkListenFlag("--metrics-addr", addr, token, metricsTokenEnv); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	m.Mount(mux, &metrics.HandlerOptions{Ready: ready, Authorized: metrics.BearerAuth(token), Logger: log})
	stop = serveSide(ln, mux, "--metrics-addr", metricsStopTimeout, log)
	log.Info("serving metrics", "flag", "--metrics-addr", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+metrics.PathMetrics, "auth", token != "")
	return stop, nil
}

// operatorToken reads the operator's token of a listener's /metrics and
// /readyz reason (--metrics-token-file, else metricsTokenEnv; "" none) and
// refuses one that a client (clients: token → name) also holds.
func operatorToken(file string, clients map[string]string) (string, error) {
	token, err := listenerToken("--metrics-token-file", file, metricsTokenEnv)
	if err != nil || token == "" {
		return "", err
	}
	if name, ok := clients[token]; ok {
		if name == "" {
			name = "the --token-file one"
		}
		return "", fmt.Errorf("--metrics-token-file (or %s) is a client's token (%s): the operator's token must be one no client holds", metricsTokenEnv, name)
	}
	return token, nil
}

// operatorAuth is the metrics.HandlerOptions.Authorized of a listener
// whose clients hold clients' tokens (token → name): nil (everyone on a
// loopback Host) when no client needs a token; else the operator's token,
// and, when shared is false (one --token-file token, no --tokens-file),
// that one client's token too: who runs a gateway for one is its operator.
// With shared clients and no operator token, no request is an operator's
// (metrics.Nobody).
func operatorAuth(operator string, clients map[string]string, shared bool) func(*http.Request) bool {
	if len(clients) == 0 && operator == "" {
		return nil
	}
	tokens := []string{operator}
	if !shared {
		tokens = slices.AppendSeq(tokens, maps.Keys(clients))
	}
	if auth := metrics.BearerAuth(tokens...); auth != nil {
		return auth
	}
	return metrics.Nobody
}
