package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Revoke revokes rec's refresh token, then its access token, at the
// authorization server that issued them (RFC 7009), best effort.
//
// It discovers the protected-resource metadata of rec.ServerURL at the
// well-known URLs the MCP specification lists (falling back, like go-sdk, to
// the server's origin as the authorization server), then each listed
// authorization server's metadata (go-sdk auth.GetAuthServerMetadata), and uses
// the revocation_endpoint of the one whose token_endpoint is rec.TokenURL: a
// token is never sent to another server. It POSTs token=…&token_type_hint=…
// with the client's authentication per rec.AuthStyle (HTTP Basic when the
// client has a secret and the style is not AuthStyleInParams; else client_id,
// and client_secret if any, in the form). Every request goes through client
// (nil is http.DefaultClient).
//
// It returns nil when the authorization server has no revocation_endpoint
// (nothing to do), and an error naming the server when no listed authorization
// server has rec.TokenURL or a revocation fails; no error text holds a token or
// the client secret. Deleting rec from its [Store] is the caller's job.
func Revoke(ctx context.Context, client *http.Client, rec *Record) error {
	if client == nil {
		client = http.DefaultClient
	}
	if rec == nil || rec.Token == nil {
		return nil
	}
	endpoint, err := revocationEndpoint(ctx, client, rec)
	if err != nil || endpoint == "" {
		return err
	}
	var errs []error
	for _, t := range []struct{ token, hint string }{
		{rec.Token.RefreshToken, "refresh_token"},
		{rec.Token.AccessToken, "access_token"},
	} {
		if t.token == "" {
			continue
		}
		if err := revokeOne(ctx, client, endpoint, rec, t.token, t.hint); err != nil {
			errs = append(errs, redact(fmt.Sprintf("signin: revoking the %s of %s at %s", t.hint, rec.ServerURL, endpoint), err, rec.secrets()...))
		}
	}
	return errors.Join(errs...)
}

// revocationEndpoint discovers the revocation endpoint of rec's authorization
// server ("" if it has none).
func revocationEndpoint(ctx context.Context, client *http.Client, rec *Record) (string, error) {
	issuers := authServers(ctx, client, rec.ServerURL)
	var errs []error
	for _, issuer := range issuers {
		asm, err := auth.GetAuthServerMetadata(ctx, issuer, client)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if asm == nil {
			// No metadata: go-sdk falls back to issuer+"/token" and knows of
			// no revocation endpoint.
			if issuer+"/token" == rec.TokenURL {
				return "", nil
			}
			continue
		}
		if asm.TokenEndpoint == rec.TokenURL {
			return asm.RevocationEndpoint, nil
		}
	}
	err := fmt.Errorf("signin: tokens of %s not revoked: none of its authorization servers %q has the token endpoint %s", rec.ServerURL, issuers, rec.TokenURL)
	if len(errs) > 0 {
		err = fmt.Errorf("%w (discovery: %w)", err, errors.Join(errs...))
	}
	return "", err
}

// authServers returns the authorization servers the protected-resource
// metadata of serverURL lists, looked up where the MCP specification says
// (2025-11-25, "Protected Resource Metadata Discovery Requirements"), or the
// server's origin when it has none (2025-03-26 fallback), as go-sdk's auth does.
func authServers(ctx context.Context, client *http.Client, serverURL string) []string {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil
	}
	atPath, atRoot := *u, *u
	atPath.RawQuery, atRoot.RawQuery = "", ""
	atPath.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")
	atPath.RawPath = ""
	atRoot.Path, atRoot.RawPath = "/.well-known/oauth-protected-resource", ""
	root := *u
	root.Path, root.RawPath, root.RawQuery, root.Fragment = "", "", "", ""
	for _, try := range []struct{ metadata, resource string }{
		{atPath.String(), serverURL},
		{atRoot.String(), root.String()},
	} {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, try.metadata, try.resource, client)
		if err == nil && prm != nil && len(prm.AuthorizationServers) > 0 {
			return prm.AuthorizationServers
		}
	}
	return []string{root.String()}
}

// maxRevocationResponse bounds how much of a revocation response is read.
const maxRevocationResponse = 64 << 10

// revokeOne POSTs one token to the revocation endpoint (RFC 7009 section 2.1).
func revokeOne(ctx context.Context, client *http.Client, endpoint string, rec *Record, token, hint string) error {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	basic := rec.ClientSecret != "" && rec.AuthStyle != oauth2.AuthStyleInParams
	if !basic {
		form.Set("client_id", rec.ClientID)
		if rec.ClientSecret != "" {
			form.Set("client_secret", rec.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(withKind(ctx, kindRevocation), http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		// RFC 6749 section 2.3.1: the client ID and secret are form-encoded first.
		req.SetBasicAuth(url.QueryEscape(rec.ClientID), url.QueryEscape(rec.ClientSecret))
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxRevocationResponse))
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var e struct {
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return fmt.Errorf("%s: %s %s", resp.Status, e.Error, e.ErrorDescription)
	}
	return fmt.Errorf("%s", resp.Status)
}
