package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/acp/remote"
	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// gatewayConfig writes a gateway's config file: loopback MCP servers
// allowed (a gateway refuses loopback URLs of its clients by default), and
// extra JSON members (`"gateway": {...}`) when given.
func gatewayConfig(t testing.TB, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	cfg := `{"sandbox": {"allowHosts": ["127.0.0.1"]}` + extra + `}`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGateway_NetworkClientBothTransports: an ACP client on the network
// (acp/remote's Go client, WebSocket and Streamable HTTP) drives the
// gateway's sessions: an http MCP server reached from the gateway, a
// server the client hosts over MCP-over-ACP, a model turn with a
// permission request, and a stdio entry refused with a pointer to
// "acp-agent connect".
func TestGateway_NetworkClientBothTransports(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewOpenAI(t)
	g := startGateway(t, "", []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1", "ACP_AGENT_GATEWAY_TOKEN=" + gatewayTestToken},
		"--model", "openai:gpt-fake", "--store", "memory", "--config", gatewayConfig(t, ""))
	fixture := startFixtureHTTP(t)
	for _, tr := range []string{remote.TransportWebSocket, remote.TransportHTTP} {
		t.Run(tr, func(t *testing.T) {
			host := &acpclient.MCPHost{Servers: map[string]*mcp.Server{"editor-1": hostedEcho()}}
			c := dialGateway(t, g.url(), gatewayTestToken, tr, &acpclient.Recorder{MCP: host})
			from := len(c.Client.Updates())
			sid := c.newSession(t.TempDir(), httpServer("web", fixture+"/mcp", nil), host.Entry("editor", "editor-1"),
				acpclient.Stdio("local", fixtureBin, nil, nil))
			if opening := text(c.Client.Updates()[from:]); !strings.Contains(opening, `"local"`) || !strings.Contains(opening, "acp-agent connect") {
				t.Errorf("the stdio entry was not refused with a pointer to acp-agent connect:\n%s", opening)
			}
			_, out := c.mustPrompt(sid, "/tools")
			if got := text(out); !strings.Contains(got, "mcp__web__echo") || !strings.Contains(got, "mcp__editor__") || strings.Contains(got, "mcp__local__") {
				t.Errorf("/tools:\n%s", got)
			}
			_, out = c.mustPrompt(sid, `/call mcp__web__echo {"message":"over `+tr+`"}`)
			if e := finalToolUpdate(t, out); *e.Status != acpsdk.ToolCallStatusCompleted || contentText(e) != "Echo: over "+tr {
				t.Errorf("http server's echo: %s", dump(out))
			}
			// A model turn: a tool that is not read-only asks the client.
			perms := &permissionAnswers{}
			c.Client.SetPermission(perms.answer)
			perms.queue("allow_once")
			fake.Push(fakemodel.Turn{Text: "Showing.", ToolCalls: []fakemodel.ToolCall{{ID: "call_img", Name: "mcp__web__image", Args: `{}`}}},
				fakemodel.Turn{Text: "Done."})
			stop, out := c.mustPrompt(sid, "show the image")
			if stop != acpsdk.StopReasonEndTurn || !hasText(out, "Done.") || len(perms.questions()) != 1 {
				t.Errorf("model turn: stop %s, %d permission requests\n%s", stop, len(perms.questions()), dump(out))
			}
		})
	}
}

// TestGateway_TenantsAreIsolated: a tenant's sessions are unknown to
// another tenant (load, list, delete), and a wrong token reads nothing.
func TestGateway_TenantsAreIsolated(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens")
	alice, bob := "alice-token-0123456789abcdefghijklmnop", "bob-token-0123456789abcdefghijklmnopqr"
	if err := os.WriteFile(tokens, []byte("alice "+alice+"\nbob "+bob+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, "", nil, "--store", "memory", "--tokens-file", tokens)
	a := dialGateway(t, g.url(), alice, "", nil)
	cwd := t.TempDir()
	sid := a.newSession(cwd)
	a.mustPrompt(sid, "/help")

	b := dialGateway(t, g.url(), bob, remote.TransportHTTP, nil)
	ctx := t.Context()
	if _, err := b.Conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); !isCode(err, -32002) {
		t.Errorf("bob loading alice's session: %v, want -32002", err)
	}
	if _, err := b.Conn.UnstableDeleteSession(ctx, acpsdk.UnstableDeleteSessionRequest{SessionId: acpsdk.SessionId(sid)}); !isCode(err, -32002) {
		t.Errorf("bob deleting alice's session: %v, want -32002", err)
	}
	if list, err := b.Conn.ListSessions(ctx, acpsdk.ListSessionsRequest{}); err != nil || len(list.Sessions) != 0 {
		t.Errorf("bob's session/list = %v, %v; want none", list.Sessions, err)
	}
	if stop, _, err := b.prompt(sid, "/help"); err == nil {
		t.Errorf("bob prompting alice's session: %s, want an error", stop)
	}
	if list, err := a.Conn.ListSessions(ctx, acpsdk.ListSessionsRequest{}); err != nil || len(list.Sessions) != 1 {
		t.Errorf("alice's session/list = %v, %v; want hers", list.Sessions, err)
	}
	for _, tok := range []string{"", "not-a-token-of-this-gateway-0123456789"} {
		if _, err := tryDialGateway(t, g.url(), tok, remote.TransportHTTP, nil); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("token %q: %v, want 401", tok, err)
		}
	}
}

