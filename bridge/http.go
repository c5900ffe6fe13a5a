package bridge

import (
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpTransport returns the Streamable HTTP or legacy SSE transport of the
// server. The URL must pass the sandbox URL policy, and every connection the
// transport makes goes through the policy's dialer and redirect check. The
// entry's headers are sent on every request.
func (s *server) httpTransport() (mcp.Transport, error) {
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
	switch s.spec.Transport {
	case TransportHTTP:
		// One reconnect attempt for a broken standalone stream; an expired
		// session (404) is handled by the bridge, with a fresh initialize.
		return &mcp.StreamableClientTransport{Endpoint: u.String(), HTTPClient: client, MaxRetries: 1}, nil
	case TransportSSE:
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
