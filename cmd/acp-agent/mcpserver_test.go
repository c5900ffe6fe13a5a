package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMCPServerFlags_Errors(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(strongToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	weakFile, looseFile := filepath.Join(dir, "weak"), filepath.Join(dir, "loose")
	if err := os.WriteFile(weakFile, []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(looseFile, []byte(strongToken), 0o644); err != nil {
		t.Fatal(err)
	}
	emptyFile := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The gateway's variable is not the MCP endpoint's token.
	t.Setenv(tokenEnv, "gateway-secret")
	t.Setenv(mcpTokenEnv, "")
	tests := []struct {
		name string
		args []string
		want string // "" means no error
	}{
		{"stdio", nil, ""},
		{"loopback", []string{"--listen", "127.0.0.1:0"}, ""},
		{"localhost", []string{"--listen", "localhost:7777"}, ""},
		{"ipv6 loopback", []string{"--listen", "[::1]:7777"}, ""},
		{"non-loopback with a token file", []string{"--listen", "0.0.0.0:7777", "--token-file", tokenFile}, ""},
		{"no host", []string{"--listen", ":7777"}, `--listen ":7777" has no host and would bind every interface`},
		{"no port", []string{"--listen", "127.0.0.1"}, `--listen "127.0.0.1": address 127.0.0.1: missing port`},
		{"non-loopback without a token", []string{"--listen", "0.0.0.0:7777"}, `--listen "0.0.0.0:7777" is not a loopback address: set a token (--token-file or ACP_AGENT_MCP_TOKEN) first`},
		{"private address without a token", []string{"--listen", "192.168.1.5:7777"}, "is not a loopback address"},
		{"empty token file", []string{"--listen", "0.0.0.0:7777", "--token-file", emptyFile}, "--token-file " + emptyFile + " is empty"},
		{"missing token file", []string{"--listen", "127.0.0.1:0", "--token-file", filepath.Join(dir, "nope")}, "no such file"},
		{"weak token", []string{"--listen", "0.0.0.0:7777", "--token-file", weakFile}, "--token-file " + weakFile + ": the token has 1 characters (1 different): a listener's token needs at least 32"},
		{"token file others can read", []string{"--listen", "127.0.0.1:0", "--token-file", looseFile}, "is readable or writable by group or others (mode 0644)"},
		{"token file without listen", []string{"--token-file", tokenFile}, "--token-file applies only with --listen"},
		{"origins without listen", []string{"--allowed-origins", "https://a.example"}, "--allowed-origins applies only with --listen"},
		{"unknown flag", []string{"--gateway", "ws://x"}, "mcp-server: unknown flag --gateway (see acp-agent mcp-server --help)"},
		{"argument", []string{"extra"}, `mcp-server: unexpected argument "extra"`},
		{"origin with a port", []string{"--listen", "127.0.0.1:0", "--allowed-origins", "http://localhost:3000,https://ide.example"}, ""},
		{"origin without a scheme", []string{"--listen", "127.0.0.1:0", "--allowed-origins", "ide.example"}, `--allowed-origins: "ide.example" is not an origin`},
		{"origin with a path", []string{"--listen", "127.0.0.1:0", "--allowed-origins", "https://ide.example/"}, `--allowed-origins: "https://ide.example/" is not an origin`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout bytes.Buffer
			_, help, err := parseMCPServerFlags(tt.args, &stdout)
			if help || stdout.Len() > 0 {
				t.Errorf("help %v, stdout %q; want neither", help, stdout.String())
			}
			if tt.want == "" {
				if err != nil {
					t.Errorf("error %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// strongToken is a token a listener accepts (openssl rand -hex 32).
const strongToken = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// strongToken2 is another token a listener accepts.
const strongToken2 = "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"

func TestMCPServerFlags_TokenFromEnvironment(t *testing.T) {
	t.Setenv(mcpTokenEnv, "s3cret")
	if _, _, err := parseMCPServerFlags([]string{"--listen", "0.0.0.0:7777"}, io.Discard); err == nil || !strings.Contains(err.Error(), mcpTokenEnv+": the token has 6 characters") {
		t.Errorf("a weak token from the environment: %v", err)
	}
	t.Setenv(mcpTokenEnv, strongToken)
	f, _, err := parseMCPServerFlags([]string{"--listen", "0.0.0.0:7777", "--allowed-origins", "https://a.example, https://b.example"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.clients) != 1 || f.clients[strongToken] != mcpClientID(strongToken) || len(f.allowedOrigins) != 2 || f.allowedOrigins[1] != "https://b.example" {
		t.Errorf("clients %q, origins %q", f.clients, f.allowedOrigins)
	}
}

// --tokens-file names a client per token: each is its own client, and
// the file's rules are the gateway's (a token of the --token-file too is
// refused, as is a file others may read).
func TestMCPServerFlags_TokensFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "clients")
	if err := os.WriteFile(file, []byte("# who may call\nalice "+strongToken+"\nbob "+strongToken2+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, _, err := parseMCPServerFlags([]string{"--listen", "0.0.0.0:7777", "--tokens-file", file}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.clients) != 2 || f.clients[strongToken] != "client:alice" || f.clients[strongToken2] != "client:bob" {
		t.Errorf("clients %q, want alice and bob by their tokens", f.clients)
	}
	t.Setenv(mcpTokenEnv, strongToken)
	if _, _, err := parseMCPServerFlags([]string{"--listen", "0.0.0.0:7777", "--tokens-file", file}, io.Discard); err == nil || !strings.Contains(err.Error(), "to client alice: each token names one client") {
		t.Errorf("the --token-file token in --tokens-file: %v", err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := parseMCPServerFlags([]string{"--listen", "127.0.0.1:7777", "--tokens-file", file}, io.Discard); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a readable --tokens-file: %v", err)
	}
	if _, _, err := parseMCPServerFlags([]string{"--tokens-file", file}, io.Discard); err == nil || !strings.Contains(err.Error(), "--tokens-file applies only with --listen") {
		t.Errorf("--tokens-file without --listen: %v", err)
	}
}

func TestRunMCPServer_VersionAndHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run([]string{"mcp-server", "--version"}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if got := stdout.String(); got != "acp-agent "+agentVersion()+"\n" {
		t.Errorf("--version printed %q", got)
	}
	for _, arg := range []string{"--help", "-h"} {
		stdout.Reset()
		if err := run([]string{"mcp-server", arg}, strings.NewReader(""), &stdout, &stderr); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		for _, want := range []string{"ask_agent", "sessionKey", "--listen", "--token-file", "--allowed-origins", "--store", "--model", `"args": ["mcp-server"]`, mcpTokenEnv} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%s: the usage lacks %q:\n%s", arg, want, stdout.String())
			}
		}
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr: %q", stderr.String())
	}
}

func TestRun_UnknownSubcommandNamesMCPServer(t *testing.T) {
	err := run([]string{"mcp"}, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `"mcp-server"`) {
		t.Errorf("error %v, want it to name mcp-server", err)
	}
}

// echoServer is a plain MCP server with one tool, standing in for
// mcpserver's.
func echoServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	return s
}

func TestServeMCPStdio_EndsAtEOF(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serveMCPStdio(t.Context(), echoServer(), inR, outW, slog.New(slog.DiscardHandler)) }()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil || len(res.Tools) != 1 {
		t.Fatalf("tools/list: %v %v", res, err)
	}
	_ = cs.Close() // closes inW: EOF on the server's stdin
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serveMCPStdio = %v, want nil at EOF", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serveMCPStdio did not return at EOF")
	}
}

func TestMCPHTTPHandler_Rules(t *testing.T) {
	const token = "s3cret"
	h := mcpHTTPHandler(echoServer(), map[string]string{token: mcpClientID(token)}, []string{"https://allowed.example"}, slog.New(slog.DiscardHandler))
	ts := httptest.NewServer(h) // 127.0.0.1: loopback
	defer ts.Close()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	tests := []struct {
		name   string
		header map[string]string
		host   string
		want   int
	}{
		{"token", map[string]string{"Authorization": "Bearer " + token}, "", http.StatusOK},
		{"no token", nil, "", http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer s3cres"}, "", http.StatusUnauthorized},
		{"longer token", map[string]string{"Authorization": "Bearer " + token + "x"}, "", http.StatusUnauthorized},
		{"not bearer", map[string]string{"Authorization": "Basic " + token}, "", http.StatusUnauthorized},
		{"foreign origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "https://evil.example"}, "", http.StatusForbidden},
		{"foreign origin without a token", map[string]string{"Origin": "https://evil.example"}, "", http.StatusForbidden},
		{"allowed origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "https://allowed.example"}, "", http.StatusOK},
		{"own loopback origin", map[string]string{"Authorization": "Bearer " + token, "Origin": ts.URL}, "", http.StatusOK},
		{"rebinding host and origin", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://evil.example"}, "evil.example", http.StatusForbidden},
		{"loopback origin of another port", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://127.0.0.1:1"}, "", http.StatusForbidden},
		{"rebinding host", map[string]string{"Authorization": "Bearer " + token}, "evil.example", http.StatusForbidden},
		{"localhost host", map[string]string{"Authorization": "Bearer " + token}, "localhost", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(initialize))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			if tt.host != "" {
				req.Host = tt.host
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
		})
	}
}

func TestMCPHTTPHandler_NoTokenOnLoopback(t *testing.T) {
	ts := httptest.NewServer(mcpHTTPHandler(echoServer(), nil, nil, slog.New(slog.DiscardHandler)))
	defer ts.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Errorf("echo: %+v %v", res, err)
	}
}

// whoServer is a plain MCP server whose tool "who" answers with the client
// identity of the request (auth.TokenInfo.UserID) and whether it came on a
// session.
func whoServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "who"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		id := ""
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			id = req.Extra.TokenInfo.UserID
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: id + " session=" + req.Session.ID()}}}, nil, nil
	})
	return s
}

// TestMCPHTTPHandler_BothWires: one endpoint serves protocol 2025-11-25 on
// sessions (Mcp-Session-Id) and 2026-07-28 statelessly (no session), both
// behind the token, and every request carries the client's identity, a
// digest of the token, not the token.
func TestMCPHTTPHandler_BothWires(t *testing.T) {
	ts := httptest.NewServer(mcpHTTPHandler(whoServer(), map[string]string{strongToken: mcpClientID(strongToken)}, nil, slog.New(slog.DiscardHandler)))
	defer ts.Close()
	for _, tc := range []struct {
		version     string
		wantSession bool
	}{{"2025-11-25", true}, {"2026-07-28", false}} {
		t.Run(tc.version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearerTransport(strongToken)}},
				&mcp.ClientSessionOptions{ProtocolVersion: tc.version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != tc.version {
				t.Errorf("protocol %s, want %s", got, tc.version)
			}
			if (cs.ID() != "") != tc.wantSession {
				t.Errorf("session ID %q: want one %v", cs.ID(), tc.wantSession)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "who"})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !strings.HasPrefix(text, mcpClientID(strongToken)+" ") || strings.Contains(text, strongToken) {
				t.Errorf("who = %q, want the client ID %s", text, mcpClientID(strongToken))
			}
		})
	}
	// The stateful wire's streams are resumable: each begins with a priming
	// event whose id a client reconnects with (Last-Event-ID).
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+strongToken)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(body), "event: prime\nid: ") {
		t.Errorf("initialize's stream %q: want a priming event with an id first", body)
	}
	// The stateless wire needs the token too.
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "server/discover")
	resp, err = ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("server/discover without the token: status %d, want 401", resp.StatusCode)
	}
}

