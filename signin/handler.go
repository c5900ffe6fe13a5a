package signin

import (
	"context"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// DefaultTimeout is how long a sign-in waits for the user when
// Config.Timeout is zero.
const DefaultTimeout = 10 * time.Minute

// CallbackPath is the path of the loopback redirect URI,
// http://127.0.0.1:<ephemeral port>/callback.
const CallbackPath = "/callback"

// ErrDeclined is wrapped by the error of a sign-in the user declined or
// dismissed (Config.Prompt returned an error).
var ErrDeclined = errors.New("sign-in declined")

// ErrTimeout is wrapped by the error of a sign-in the user did not complete
// within Config.Timeout.
var ErrTimeout = errors.New("sign-in not completed in time")

// Client is a client registration the user configured for one server (a
// pre-registered OAuth client: config servers.<name>.oauth).
type Client struct {
	// ID is the client_id; empty means none is configured.
	ID string
	// Secret is the client_secret, empty for a public client. It comes from
	// an environment variable and is never stored.
	Secret string
	// Scopes, if set, are requested instead of the scopes the server
	// advertises.
	Scopes []string
	// Issuer, if set, is the only authorization server (its issuer
	// identifier) the client is used with: a server that leads elsewhere is
	// refused rather than sent the credentials.
	Issuer string
}

// Config configures the Handler of one MCP server.
type Config struct {
	// Server names the server in messages and logs.
	Server string
	// ServerURL is the MCP server's URL, the key of its tokens in Store. It
	// must carry no secret (no userinfo, no query credentials).
	ServerURL string
	// Store keeps the tokens; it must not be nil.
	Store Store
	// URLs is the URL policy of the server's sign-in
	// (urlpolicy.Policy.SignIn of ServerURL). With it, every OAuth request
	// and redirect (metadata discovery, client registration, token
	// exchange, refresh and revocation) goes only where the policy lets the
	// server lead the agent, the endpoints the authorization server
	// advertises are checked as its metadata arrives, and the sign-in link
	// is checked before the user sees it; a refusal ends the sign-in with
	// an *EndpointError. Nil means no policy (tests): go-sdk's own checks
	// only.
	URLs *urlpolicy.SignInPolicy
	// HTTPClient makes every OAuth request. Nil means URLs.HTTPClient(),
	// or http.DefaultClient without URLs.
	HTTPClient *http.Client
	// Client is the pre-registered client, if any; ClientIDMetadataURL is
	// the Client ID Metadata Document URL (an https URL with a path), if
	// any; dynamic client registration is always offered last. The go-sdk
	// picks the first the authorization server supports, in the spec's
	// order (auth.AuthorizationCodeHandlerConfig).
	Client              Client
	ClientIDMetadataURL string
	// ClientName is the client_name of a dynamic registration. Empty means
	// "acp-agent".
	ClientName string
	// Prompt shows the user the authorization URL (an ACP URL elicitation,
	// or a message with the link). It may return at once or block until ctx
	// ends (the sign-in finished or was abandoned); an error means the user
	// declined, and ends the sign-in with ErrDeclined. Nil means nobody is
	// told: the link is only in Waiting's argument.
	Prompt func(ctx context.Context, authURL string) error
	// Waiting, if non-nil, is called when the sign-in starts waiting for the
	// user, with the authorization URL; the function it returns is called
	// when the wait ends, however it ends. The bridge uses it to report the
	// server as needing sign-in and to pause its connect deadline.
	Waiting func(authURL string) (done func())
	// Timeout bounds the wait for the user. Zero means DefaultTimeout.
	Timeout time.Duration
	// Logger receives the handler's logs; never a token. Nil discards them.
	Logger *slog.Logger
}

// Handler is the auth.OAuthHandler of one MCP server: it sends the stored
// token of the server and, when the server answers 401 (or 403
// insufficient_scope), signs the user in with the go-sdk's authorization
// code flow (auth.AuthorizationCodeHandler: metadata discovery, PKCE,
// resource indicators, scope selection and step-up, iss checks) through a
// loopback redirect listener that lives only for the sign-in. New tokens
// are saved in Config.Store and refreshed through NewTokenSource. With
// Config.URLs, the URL policy of the server's sign-in, every OAuth request
// goes only where that policy allows: a server not on loopback cannot lead
// the agent to loopback (nor to a private network unless it is on one),
// whatever its metadata, endpoints or redirects say.
//
// One sign-in runs at a time per Handler; a request that needs one while
// another runs waits for it and reuses its token. Its methods are safe for
// concurrent use.
type Handler struct {
	cfg Config
	log *slog.Logger
	// client makes the OAuth requests outside a sign-in (refresh,
	// revocation): Config.HTTPClient, guarded when Config.URLs is set.
	client *http.Client

	authorize sync.Mutex // one sign-in at a time

	mu     sync.Mutex
	loaded bool               // Store was read for a stored grant
	ts     oauth2.TokenSource // the grant in use, or nil
	gen    int                // bumped by every successful sign-in
	scopes []string           // scopes of the grant in use, for step-up
}

var _ auth.OAuthHandler = (*Handler)(nil)

// New returns the Handler of one server. It never fails: an invalid
// pre-registered client is reported by the first sign-in.
func New(cfg Config) *Handler {
	switch {
	case cfg.HTTPClient != nil:
	case cfg.URLs != nil:
		cfg.HTTPClient = cfg.URLs.HTTPClient()
	default:
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.ClientName == "" {
		cfg.ClientName = "acp-agent"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{cfg: cfg, log: log}
	h.client = h.guarded(nil)
	return h
}

// guarded returns Config.HTTPClient as is without Config.URLs (so that
// go-sdk keeps its own checks of a plain client), else guarded: refusals
// become *EndpointError values, passed to record if non-nil.
func (h *Handler) guarded(record func(*EndpointError)) *http.Client {
	if h.cfg.URLs == nil {
		return h.cfg.HTTPClient
	}
	g := &guard{server: h.cfg.Server, urls: h.cfg.URLs, record: record}
	return g.client(h.cfg.HTTPClient)
}

// TokenSource implements auth.OAuthHandler: the grant signed in by this
// Handler, else the one stored for the server URL (from an earlier session
// or another agent process), else nil (no Authorization header).
func (h *Handler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ts != nil || h.loaded {
		return h.ts, nil
	}
	h.loaded = true
	rec, err := h.cfg.Store.Latest(ctx, h.cfg.ServerURL)
	if err != nil {
		h.log.Warn("reading the stored sign-in failed; signing in again if the server asks", "err", err)
		return nil, nil
	}
	if rec == nil || rec.Token == nil {
		return nil, nil
	}
	if h.cfg.Client.ID != "" && rec.ClientID == h.cfg.Client.ID {
		rec.ClientSecret = h.cfg.Client.Secret // never stored
	}
	h.ts, h.scopes = NewTokenSource(h.cfg.Store, h.client, rec), rec.Scopes
	return h.ts, nil
}

// Authorize implements auth.OAuthHandler: it runs one sign-in for the
// request the server refused (resp, whose body it closes), unless another
// sign-in finished while this one waited its turn. Errors name the server
// and never hold a token; a URL the URL policy refused ends the sign-in
// with an *EndpointError.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	h.mu.Lock()
	gen := h.gen
	h.mu.Unlock()
	h.authorize.Lock()
	defer h.authorize.Unlock()
	h.mu.Lock()
	fresh := h.gen != gen
	h.mu.Unlock()
	if fresh { // signed in while we waited: retry with that token
		_ = resp.Body.Close()
		return nil
	}
	// Another session or agent process may have signed in since this
	// handler last read the store: a stored token other than the one the
	// server refused is tried first.
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	since := time.Now() // a grant saved from here on is one this sign-in may end for
	if h.adopt(ctx, sent) {
		_ = resp.Body.Close()
		h.log.Info("using the sign-in of another session")
		return nil
	}
	err := h.signIn(ctx, req, resp, func() bool { return h.savedSince(ctx, since, sent) })
	if errors.Is(err, errElsewhere) && h.adopt(ctx, sent) {
		h.log.Info("signed in to the MCP server in another session")
		return nil
	}
	var refused *EndpointError
	if errors.As(err, &refused) {
		return err // it names the server
	}
	if err != nil {
		return fmt.Errorf("signing in to MCP server %q: %w", h.cfg.Server, err)
	}
	return nil
}

// errElsewhere ends a sign-in whose server got a grant meanwhile from
// another Handler (another session, or another agent process).
var errElsewhere = errors.New("signed in elsewhere")

// storePoll is how often a sign-in waiting for the user looks for a grant
// saved meanwhile by another session or process.
const storePoll = 2 * time.Second

// adopt makes the stored grant of the server the one in use, unless there
// is none or its access token is refused (the one the server refused).
func (h *Handler) adopt(ctx context.Context, refused string) bool {
	rec, err := h.cfg.Store.Latest(ctx, h.cfg.ServerURL)
	if err != nil || rec == nil || rec.Token == nil || rec.Token.AccessToken == refused {
		return false
	}
	if h.cfg.Client.ID != "" && rec.ClientID == h.cfg.Client.ID {
		rec.ClientSecret = h.cfg.Client.Secret
	}
	h.mu.Lock()
	h.ts, h.scopes, h.loaded = NewTokenSource(h.cfg.Store, h.client, rec), rec.Scopes, true
	h.gen++
	h.mu.Unlock()
	return true
}

// savedSince reports whether a grant of the server other than the refused
// one was saved at or after t.
func (h *Handler) savedSince(ctx context.Context, t time.Time, refused string) bool {
	rec, err := h.cfg.Store.Latest(ctx, h.cfg.ServerURL)
	return err == nil && rec != nil && rec.Token != nil && rec.Token.AccessToken != refused && !rec.Saved.Before(t)
}

// signIn runs the authorization code flow for the refused request; it ends
// with errElsewhere once elsewhere reports another Handler's grant. When
// the URL policy refused a URL the flow needed, it returns that
// *EndpointError: go-sdk gives up at the first refusal of any URL but a
// protected resource metadata one (it then tries the next), but does not
// always keep the error's type.
func (h *Handler) signIn(ctx context.Context, req *http.Request, resp *http.Response, elsewhere func() bool) error {
	var fatal atomic.Pointer[EndpointError]
	client := h.guarded(func(e *EndpointError) {
		if strings.HasPrefix(e.Kind, kindResourceMetadata) { // its redirects too
			h.log.Info("the URL policy refused a protected resource metadata URL; trying the next", "err", e)
			return
		}
		fatal.CompareAndSwap(nil, e)
	})
	if err := h.authorizationCode(ctx, client, req, resp, elsewhere); err != nil {
		var refused *EndpointError
		if !errors.As(err, &refused) {
			refused = fatal.Load()
		}
		if refused != nil {
			return refused
		}
		return err
	}
	h.mu.Lock()
	h.gen++
	h.loaded = true
	h.mu.Unlock()
	h.log.Info("signed in to the MCP server")
	return nil
}

// authorizationCode runs go-sdk's authorization code flow with client.
func (h *Handler) authorizationCode(ctx context.Context, client *http.Client, req *http.Request, resp *http.Response, elsewhere func() bool) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = resp.Body.Close()
		return fmt.Errorf("opening the loopback redirect listener: %w", err)
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + CallbackPath

	h.mu.Lock()
	granted := slices.Clone(h.scopes)
	h.mu.Unlock()
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return h.fetch(ctx, ln, args, elsewhere)
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:  []string{redirect},
			ClientName:    h.cfg.ClientName,
			GrantTypes:    []string{"authorization_code", "refresh_token"},
			ResponseTypes: []string{"code"},
		}},
		// Scopes the server asks for (or the configured ones), plus those
		// granted before: a step-up keeps what was granted (SEP-2350).
		ScopeFilter: func(discovered []string) []string {
			if len(h.cfg.Client.Scopes) > 0 {
				discovered = h.cfg.Client.Scopes
			}
			out := slices.Clone(granted)
			for _, s := range discovered {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
			return out
		},
		RequestRefreshToken: true,
		Client:              client,
		NewTokenSource: func(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			return h.save(ctx, oc, tok), nil
		},
	}
	if h.cfg.Client.ID != "" {
		cc := &oauthex.ClientCredentials{ClientID: h.cfg.Client.ID, Issuer: h.cfg.Client.Issuer}
		if h.cfg.Client.Secret != "" {
			cc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: h.cfg.Client.Secret}
		}
		cfg.PreregisteredClient = cc
	}
	if h.cfg.ClientIDMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.cfg.ClientIDMetadataURL}
	}
	flow, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		_ = resp.Body.Close()
		return err
	}
	return flow.Authorize(ctx, req, resp)
}

