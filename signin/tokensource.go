package signin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// RefreshMargin is how long before its expiry a token is refreshed. A token
// issued for less than twice this long is refreshed at half its lifetime.
const RefreshMargin = 60 * time.Second

// refreshTimeout bounds one refresh: waiting for the record's lock (another
// process may be refreshing) plus the token request.
const refreshTimeout = 30 * time.Second

// NewTokenSource returns the token source the MCP transport uses for rec (go-sdk
// auth.AuthorizationCodeHandlerConfig's NewTokenSource/InitialTokenSource).
//
// Token returns the access token while it has more than [RefreshMargin] left
// (or has no expiry), without a request. Otherwise it refreshes it, one refresh
// at a time per record: inside st.Update (which locks the record across
// goroutines and, for a [FileStore], across processes) it re-reads the record
// and adopts a token another session or process refreshed meanwhile; only if
// none did does it ask the token endpoint, through golang.org/x/oauth2 and
// client (which carries the sandbox URL policy; nil is http.DefaultClient), and
// save the new token, keeping the old refresh token when the response has none.
//
// When there is no refresh token, the record was deleted (sign-out), or the
// authorization server answers invalid_grant, the record is deleted and Token
// returns an error for which errors.As finds an *[oauth2.RetrieveError] with
// ErrorCode "invalid_grant": go-sdk then sends the request without an
// Authorization header and the server's 401 starts a new sign-in. When a
// refresh fails otherwise (network, 5xx) while the current token has not
// expired yet, Token returns the current token and the next call tries again;
// after expiry it returns the error. No error text contains a token or the
// client secret. Token is safe for concurrent use.
func NewTokenSource(st Store, client *http.Client, rec *Record) oauth2.TokenSource {
	if client == nil {
		client = http.DefaultClient
	}
	return &tokenSource{st: st, client: client, k: rec.key(), rec: rec.clone(), now: time.Now}
}

type tokenSource struct {
	st     Store
	client *http.Client
	k      key
	now    func() time.Time

	mu  sync.Mutex
	rec *Record // the latest record known; nil after it was deleted; guarded by mu
}

// fresh reports whether rec's access token can be used at now without a
// refresh.
func fresh(rec *Record, now time.Time) bool {
	if rec == nil || rec.Token == nil || rec.Token.AccessToken == "" {
		return false
	}
	exp := rec.Token.Expiry
	if exp.IsZero() {
		return true
	}
	margin := RefreshMargin
	if !rec.Saved.IsZero() && exp.After(rec.Saved) {
		margin = min(margin, exp.Sub(rec.Saved)/2)
	}
	return exp.Sub(now) > margin
}

// Token implements [oauth2.TokenSource].
func (ts *tokenSource) Token() (*oauth2.Token, error) {
	ts.mu.Lock()
	rec := ts.rec
	ts.mu.Unlock()
	if fresh(rec, ts.now()) {
		return copyToken(rec.Token), nil
	}

	// oauth2.TokenSource's Token takes no context, and go-sdk calls it for
	// each request: this refresh is its own root, bounded by refreshTimeout.
	ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
	defer cancel()
	var gone error // set when the grant is unusable and was deleted
	stored, err := ts.st.Update(ctx, ts.k.server, ts.k.token, func(cur *Record) (*Record, error) {
		switch {
		case cur == nil:
			gone = signedOut(ts.k.server, "it was signed out")
			return nil, nil
		case fresh(cur, ts.now()):
			return nil, nil // refreshed by another session or process meanwhile
		case cur.Token.RefreshToken == "":
			gone = signedOut(ts.k.server, "the access token expired and there is no refresh token")
			return nil, ErrDeleteRecord
		}
		tok, err := ts.refresh(ctx, cur)
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			gone = redact(fmt.Sprintf("signin: the authorization server of %s refused the refresh token", ts.k.server), re, cur.secrets()...)
			return nil, ErrDeleteRecord
		}
		if err != nil {
			return nil, redact(fmt.Sprintf("signin: refreshing the token of %s at %s", ts.k.server, ts.k.token), err, cur.secrets()...)
		}
		next := cur.clone()
		next.Token = tok
		return next, nil
	})
	switch {
	case gone != nil:
		ts.mu.Lock()
		ts.rec = nil
		ts.mu.Unlock()
		return nil, gone
	case err != nil:
		if rec != nil && rec.Token != nil && rec.Token.AccessToken != "" && (rec.Token.Expiry.IsZero() || ts.now().Before(rec.Token.Expiry)) {
			return copyToken(rec.Token), nil // still valid: retry the refresh on the next call
		}
		return nil, err
	case stored == nil: // cannot happen: Update keeps or replaces the record
		return nil, signedOut(ts.k.server, "it was signed out")
	}
	ts.mu.Lock()
	ts.rec = stored
	ts.mu.Unlock()
	return copyToken(stored.Token), nil
}

// refresh asks cur's token endpoint for a new token with cur's refresh token
// (x/oauth2 does the request) and keeps the old refresh token when the
// response has none.
func (ts *tokenSource) refresh(ctx context.Context, cur *Record) (*oauth2.Token, error) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, ts.client)
	// An access-less token makes x/oauth2 refresh at once.
	tok, err := cur.Config().TokenSource(ctx, &oauth2.Token{RefreshToken: cur.Token.RefreshToken}).Token()
	if err != nil {
		return nil, err
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = cur.Token.RefreshToken
	}
	return tok, nil
}

func copyToken(t *oauth2.Token) *oauth2.Token {
	c := *t
	return &c
}
