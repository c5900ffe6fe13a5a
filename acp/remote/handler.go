package remote

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed02d3eb6b/acp-agent/acp"
)

// Header names of the remote transport (the RFD's identity model).
const (
	// HeaderConnectionID names the connection: returned by initialize's
	// response (and the WebSocket upgrade), sent with every later request.
	HeaderConnectionID = "Acp-Connection-Id"
	// HeaderSessionID names the session of a session-scoped request or
	// stream.
	HeaderSessionID = "Acp-Session-Id"
)

// AffinityCookie is the cookie a Handler with a Replica name sets on
// initialize's response and on the WebSocket upgrade: its value is the
// replica's name, so that a balancer can send the connection's later
// requests to the same replica (clients of the RFD keep cookies for the
// life of the connection). nginx: map $cookie_acp_replica to the replica's
// address; Caddy: lb_policy cookie, which sets a cookie of its own.
const AffinityCookie = "acp_replica"

// Transports, as the Observer and the logs name them.
const (
	TransportHTTP      = "http"
	TransportWebSocket = "websocket"
)

// Conn is the agent of one connection: an *acp.Agent, which serves the
// connection's stream and says which sessions are live on it.
type Conn interface {
	// ServeStream serves the connection until the stream's input ends (the
	// client's DELETE, a closed socket, the idle timeout, Shutdown) or ctx
	// is done, answering every request read before it returns.
	ServeStream(ctx context.Context, s acp.Stream) error
	// HasSession reports whether the session is live on this connection.
	HasSession(sessionID string) bool
}

// Limits bound what one client can make a Handler hold. A zero field takes
// its default.
type Limits struct {
	// MaxMessageBytes is the longest message a client may send: a POST body
	// over it is refused with 413; a WebSocket message over it is answered
	// as over stdio (a JSON-RPC error giving its size and the limit), and
	// one over four times it closes the socket (1009). Default and most:
	// acp.MaxFrameBytes.
	MaxMessageBytes int
	// MaxConnectionsPerTenant is how many connections one tenant (token) may
	// have open; more is 429. Default 64.
	MaxConnectionsPerTenant int
	// MaxConnections is how many connections the Handler holds in all; more
	// is 503. Default 4096.
	MaxConnections int
	// MaxBufferedBytes is how much of the agent's output one connection
	// holds for its client (HTTP streams not read yet); beyond it the
	// agent's writes and the client's requests wait. Default 16 MiB.
	MaxBufferedBytes int
	// OutputStall is how long a client may read none of its connection's
	// output while the agent waits to write (HTTP: the buffer is full;
	// WebSocket: a write does not go through) before the connection is
	// closed. Default 60 s.
	OutputStall time.Duration
	// IdleTimeout ends an HTTP connection with no open stream and no
	// request for that long, and a WebSocket whose client answers no ping
	// for that long. Default 5 min.
	IdleTimeout time.Duration
	// MaxSessionStreams is how many session streams one connection may
	// have (a GET for one more is 409), and how many of them may hold
	// messages with no client reading them (one more closes the
	// connection). Default 1024.
	MaxSessionStreams int
	// MaxPendingMessages is how many of a connection's POSTed messages may
	// wait for its agent to read them; more POSTs wait. Default 256.
	MaxPendingMessages int
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxMessageBytes, acp.MaxFrameBytes)
	l.MaxMessageBytes = min(l.MaxMessageBytes, acp.MaxFrameBytes)
	def(&l.MaxConnectionsPerTenant, 64)
	def(&l.MaxConnections, 4096)
	def(&l.MaxBufferedBytes, 16<<20)
	def(&l.MaxSessionStreams, 1024)
	def(&l.MaxPendingMessages, 256)
	if l.OutputStall <= 0 {
		l.OutputStall = 60 * time.Second
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 5 * time.Minute
	}
	return l
}

// Options configure a Handler; the zero value is valid (no credentials,
// every Host, no browser origins, default limits).
type Options struct {
	// Authenticate returns the tenant whose credentials r carries, or an
	// error (answered 401, WWW-Authenticate: Bearer). It reads headers
	// only: it runs before anything else of the request is read. Nil lets
	// every request in as tenant "". See BearerAuth.
	Authenticate func(r *http.Request) (tenant string, err error)
	// AllowedOrigins are the Origin values accepted from browsers; any
	// other request with an Origin header is refused (403), except the
	// listener's own loopback origin.
	AllowedOrigins []string
	// LoopbackHost refuses (403) a request whose Host is not a loopback
	// name or address: for a loopback listener without credentials, which
	// a page elsewhere could otherwise reach by rebinding a name of its own
	// to 127.0.0.1.
	LoopbackHost bool
	// Replica is this process's name in a fleet: the value of the
	// AffinityCookie (characters outside a cookie token are replaced by
	// '_'). Empty sets no cookie.
	Replica string
	// Limits bound each client.
	Limits Limits
	// Observer, if set, is told of connections and refusals (metrics); it
	// must not block.
	Observer Observer
	// Logger receives the transport's logs. Nil discards them.
	Logger *slog.Logger
}

// Handler serves ACP's remote transport (see the package doc): mount it at
// /acp. Create it with NewHandler.
type Handler struct {
	newConn  func(tenant string) (Conn, error)
	opts     Options
	lim      Limits
	cookie   string // the AffinityCookie's value, or ""
	log      *slog.Logger
	upgrader websocket.Upgrader

	// mu guards the fields below.
	mu        sync.Mutex
	conns     map[string]*connection // by connection id
	perTenant map[string]int         // connections open, by tenant
	gone      goneSet                // connections ended lately, for 410
	closing   bool                   // Shutdown has begun: no new connections
	// serving counts the agents running (their goroutines); Shutdown waits.
	serving sync.WaitGroup
}

