package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/signin"
)

// OAuth configures signing in to http and sse servers (MCP "Authorization",
// https://modelcontextprotocol.io/specification/2025-11-25/basic/authorization).
// A server that answers 401 (or 403 insufficient_scope) starts a sign-in
// (package signin): the server is reported as StateSignIn with the link
// (ServerStatus.SignInURL), Manager.Connect returns without waiting for the
// user, and once the user has signed in the server connects and its tools
// join the session (Options.OnToolsChanged, Options.OnStateChanged).
type OAuth struct {
	// Store keeps the tokens across connections, sessions and processes.
	// Nil turns sign-in off: a server that answers 401 fails to connect.
	Store signin.Store
	// ClientIDMetadataURL is the Client ID Metadata Document URL the agent
	// registers with where the authorization server supports it; empty
	// means none.
	ClientIDMetadataURL string
	// Timeout bounds the wait for the user. Zero means signin.DefaultTimeout.
	Timeout time.Duration
	// Prompt shows the session's user the authorization URL of server (see
	// signin.Config.Prompt: an error means the user declined). Nil means
	// the link is only shown by /servers.
	Prompt func(ctx context.Context, server, authURL string) error
}

// errSignedOut is the reason of a server after Manager.Logout; its remedy
// (gateway.ErrorText shows it) says how to sign in again.
var errSignedOut = gateway.WithRemedy(errors.New("signed out"), " (/logout); /login signs in again")

// oauthHandler returns the sign-in handler of an http or sse server, made
// on first use and kept for the server's life; nil when sign-in is off or
// the entry sends its own Authorization header. Its OAuth requests follow
// the URL policy of the server's sign-in (urlpolicy.Policy.SignIn): they
// go no closer to the agent than the server itself is.
func (s *client) oauthHandler() *signin.Handler {
	o := s.opts.OAuth
	if o == nil || o.Store == nil || (s.spec.Transport != TransportHTTP && s.spec.Transport != TransportSSE) {
		return nil
	}
	for _, h := range s.spec.Headers {
		if strings.EqualFold(h.Name, "Authorization") {
			return nil
		}
	}
	s.signIn.mu.Lock()
	defer s.signIn.mu.Unlock()
	if s.signIn.h != nil {
		return s.signIn.h
	}
	u, err := s.opts.URLs.CheckURL(s.spec.URL)
	if err != nil {
		return nil // the transport reports it
	}
	cfg := signin.Config{
		Server:              s.spec.Name,
		ServerURL:           tokenKey(u),
		Store:               o.Store,
		URLs:                s.opts.URLs.SignIn(u),
		Client:              s.spec.OAuth,
		ClientIDMetadataURL: o.ClientIDMetadataURL,
		ClientName:          s.opts.ClientInfo.Name,
		Timeout:             o.Timeout,
		Waiting:             s.signInWaiting,
		Logger:              s.log,
	}
	if o.Prompt != nil {
		cfg.Prompt = func(ctx context.Context, authURL string) error { return o.Prompt(ctx, s.spec.Name, authURL) }
	}
	s.signIn.h = signin.New(cfg)
	return s.signIn.h
}

// signInCache is an http or sse server's sign-in handler, made on first
// use (client.oauthHandler) and kept for the server's life.
type signInCache struct {
	// mu guards h; it is held while the handler is made (signin.New), and
	// never with another lock of the bridge.
	mu sync.Mutex
	h  *signin.Handler // nil until made
}

// tokenKey is the server URL tokens are stored under: without userinfo,
// query or fragment, which may hold secrets.
func tokenKey(u *url.URL) string {
	k := *u
	k.User, k.RawQuery, k.ForceQuery, k.Fragment, k.RawFragment = nil, "", false, "", ""
	return k.String()
}

// signInWaiting reports the server as waiting for the user to sign in at
// authURL: a server still connecting shows StateSignIn, Manager.Connect
// stops waiting for it, and the dial no longer ends with the request that
// started it nor counts the wait against its connect timeout. The returned
// function ends the report.
func (s *client) signInWaiting(authURL string) (done func()) {
	s.conn.mu.Lock()
	if s.conn.state == StateConnecting {
		s.conn.state = StateSignIn
	}
	s.conn.signInURL = authURL
	dl, detach := s.conn.deadline, s.conn.detach
	s.conn.mu.Unlock()
	if dl != nil {
		dl.pause()
	}
	if detach != nil {
		detach()
	}
	s.conn.settle()
	s.log.Info("MCP server needs sign-in")
	return func() {
		s.conn.mu.Lock()
		if s.conn.state == StateSignIn {
			s.conn.state = StateConnecting
		}
		s.conn.signInURL = ""
		s.conn.mu.Unlock()
		if dl != nil {
			dl.resume()
		}
	}
}

// connectDeadline is the connect timeout of one dial, which a sign-in
// pauses: the time the user takes does not count, and the dial gets the
// whole timeout again when the sign-in ends.
type connectDeadline struct {
	d      time.Duration
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	timer   *time.Timer
	paused  int
	expired bool
}

