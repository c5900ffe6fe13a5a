package metrics

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ReadyTimeout bounds one readiness check: /readyz answers 503 within it
// when the store does not answer.
const ReadyTimeout = 3 * time.Second

// Paths of the operator endpoints.
const (
	PathHealth  = "/healthz"
	PathReady   = "/readyz"
	PathMetrics = "/metrics"
)

// HandlerOptions configure the operator endpoints. The zero value serves
// every path to everyone and is always ready.
type HandlerOptions struct {
	// Ready reports whether the process can do work (its session store
	// answers); it runs under a context bounded by ReadyTimeout. Nil is
	// always ready.
	Ready func(ctx context.Context) error
	// Authorized reports whether r may read /metrics and the reason of a
	// failed /readyz; nil lets everyone (a loopback listener without a
	// token). /healthz and /readyz's status answer everyone: probes carry
	// no token.
	Authorized func(r *http.Request) bool
}

// Mount serves /healthz, /readyz and /metrics on mux:
//
//   - /healthz: 200 "ok" while the process serves;
//   - /readyz: 200 "ok" when opts.Ready returns nil within ReadyTimeout,
//     else 503 "not ready: <reason>" (the reason only to an authorized
//     request);
//   - /metrics: the Prometheus text format (or OpenMetrics, as the scraper
//     asks), 401 without a valid token when opts.Authorized is set.
//
// Without opts.Authorized (a loopback listener with no token), a request
// whose Host is not loopback gets 403, as the go-sdk's DNS-rebinding
// protection answers: a web page cannot read the endpoints through a name
// rebound to 127.0.0.1.
func (m *Metrics) Mount(mux *http.ServeMux, opts *HandlerOptions) {
	var o HandlerOptions
	if opts != nil {
		o = *opts
	}
	authorized := func(r *http.Request) bool { return o.Authorized == nil || o.Authorized(r) }
	handle := func(path string, h http.HandlerFunc) {
		if o.Authorized == nil {
			h = loopbackHostOnly(h)
		}
		mux.HandleFunc("GET "+path, h)
	}
	handle(PathHealth, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	handle(PathReady, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if o.Ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
			err := o.Ready(ctx)
			if err == nil && ctx.Err() != nil {
				err = ctx.Err()
			}
			cancel()
			if err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				msg := "not ready"
				if authorized(r) {
					msg += ": " + err.Error()
				}
				_, _ = w.Write([]byte(msg + "\n"))
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	prom := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
	handle(PathMetrics, func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="acp-agent metrics"`)
			http.Error(w, "metrics need \"Authorization: Bearer <token>\" with the listener's token", http.StatusUnauthorized)
			return
		}
		prom.ServeHTTP(w, r)
	})
}

// BearerAuth returns an HandlerOptions.Authorized that accepts a request
// carrying "Authorization: Bearer <t>" for one of tokens, compared by
// digest in constant time. No tokens: nil (everyone).
func BearerAuth(tokens ...string) func(*http.Request) bool {
	var digests [][sha256.Size]byte
	for _, t := range tokens {
		if t != "" {
			digests = append(digests, sha256.Sum256([]byte(t)))
		}
	}
	if len(digests) == 0 {
		return nil
	}
	return func(r *http.Request) bool {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || got == "" {
			return false
		}
		d := sha256.Sum256([]byte(got))
		match := 0
		for _, want := range digests {
			match |= subtle.ConstantTimeCompare(d[:], want[:])
		}
		return match == 1
	}
}

// loopbackHostOnly refuses (403) a request whose Host header is not a
// loopback address or "localhost", with or without a port.
func loopbackHostOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, fmt.Sprintf("Host %q is not loopback: this listener serves only this machine", r.Host), http.StatusForbidden)
			return
		}
		h(w, r)
	}
}