// NewHandler returns a Handler whose every connection is served by the
// Conn newConn returns for the connection's tenant (an error is answered
// 500 and logged). opts may be nil; it is copied. It panics if newConn is
// nil.
func NewHandler(newConn func(tenant string) (Conn, error), opts *Options) *Handler {
	if newConn == nil {
		panic("remote.NewHandler: newConn is nil")
	}
	h := &Handler{newConn: newConn, conns: make(map[string]*connection), perTenant: make(map[string]int)}
	if opts != nil {
		h.opts = *opts
		h.opts.AllowedOrigins = slices.Clone(opts.AllowedOrigins)
	}
	h.lim = h.opts.Limits.withDefaults()
	h.log = h.opts.Logger
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.opts.Replica != "" {
		h.cookie = strings.Map(func(r rune) rune {
			if r > ' ' && r < 0x7f && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
				return r
			}
			return '_'
		}, h.opts.Replica)
	}
	// The origin was checked before the upgrade (checkOrigin).
	h.upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }, HandshakeTimeout: 10 * time.Second}
	return h
}

// ServeHTTP implements http.Handler: the checks every request passes (Host,
// Origin, credentials), then POST, GET (SSE or WebSocket) and DELETE.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.opts.LoopbackHost && !loopbackHost(r.Host) {
		h.refuse(w, r, http.StatusForbidden, fmt.Sprintf("Host %q is not a loopback name or address: this listener answers only loopback (against DNS rebinding)", r.Host))
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !slices.Contains(h.opts.AllowedOrigins, o) && !ownLoopbackOrigin(o, r.Host) {
		h.refuse(w, r, http.StatusForbidden, fmt.Sprintf("Origin %q is not allowed (the gateway's --allowed-origins)", o))
		return
	}
	tenant := ""
	if h.opts.Authenticate != nil {
		var err error
		if tenant, err = h.opts.Authenticate(r); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="acp-agent"`)
			h.refuse(w, r, http.StatusUnauthorized, err.Error())
			return
		}
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r, tenant)
	case http.MethodGet:
		if websocket.IsWebSocketUpgrade(r) {
			h.serveWebSocket(w, r, tenant)
			return
		}
		h.get(w, r, tenant)
	case http.MethodDelete:
		h.delete(w, r, tenant)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		h.refuse(w, r, http.StatusMethodNotAllowed, r.Method+" is not a method of ACP's remote transport: POST messages, GET streams (or Upgrade: websocket), DELETE the connection")
	}
}

// refuse answers r with status and a plain-text reason, logged and counted.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, status int, reason string) {
	h.log.Info("refused an ACP request", "status", status, "method", r.Method, "remote", r.RemoteAddr, "reason", reason)
	if h.opts.Observer != nil {
		h.opts.Observer.Refused(status)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintln(w, reason)
}

// Shutdown ends every connection: its input ends, so its agent answers the
// requests under way (a prompt answers cancelled) and ends its sessions;
// then it waits for the agents, until ctx is done, when their contexts are
// cancelled and it waits a few seconds more. New connections are refused
// (503) from the start. It is idempotent.
func (h *Handler) Shutdown(ctx context.Context) {
	h.mu.Lock()
	h.closing = true
	conns := make([]*connection, 0, len(h.conns))
	for _, c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.end(closeShutdown)
	}
	done := make(chan struct{})
	go func() {
		h.serving.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	for _, c := range conns {
		c.cancel()
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		h.log.Warn("ACP connections still ending after shutdown")
	}
}

// BearerAuth is an Options.Authenticate over bearer tokens: tokens maps
// each token to its tenant. A request must send "Authorization: Bearer
// <token>" with one of them; tokens are compared by digest in constant
// time, so a lookup takes no longer for a token that shares a prefix with
// one of them. Nil or empty tokens returns nil (no credentials asked).
func BearerAuth(tokens map[string]string) func(*http.Request) (string, error) {
	if len(tokens) == 0 {
		return nil
	}
	type entry struct {
		digest [sha256.Size]byte
		tenant string
	}
	entries := make([]entry, 0, len(tokens))
	for tok, tenant := range tokens {
		entries = append(entries, entry{sha256.Sum256([]byte(tok)), tenant})
	}
	return func(r *http.Request) (string, error) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || got == "" {
			return "", errors.New(`the request has no "Authorization: Bearer <token>" header: the gateway's token (or a tenant's) is required`)
		}
		d := sha256.Sum256([]byte(got))
		tenant, found := "", 0
		for _, e := range entries {
			if subtle.ConstantTimeCompare(d[:], e.digest[:]) == 1 {
				tenant, found = e.tenant, 1
			}
		}
		if found == 0 {
			return "", errors.New("the bearer token is not one of this gateway's")
		}
		return tenant, nil
	}
}

// loopbackHost reports whether host (a Host header, with or without a
// port) is a loopback address or "localhost".
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	ip := net.ParseIP(host)
	return strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()
}

// ownLoopbackOrigin reports whether origin is the listener's own loopback
// origin (http://localhost, 127.0.0.1 or [::1] with the request's Host,
// port included): no cross-site request, since only this server answers
// there and it serves no pages.
func ownLoopbackOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" || u.Host != host {
		return false
	}
	return loopbackHost(u.Host)
}