// bearerTransport adds the Authorization header to every request.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

func TestMCPClientID(t *testing.T) {
	a, b := mcpClientID(strongToken), mcpClientID(strongToken+"x")
	if a != mcpClientID(strongToken) || a == b || strings.Contains(a, strongToken[:8]) || !strings.HasPrefix(a, "token:") {
		t.Errorf("mcpClientID: %q and %q: want a stable digest per token, not the token", a, b)
	}
}

// With several clients (--tokens-file), each request carries the identity
// of the client whose token it sent; a token of none is refused.
func TestMCPHTTPHandler_ClientPerToken(t *testing.T) {
	bob := strongToken2
	ts := httptest.NewServer(mcpHTTPHandler(whoServer(), map[string]string{strongToken: "client:alice", bob: "client:bob"}, nil, slog.New(slog.DiscardHandler)))
	defer ts.Close()
	for token, want := range map[string]string{strongToken: "client:alice ", bob: "client:bob "} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearerTransport(token)}}, nil)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "who"})
		if err != nil || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, want) {
			t.Errorf("who with %s's token = %+v, %v; want %q", want, res, err, want)
		}
		cs.Close()
		cancel()
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+strings.Repeat("c", 32))
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a token of no client: %v, %v; want 401", res, err)
	} else {
		res.Body.Close()
	}
}