// save stores the grant of a finished sign-in and makes it the one in use.
// A store that fails costs persistence only: the grant is used anyway.
func (h *Handler) save(ctx context.Context, oc *oauth2.Config, tok *oauth2.Token) oauth2.TokenSource {
	rec := &Record{
		ServerURL: h.cfg.ServerURL,
		TokenURL:  oc.Endpoint.TokenURL,
		AuthURL:   oc.Endpoint.AuthURL,
		ClientID:  oc.ClientID,
		AuthStyle: oc.Endpoint.AuthStyle,
		Scopes:    slices.Clone(oc.Scopes),
		Token:     tok,
		Saved:     time.Now(),
	}
	if oc.ClientID != h.cfg.Client.ID { // a dynamically registered client's own secret
		rec.ClientSecret = oc.ClientSecret
	}
	if err := h.cfg.Store.Save(ctx, rec); err != nil {
		h.log.Warn("storing the sign-in failed; it lasts until the agent exits", "err", err)
	}
	use := *rec
	use.ClientSecret = oc.ClientSecret
	ts := NewTokenSource(h.cfg.Store, h.client, &use)
	h.mu.Lock()
	h.ts, h.scopes = ts, rec.Scopes
	h.mu.Unlock()
	return ts
}

// callbackDrain bounds how long the loopback listener waits, after the
// sign-in, for its callback page to be written.
const callbackDrain = 5 * time.Second

