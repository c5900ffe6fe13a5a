package signin

// The guard around the OAuth client: refusals of the URL policy named by
// server and endpoint, and the endpoints an authorization server advertises
// vetted before go-sdk's flow uses them.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
)

// What a sign-in URL is, in EndpointError.Kind.
const (
	kindResourceMetadata = "protected resource metadata"
	kindAuthMetadata     = "authorization server metadata"
	kindRegistration     = "client registration endpoint"
	kindToken            = "token endpoint"
	kindRevocation       = "revocation endpoint"
	kindAuthorization    = "authorization endpoint"
)

// kindKey is the context key of withKind.
type kindKey struct{}

// withKind marks the requests made with ctx as going to an endpoint of
// kind, where their shape does not tell (a revocation is a form POST like
// a token request).
func withKind(ctx context.Context, kind string) context.Context {
	return context.WithValue(ctx, kindKey{}, kind)
}

// requestKind says what an OAuth request is for: the kind its context
// carries, else what its path and body type tell (go-sdk and x/oauth2 make
// the requests), else "".
func requestKind(req *http.Request) string {
	if k, ok := req.Context().Value(kindKey{}).(string); ok {
		return k
	}
	p := req.URL.Path
	switch {
	case strings.Contains(p, "/.well-known/oauth-protected-resource"):
		return kindResourceMetadata
	case strings.Contains(p, "/.well-known/oauth-authorization-server"), strings.Contains(p, "/.well-known/openid-configuration"):
		return kindAuthMetadata
	case req.Method != http.MethodPost:
		return ""
	}
	switch mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); mt {
	case "application/json": // RFC 7591 section 3.1
		return kindRegistration
	case "application/x-www-form-urlencoded": // RFC 6749 sections 4.1.3 and 6
		return kindToken
	}
	return ""
}

// bareURL is raw without userinfo, query and fragment, for messages.
func bareURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return urlpolicy.RedactURL(raw)
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// guard wraps the OAuth client of one server: a refusal of the URL policy
// becomes an *EndpointError naming the server, the kind of URL and the
// rule, and is passed to record (if non-nil); and, with urls, the
// endpoints in authorization server metadata are checked when it arrives,
// before go-sdk registers a client or shows the user a link.
type guard struct {
	server string
	urls   *urlpolicy.SignInPolicy // nil: no metadata checks
	record func(*EndpointError)
}

// client returns c guarded. Its CheckRedirect is c's, with refusals
// named; nil stays nil, so that go-sdk keeps its own redirect checks.
func (g *guard) client(c *http.Client) *http.Client {
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out := &http.Client{Transport: &guardTransport{g: g, base: base}, Jar: c.Jar, Timeout: c.Timeout}
	if check := c.CheckRedirect; check != nil {
		out.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			err := check(req, via)
			if err == nil {
				return nil
			}
			kind := "redirect"
			if k := requestKind(via[0]); k != "" {
				kind = k + " redirect"
			}
			return g.refused(kind, req.URL.String(), err)
		}
	}
	return out
}

// refused returns err as an *EndpointError about the URL raw of kind, if
// err is a refusal of the URL policy, else err.
func (g *guard) refused(kind, raw string, err error) error {
	var pe *urlpolicy.Error
	if !errors.As(err, &pe) {
		return err
	}
	ee := &EndpointError{Server: g.server, Kind: kind, URL: bareURL(raw), Rule: pe.Rule, Err: pe}
	if g.record != nil {
		g.record(ee)
	}
	return ee
}

// maxMetadata bounds how much of an authorization server's metadata is
// read, as go-sdk does.
const maxMetadata = 1 << 20

// checkMetadata applies the URL policy to the endpoints advertised in the
// authorization server metadata resp carries, leaving its body to be read
// again. Metadata that does not decode is left to go-sdk to refuse.
func (g *guard) checkMetadata(ctx context.Context, resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
	if err != nil {
		return nil // go-sdk reports the read error
	}
	var meta struct {
		Authorization string `json:"authorization_endpoint"`
		Token         string `json:"token_endpoint"`
		Registration  string `json:"registration_endpoint"`
		Revocation    string `json:"revocation_endpoint"`
	}
	if json.Unmarshal(body, &meta) != nil {
		return nil
	}
	for _, e := range []struct{ kind, url string }{
		{kindRegistration, meta.Registration},
		{kindToken, meta.Token},
		{kindRevocation, meta.Revocation},
	} {
		if e.url == "" {
			continue
		}
		if _, err := g.urls.CheckURL(ctx, e.url); err != nil {
			return g.refused(e.kind, e.url, err)
		}
	}
	if meta.Authorization != "" {
		if err := g.urls.CheckLink(meta.Authorization); err != nil {
			return g.refused(kindAuthorization, meta.Authorization, err)
		}
	}
	return nil
}

// guardTransport is the RoundTripper of a guarded client.
type guardTransport struct {
	g    *guard
	base http.RoundTripper
}

func (t *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	kind := requestKind(req)
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, t.g.refused(kind, req.URL.String(), err)
	}
	if t.g.urls != nil && kind == kindAuthMetadata && resp.StatusCode == http.StatusOK {
		if err := t.g.checkMetadata(req.Context(), resp); err != nil {
			_ = resp.Body.Close()
			return nil, err
		}
	}
	return resp, nil
}

// CloseIdleConnections closes the idle connections of the base transport.
func (t *guardTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
