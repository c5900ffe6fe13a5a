package signin

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"golang.org/x/oauth2"
)

// Record is one grant: the tokens one MCP server's authorization server issued
// to the agent. Its key is (ServerURL, TokenURL): TokenURL identifies the
// authorization server.
//
// A Record holds secrets (tokens, a client secret): it prints (String,
// GoString) and logs (LogValue) without them, and its JSON form is only ever
// written to a [Store].
type Record struct {
	// ServerURL is the MCP server URL as configured, stored as given (the
	// caller passes a URL without query secrets).
	ServerURL string `json:"serverUrl"`
	// TokenURL is the authorization server's token endpoint.
	TokenURL string `json:"tokenUrl"`
	// AuthURL is the authorization server's authorization endpoint.
	AuthURL string `json:"authUrl,omitempty"`
	// ClientID is the OAuth client ID the tokens were issued to.
	ClientID string `json:"clientId"`
	// ClientSecret is set only for a dynamically registered confidential client.
	ClientSecret string `json:"clientSecret,omitempty"`
	// AuthStyle is how the client authenticates at the token (and revocation)
	// endpoint; zero is auto-detect.
	AuthStyle oauth2.AuthStyle `json:"authStyle,omitempty"`
	// Scopes are the scopes that were requested.
	Scopes []string `json:"scopes,omitempty"`
	// Token is the access token, its type, the refresh token and the expiry.
	Token *oauth2.Token `json:"token"`
	// Saved is when the record was last stored; stores set it.
	Saved time.Time `json:"saved"`
}

// Config returns the OAuth client configuration of r: client ID and secret,
// the endpoints with r.AuthStyle, and the scopes. It has no RedirectURL (a
// refresh needs none).
func (r *Record) Config() *oauth2.Config {
	return &oauth2.Config{
		ClientID:     r.ClientID,
		ClientSecret: r.ClientSecret,
		Endpoint: oauth2.Endpoint{
			AuthURL:   r.AuthURL,
			TokenURL:  r.TokenURL,
			AuthStyle: r.AuthStyle,
		},
		Scopes: slices.Clone(r.Scopes),
	}
}

// String describes r without secrets: server, token URL, expiry and whether it
// has a refresh token.
func (r *Record) String() string {
	if r == nil {
		return "signin.Record(nil)"
	}
	expiry, refresh := r.expiry()
	return fmt.Sprintf("signin.Record{server=%s tokenURL=%s expiry=%s refresh=%t}", r.ServerURL, r.TokenURL, expiry, refresh)
}

// GoString is String, so that %#v prints no secret either.
func (r *Record) GoString() string { return r.String() }

// LogValue implements [slog.LogValuer]: server, token URL, expiry and whether
// r has a refresh token; never a token or the client secret.
func (r *Record) LogValue() slog.Value {
	if r == nil {
		return slog.StringValue("<nil>")
	}
	expiry, refresh := r.expiry()
	return slog.GroupValue(
		slog.String("server", r.ServerURL),
		slog.String("tokenURL", r.TokenURL),
		slog.String("expiry", expiry),
		slog.Bool("refresh", refresh),
	)
}

func (r *Record) expiry() (expiry string, refresh bool) {
	expiry = "none"
	if r.Token != nil {
		if !r.Token.Expiry.IsZero() {
			expiry = r.Token.Expiry.UTC().Format(time.RFC3339)
		}
		refresh = r.Token.RefreshToken != ""
	}
	return expiry, refresh
}

// clone returns a deep copy of r (nil for nil).
func (r *Record) clone() *Record {
	if r == nil {
		return nil
	}
	c := *r
	c.Scopes = slices.Clone(r.Scopes)
	if r.Token != nil {
		t := *r.Token
		c.Token = &t
	}
	return &c
}