// callback is what the authorization server's redirect brought back.
type callback struct {
	res *auth.AuthorizationResult
	err error
}

// fetch is the AuthorizationCodeFetcher: it serves the loopback redirect on
// ln, shows the user the authorization URL, and waits for the redirect (its
// state must be the one of args.URL; others are answered 400 and ignored),
// the user declining, Config.Timeout, ctx, or elsewhere reporting a grant
// saved by another Handler meanwhile.
func (h *Handler) fetch(ctx context.Context, ln net.Listener, args *auth.AuthorizationArgs, elsewhere func() bool) (*auth.AuthorizationResult, error) {
	au, err := url.Parse(args.URL)
	if err != nil {
		return nil, fmt.Errorf("the authorization URL: %w", err)
	}
	if h.cfg.URLs != nil {
		if err := h.cfg.URLs.CheckLink(args.URL); err != nil {
			g := &guard{server: h.cfg.Server}
			return nil, g.refused(kindAuthorization, args.URL, err)
		}
	}
	state := au.Query().Get("state")
	got := make(chan callback, 1)
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.serveCallback(w, r, state, got) }),
		ReadHeaderTimeout: 10 * time.Second,
	}
	var served sync.WaitGroup
	served.Go(func() { _ = srv.Serve(ln) })
	defer func() {
		// Let the callback page reach the browser, then close for good.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callbackDrain)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
		served.Wait()
	}()

	if h.cfg.Waiting != nil {
		done := h.cfg.Waiting(args.URL)
		defer done()
	}
	pctx, stopPrompt := context.WithCancel(ctx)
	prompted := make(chan error, 1)
	var prompting sync.WaitGroup
	if h.cfg.Prompt != nil {
		prompting.Go(func() { prompted <- h.cfg.Prompt(pctx, args.URL) })
	}
	defer func() {
		stopPrompt()
		prompting.Wait()
	}()
	h.log.Info("waiting for the user to sign in", "timeout", h.cfg.Timeout)

	timer := time.NewTimer(h.cfg.Timeout)
	defer timer.Stop()
	// Another session or agent process may sign in to the same server
	// meanwhile: then this sign-in ends and uses that grant.
	poll := time.NewTicker(storePoll)
	defer poll.Stop()
	for {
		select {
		case cb := <-got:
			return cb.res, cb.err
		case err := <-prompted:
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrDeclined, err)
			}
		case <-poll.C:
			if elsewhere() {
				return nil, errElsewhere
			}
		case <-timer.C:
			return nil, fmt.Errorf("%w: no answer within %s", ErrTimeout, h.cfg.Timeout)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// serveCallback answers the redirect to the loopback listener: the first
