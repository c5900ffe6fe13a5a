package bridge

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpTransport returns the Streamable HTTP or legacy SSE transport of the
// server. The URL must pass the sandbox URL policy, and every connection the
// transport makes goes through the policy's dialer and redirect check. The
// entry's headers are sent on every request.
func (s *client) httpTransport() (mcp.Transport, error) {
	u, err := s.opts.URLs.CheckURL(s.spec.URL)
	if err != nil {
		return nil, err
	}
	client := s.opts.URLs.HTTPClient(u)
	if len(s.spec.Headers) > 0 {
		h := make(http.Header, len(s.spec.Headers))
		for _, hd := range s.spec.Headers {
			if err := ValidateHeader(hd.Name, hd.Value); err != nil {
				return nil, err
			}
			h.Add(hd.Name, hd.Value)
		}
		client.Transport = &headerTransport{base: client.Transport, header: h}
	}
	// Sign-in (signin.go): the Streamable HTTP transport takes the handler;
	// the SSE transport gets it as a RoundTripper.
	oauth := s.oauthHandler()
	switch s.spec.Transport {
	case TransportHTTP:
		client.Transport = &sessionStatusTransport{base: client.Transport}
		// One reconnect attempt for a broken standalone stream; an expired
		// session (404) is handled by the bridge, with a fresh initialize.
		t := &mcp.StreamableClientTransport{Endpoint: u.String(), HTTPClient: client, MaxRetries: 1}
		if oauth != nil {
			t.OAuthHandler = oauth
		}
		return t, nil
	case TransportSSE:
		if oauth != nil {
			client.Transport = &oauthTransport{base: client.Transport, handler: oauth}
		}
		return &mcp.SSEClientTransport{Endpoint: u.String(), HTTPClient: client}, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupportedTransport, s.spec.Transport)
}

// headerTransport adds the entry's headers to every request.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, vs := range t.header {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	return t.base.RoundTrip(req)
}

// sessionStatusTransport makes a Streamable HTTP server's "400 Bad Request:
// No valid session ID provided" (the TypeScript SDK and supergateway, for a
// session they do not know, such as after a restart) read as the 404 the MCP
// spec asks for ("Session Management": a request with an unknown session ID
// MUST get 404), so that go-sdk reports mcp.ErrSessionMissing and the bridge
// initializes a new session (isSessionLost). Only a 400 to a request that
// carries a session ID, whose body mentions the session, is rewritten.
type sessionStatusTransport struct {
	base http.RoundTripper
}

// sessionBodyPeek is how much of a 400 body is read to look for "session".
const sessionBodyPeek = 4096

func (t *sessionStatusTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusBadRequest || req.Header.Get("Mcp-Session-Id") == "" {
		return resp, err
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, sessionBodyPeek))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	if bytes.Contains(bytes.ToLower(head), []byte("session")) {
		resp.StatusCode, resp.Status = http.StatusNotFound, "404 Not Found"
	}
	return resp, nil
}
