package metrics

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
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
// every path to everyone on a loopback Host (LocalOnly) and is always
// ready.
type HandlerOptions struct {
	// Ready reports whether the process can do work (its session store
	// answers); it runs under a context bounded by ReadyTimeout. Nil is
	// always ready.
	Ready func(ctx context.Context) error
	// Authorized reports whether r comes from an operator, who may read
	// /metrics and the reason of a failed /readyz; nil lets everyone (a
	// loopback listener without a token), behind LocalOnly. /healthz and
	// /readyz's status answer everyone: probes carry no token.
	Authorized func(r *http.Request) bool
	// Logger records the reason of a failed /readyz under the reference
	// a request that is not an operator's is given. Nil: slog.Default().
	Logger *slog.Logger
}

// Nobody is an HandlerOptions.Authorized that accepts no request: the
// endpoints of a listener whose clients hold tokens but whose operator
// has none (their /metrics answer 401, /readyz only ready or not).
func Nobody(*http.Request) bool { return false }

// Mount serves /healthz, /readyz and /metrics on mux:
//
//   - /healthz: 200 "ok" while the process serves;
//   - /readyz: 200 "ok" when opts.Ready returns nil within ReadyTimeout,
//     else 503: "not ready: <reason>" to an operator (opts.Authorized),
//     "not ready (ref <hex>)" to others, the reason logged under the ref
//     (a store's reason may name its database URL);
//   - /metrics: the Prometheus text format (or OpenMetrics, as the scraper
//     asks), 401 without an operator's token when opts.Authorized is set.
//
// Without opts.Authorized (a loopback listener with no token), every path
// is LocalOnly: a web page cannot read the endpoints through a name
// rebound to 127.0.0.1.
func (m *Metrics) Mount(mux *http.ServeMux, opts *HandlerOptions) {
	var o HandlerOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	authorized := func(r *http.Request) bool { return o.Authorized == nil || o.Authorized(r) }
	handle := func(path string, h http.Handler) {
		if o.Authorized == nil {
			h = LocalOnly(h)
		}
		mux.Handle("GET "+path, h)
	}
	handle(PathHealth, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	}))
	handle(PathReady, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
				msg := "not ready: " + err.Error()
				if !authorized(r) {
					ref := newRef()
					o.Logger.Warn("not ready", "ref", ref, "err", err)
					msg = "not ready (ref " + ref + "); the operator finds the cause in the log, or reads it here with the operator's token"
				}
				_, _ = w.Write([]byte(msg + "\n"))
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	}))
	prom := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
	handle(PathMetrics, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="acp-agent metrics"`)
			http.Error(w, "metrics need \"Authorization: Bearer <token>\" with the operator's metrics token (--metrics-token-file or ACP_AGENT_METRICS_TOKEN)", http.StatusUnauthorized)
			return
		}
		prom.ServeHTTP(w, r)
	}))
}

// newRef returns a fresh reference (8 hex digits) that ties an answer to
// the log line giving its cause.
func newRef() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
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

// LocalOnly serves h only to requests a local, non-browser client makes:
// 403 for a Host header that is not a loopback address or "localhost"
// (with or without a port), as the go-sdk's DNS-rebinding protection
// answers, and 403 for any request with an Origin header (a web page's;
// scrapers, curl and go tool pprof send none). For listeners bound to
// loopback without a token: --debug-addr, --metrics-addr, and a gateway's
// or mcp-server's operator endpoints.
func LocalOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if hh, _, err := net.SplitHostPort(host); err == nil {
			host = hh
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, fmt.Sprintf("Host %q is not loopback: this listener serves only this machine", r.Host), http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			http.Error(w, fmt.Sprintf("Origin %q: this listener serves no web page", o), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}