// one with the expected state ends the wait (with the code, or the
// authorization server's error); anything else is refused.
func (h *Handler) serveCallback(w http.ResponseWriter, r *http.Request, state string, got chan<- callback) {
	q := r.URL.Query()
	if r.URL.Path != CallbackPath || r.Method != http.MethodGet || q.Get("state") != state {
		http.Error(w, "not a sign-in redirect of this agent", http.StatusBadRequest)
		return
	}
	var cb callback
	if e := q.Get("error"); e != "" {
		msg := e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		cb.err = fmt.Errorf("the authorization server refused: %s", msg)
	} else if q.Get("code") == "" {
		cb.err = errors.New("the redirect carried no authorization code")
	} else {
		cb.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	}
	select {
	case got <- cb:
	default: // a second redirect: the first one counts
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	title := "Signed in"
	body := fmt.Sprintf("Signed in to MCP server %q. You can close this tab and go back to your editor.", h.cfg.Server)
	if cb.err != nil {
		w.WriteHeader(http.StatusBadRequest)
		title = "Sign-in failed"
		body = fmt.Sprintf("Signing in to MCP server %q failed: %v", h.cfg.Server, cb.err)
	}
	fmt.Fprintf(w, "<!doctype html><title>%s</title><p>%s</p>\n", html.EscapeString(title), html.EscapeString(body))
}

// Logout forgets the server's grants: they are deleted from the store and
// revoked at their authorization servers (RFC 7009, best effort: a failed
// revocation is returned after the local tokens are gone). The next request
// to the server is sent without a token.
func (h *Handler) Logout(ctx context.Context) error {
	h.authorize.Lock()
	defer h.authorize.Unlock()
	h.mu.Lock()
	h.ts, h.scopes, h.loaded = nil, nil, true
	h.gen++
	h.mu.Unlock()
	recs, err := h.cfg.Store.Delete(ctx, h.cfg.ServerURL)
	if err != nil {
		return fmt.Errorf("deleting the stored sign-in of MCP server %q: %w", h.cfg.Server, err)
	}
	var errs []error
	for _, rec := range recs {
		if h.cfg.Client.ID != "" && rec.ClientID == h.cfg.Client.ID {
			rec.ClientSecret = h.cfg.Client.Secret
		}
		if err := Revoke(ctx, h.client, rec); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the tokens of MCP server %q are deleted, but revoking them failed: %w", h.cfg.Server, err)
	}
	return nil
}