// errConnectTimeout is the cause of a dial's context when its connect
// deadline passed.
var errConnectTimeout = errors.New("connect timeout")

// withConnectDeadline returns ctx bounded by a pausable deadline d from now,
// and its cancel function.
func withConnectDeadline(ctx context.Context, d time.Duration) (context.Context, *connectDeadline, context.CancelFunc) {
	cctx, cancel := context.WithCancelCause(ctx)
	dl := &connectDeadline{d: d, cancel: cancel}
	dl.mu.Lock()
	dl.timer = time.AfterFunc(d, dl.fire)
	dl.mu.Unlock()
	return cctx, dl, func() {
		dl.mu.Lock()
		dl.timer.Stop()
		dl.mu.Unlock()
		cancel(context.Canceled)
	}
}

func (dl *connectDeadline) fire() {
	dl.mu.Lock()
	if dl.paused > 0 {
		dl.mu.Unlock()
		return
	}
	dl.expired = true
	dl.mu.Unlock()
	dl.cancel(errConnectTimeout)
}

func (dl *connectDeadline) pause() {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	dl.paused++
	dl.timer.Stop()
}

func (dl *connectDeadline) resume() {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	dl.paused--
	if dl.paused == 0 && !dl.expired {
		dl.timer.Reset(dl.d)
	}
}

// timedOut reports whether the deadline passed.
func (dl *connectDeadline) timedOut() bool {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	return dl.expired
}

// oauthTransport signs the requests of a legacy SSE server, whose go-sdk
// transport takes no auth.OAuthHandler: it sends the handler's token and,
// on 401 or 403, runs the handler's Authorize once and retries the request
// (the Streamable HTTP transport does the same itself).
type oauthTransport struct {
	base    http.RoundTripper
	handler *signin.Handler
}

func (t *oauthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.send(req)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	if req.Body != nil && req.GetBody == nil {
		return resp, nil // cannot be sent again
	}
	if err := t.handler.Authorize(req.Context(), req, resp); err != nil {
		return nil, err
	}
	retry := req.Clone(req.Context())
	if req.GetBody != nil {
		if retry.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.send(retry)
}

func (t *oauthTransport) send(req *http.Request) (*http.Response, error) {
	ts, err := t.handler.TokenSource(req.Context())
	if err != nil {
		return nil, err
	}
	if ts != nil {
		if tok, err := ts.Token(); err == nil {
			req = req.Clone(req.Context())
			req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		}
	}
	return t.base.RoundTrip(req)
}

// Logout signs the session out of server name: its stored tokens are
// deleted and revoked (signin.Handler.Logout), its connection is closed and
// its tools leave the session. The tokens are shared by every session and
// agent process that uses the state directory, so those sign in again at
// their next connection. Errors name the server.
func (m *Manager) Logout(ctx context.Context, name string) error {
	s := m.server(name)
	if s == nil {
		return fmt.Errorf("no MCP server %q in this session", name)
	}
	h := s.oauthHandler()
	if h == nil {
		return fmt.Errorf("MCP server %q does not sign in: only http and sse servers without an Authorization header do", name)
	}
	err := h.Logout(ctx)
	s.conn.mu.Lock()
	cs, endStreams := s.conn.cs, s.conn.procCancel
	if s.conn.state != StateClosed {
		s.conn.state, s.conn.err, s.conn.cs, s.conn.signInURL = StateFailed, errSignedOut, nil, ""
		s.tools.set(nil)
	}
	s.conn.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
	if endStreams != nil {
		endStreams()
	}
	s.prompts.set(nil)
	s.res.set(nil, nil)
	m.rebridge()
	m.promptsChanged()
	return err
}

// Login connects server name again in the background when it failed or
// was signed out, so that a declined or expired sign-in can be retried: a
// sign-in link follows as at the session's start. It returns at once.
func (m *Manager) Login(name string) error {
	s := m.server(name)
	if s == nil {
		return fmt.Errorf("no MCP server %q in this session", name)
	}
	if s.oauthHandler() == nil {
		return fmt.Errorf("MCP server %q does not sign in: only http and sse servers without an Authorization header do", name)
	}
	s.conn.mu.Lock()
	if s.conn.state != StateFailed {
		st := s.conn.state
		s.conn.mu.Unlock()
		return fmt.Errorf("MCP server %q is %s: /login only retries a server that failed or was signed out", name, st)
	}
	s.conn.state, s.conn.err = StateConnecting, nil
	s.conn.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrNotConnected
	}
	// Background: Login returns at once and no caller waits for the
	// connect; the server's lifetime (connect binds it) ends it on Close.
	m.bg.Go(func() { s.connect(context.Background(), false) })
	return nil
}

// server returns the server named name, or nil.
func (m *Manager) server(name string) *client {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.servers {
		if s.spec.Name == name {
			return s
		}
	}
	return nil
}