// TestGateway_HostileHTTP: malformed bodies, oversized messages and a
// client that reads nothing are answered without harm to another
// connection, which goes on working throughout.
func TestGateway_HostileHTTP(t *testing.T) {
	t.Parallel()
	cfg := gatewayConfig(t, `, "gateway": {"limits": {"maxBufferedBytes": 65536, "outputStall": "2s"}}`)
	g := startGateway(t, "", nil, "--store", "memory", "--config", cfg)
	good := dialGateway(t, g.url(), "", remote.TransportWebSocket, nil)
	sid := good.newSession(t.TempDir())
	post := func(body []byte, header map[string]string) (int, string) {
		req, _ := http.NewRequest("POST", g.url(), bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	initialize := []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
	code, _ := post(initialize, nil)
	if code != 200 {
		t.Fatalf("initialize: %d", code)
	}
	// A connection to abuse.
	req, _ := http.NewRequest("POST", g.url(), bytes.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	conn := map[string]string{remote.HeaderConnectionID: resp.Header.Get(remote.HeaderConnectionID)}
	for _, c := range []struct {
		name string
		body []byte
		want int
	}{
		{"not JSON", []byte(`{"jsonrpc":`), 400},
		{"a batch", []byte(`[{"jsonrpc":"2.0","id":1,"method":"session/list"}]`), 400},
		{"a string", []byte(`"hello"`), 400},
		{"over the message limit", append(append([]byte(`{"jsonrpc":"2.0","id":2,"method":"session/list","params":{"x":"`), bytes.Repeat([]byte("a"), 11<<20)...), `"}}`...), 413},
	} {
		if code, body := post(c.body, conn); code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.want)
		}
		good.mustPrompt(sid, "/help")
	}
	// The abused connection never opened its stream: its answers pile up
	// until its client is taken for gone (outputStall) and it is closed.
	var wg sync.WaitGroup
	for i := range 400 {
		wg.Go(func() {
			_, _ = post(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"session/list","params":{}}`, 10+i), conn)
		})
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, _ := post([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}`), conn)
		if code == 410 || code == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stalled connection is still open: %d", code)
		}
		good.mustPrompt(sid, "/help")
	}
	wg.Wait()
	if stop, _ := good.mustPrompt(sid, "/help"); stop != acpsdk.StopReasonEndTurn {
		t.Errorf("the good connection after all that: %s", stop)
	}
}

// isCode reports whether err is a JSON-RPC error of code.
func isCode(err error, code int) bool {
	re, ok := err.(*acpsdk.RequestError)
	return ok && re.Code == code
}

