package oauthtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Ready is the JSON line the testfixtures/oauthserver command prints on
// stdout once it serves, such as
//
//	{"url":"http://127.0.0.1:41000/mcp","issuer":"http://127.0.0.1:41000","control":"http://127.0.0.1:41001"}
type Ready struct {
	URL     string `json:"url"`     // the MCP endpoint, [Server.URL]
	Issuer  string `json:"issuer"`  // [Server.Issuer]
	Control string `json:"control"` // base URL of [Server.ControlHandler], for [Control]
}

// ControlHandler serves, for tests in another process, on a listener of
// their own (never the MCP one):
//
//	GET  /_counts      [Server.Counts] as JSON
//	GET  /_tokens      [Server.Tokens] as a JSON array
//	POST /_revoke_all  [Server.RevokeAll]; answers 204
func (s *Server) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_counts", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Counts())
	})
	mux.HandleFunc("GET /_tokens", func(w http.ResponseWriter, _ *http.Request) {
		toks := s.Tokens()
		if toks == nil {
			toks = []string{}
		}
		writeJSON(w, http.StatusOK, toks)
	})
	mux.HandleFunc("POST /_revoke_all", func(w http.ResponseWriter, _ *http.Request) {
		s.RevokeAll()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// Control is the client of a [Server.ControlHandler] at Base (Ready.Control),
// so a test can read the counters of a server running in another process.
// Its methods use http.DefaultClient and are safe for concurrent use.
type Control struct {
	Base string
}

// Counts fetches the server's [Counts].
func (c Control) Counts(ctx context.Context) (Counts, error) {
	var n Counts
	err := c.do(ctx, http.MethodGet, "/_counts", &n)
	return n, err
}

// Tokens fetches every token the server issued ([Server.Tokens]).
func (c Control) Tokens(ctx context.Context) ([]string, error) {
	var toks []string
	err := c.do(ctx, http.MethodGet, "/_tokens", &toks)
	return toks, err
}

// RevokeAll invalidates every token on the server ([Server.RevokeAll]).
func (c Control) RevokeAll(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/_revoke_all", nil)
}

func (c Control) do(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.Base, "/")+path, nil)
	if err != nil {
		return fmt.Errorf("oauthtest control %s: %w", path, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("oauthtest control %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("oauthtest control %s: %s: %s", path, resp.Status, body)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("oauthtest control %s: decoding the answer: %w", path, err)
	}
	return nil
}