// TestGateway_OfficialTSClient: the official TypeScript SDK's client
// transports (2.4.0: experimental/http-client and ws-client) drive the
// gateway, with a token: a server the client hosts (MCP-over-ACP), the
// permission request, two sessions at once on one connection, and a
// session loaded on a new connection with its whole replay.
func TestGateway_OfficialTSClient(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "", []string{"ACP_AGENT_GATEWAY_TOKEN=" + gatewayTestToken}, "--store", filepath.Join(t.TempDir(), "sessions.db"))
	for _, transport := range []string{"http", "ws"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			url := g.url()
			if transport == "ws" {
				url = "ws" + strings.TrimPrefix(url, "http")
			}
			cwd := t.TempDir()
			run := runTSRemote(t, transport, url, cwd, "--token", gatewayTestToken)
			if len(run.Errors) != 0 || run.ConnectionClosed || !run.MCPOverACP {
				t.Fatalf("errors %+v, closed early %v (%s), mcpOverAcp %v", run.Errors, run.ConnectionClosed, str(run.ConnectionError), run.MCPOverACP)
			}
			checkDefaultTurns(t, run, run.SessionID)
			if len(run.Permissions) != 1 || run.Permissions[0].OptionID != "allow_once" {
				t.Errorf("permissions %+v, want the /call allowed once", run.Permissions)
			}

			two := runTSRemote(t, transport, url, t.TempDir(), "--token", gatewayTestToken, "--scenario", "two-sessions")
			if len(two.Errors) != 0 || len(two.SessionIDs) != 2 {
				t.Fatalf("two sessions: errors %+v, sessions %v", two.Errors, two.SessionIDs)
			}
			for _, sid := range two.SessionIDs {
				checkDefaultTurns(t, two, sid)
			}

			load := runTSRemote(t, transport, url, cwd, "--token", gatewayTestToken, "--scenario", "load", "--session", run.SessionID)
			if len(load.Errors) != 0 || load.SessionID != run.SessionID {
				t.Fatalf("load: errors %+v, session %q", load.Errors, load.SessionID)
			}
			replay := ""
			for _, u := range load.Replayed {
				b, _ := json.Marshal(u.Update)
				replay += string(b) + "\n"
			}
			for _, want := range []string{`"text":"/tools"`, `TS remote editor echo: hi from the remote TS client`} {
				if !strings.Contains(replay, want) {
					t.Errorf("the replay lacks %s:\n%s\nload run: %+v", want, replay, load)
				}
			}

			bad := runTSRemote(t, transport, url, cwd, "--token", "not-the-gateway-token-0123456789abcdef")
			if bad.ConnectionError == nil && len(bad.Errors) == 0 {
				t.Errorf("a wrong token was let in: %+v", bad)
			}
		})
	}
}

// TestGateway_TLSAndHTTP2: with --tls-cert and --tls-key the gateway
// serves https:// and wss://, Streamable HTTP over HTTP/2; in the clear it
// takes HTTP/2 too (h2c, prior knowledge).
func TestGateway_TLSAndHTTP2(t *testing.T) {
	t.Parallel()
	certFile, keyFile, pool := selfSignedCert(t)
	tlsGW := startGateway(t, "", nil, "--store", "memory", "--tls-cert", certFile, "--tls-key", keyFile)
	httpsURL := "https://" + tlsGW.addr + "/acp"
	h2 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	var protos protoRecorder
	for _, tr := range []string{remote.TransportWebSocket, remote.TransportHTTP} {
		rt := http.RoundTripper(h2) // the WebSocket dialer takes the *http.Transport's TLS settings
		if tr == remote.TransportHTTP {
			rt = protos.wrap(h2)
		}
		c, err := dialGatewayWith(t, httpsURL, &remote.DialOptions{Transport: tr, HTTPClient: &http.Client{Transport: rt}}, nil)
		if err != nil {
			t.Fatalf("%s over TLS: %v", tr, err)
		}
		sid := c.newSession(t.TempDir())
		if stop, _ := c.mustPrompt(sid, "/help"); stop != acpsdk.StopReasonEndTurn {
			t.Errorf("%s over TLS: stop %s", tr, stop)
		}
	}
	if got := protos.all(); len(got) == 0 || slices.ContainsFunc(got, func(p string) bool { return p != "HTTP/2.0" }) {
		t.Errorf("Streamable HTTP over TLS went over %v, want HTTP/2.0 only", got)
	}

	clear := startGateway(t, "", nil, "--store", "memory")
	h2c := &http.Transport{Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)
	var clearProtos protoRecorder
	c, err := dialGatewayWith(t, clear.url(), &remote.DialOptions{Transport: remote.TransportHTTP, HTTPClient: &http.Client{Transport: clearProtos.wrap(h2c)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sid := c.newSession(t.TempDir())
	c.mustPrompt(sid, "/help")
	if got := clearProtos.all(); len(got) == 0 || slices.ContainsFunc(got, func(p string) bool { return p != "HTTP/2.0" }) {
		t.Errorf("cleartext Streamable HTTP went over %v, want HTTP/2.0 (h2c) only", got)
	}
}

// protoRecorder records the protocol of each response of a transport.
type protoRecorder struct {
	mu     sync.Mutex
	protos []string
}

func (p *protoRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err == nil && !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			p.mu.Lock()
			p.protos = append(p.protos, resp.Proto)
			p.mu.Unlock()
		}
		return resp, err
	})
}

func (p *protoRecorder) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.protos)
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// selfSignedCert writes a certificate for 127.0.0.1 and its key (PEM
// files) and returns them with a pool that trusts it.
func selfSignedCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "acp-agent e2e"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}
