package e2e

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/acp/remote"
	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

const (
	aliceToken = "alice-token-0123456789abcdefghijklmnop"
	bobToken   = "bob-token-0123456789abcdefghijklmnopqr"
)

// balancer is a fleet's one URL, as the README's nginx map does it: a
// connection goes to the replica its acp_replica cookie names, a new one
// (no cookie) to the first replica; a replica marked down (a balancer's
// health check) is skipped for the next live one.
type balancer struct {
	srv *httptest.Server

	mu       sync.Mutex
	names    []string            // in order
	replicas map[string]*url.URL // by replica name
	down     map[string]bool
}

func newBalancer(t *testing.T) *balancer {
	b := &balancer{replicas: map[string]*url.URL{}, down: map[string]bool{}}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(b.pick(r.In))
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1,
	}
	b.srv = httptest.NewServer(proxy)
	t.Cleanup(b.srv.Close)
	return b
}

func (b *balancer) add(name string, g *gatewayProc) {
	u, _ := url.Parse("http://" + g.addr)
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.replicas[name]; !ok {
		b.names = append(b.names, name)
	}
	b.replicas[name] = u
	delete(b.down, name)
}

func (b *balancer) markDown(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down[name] = true
}

func (b *balancer) pick(r *http.Request) *url.URL {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, err := r.Cookie(remote.AffinityCookie); err == nil && !b.down[c.Value] && b.replicas[c.Value] != nil {
		return b.replicas[c.Value]
	}
	for _, n := range b.names {
		if !b.down[n] {
			return b.replicas[n]
		}
	}
	return b.replicas[b.names[0]]
}

func (b *balancer) url() string { return b.srv.URL + "/acp" }

// TestFleet_OneURLTwoReplicas: two gateway replicas on one PostgreSQL
// database behind one URL (a balancer keeping each connection on its
// replica by the affinity cookie), an editor through acp-agent connect
// with a stdio server of its own.
//   - The replica running a turn is killed: the turn ends for the editor
//     with an error; connect reconnects through the balancer to the other
//     replica and re-attaches the session, and the next prompt continues
//     the conversation there.
//   - A turn of the session running on another replica makes a prompt
//     busy, naming that replica; once it ends, the next prompt first shows
//     the editor that turn, and the model sees it.
//   - A client that goes away mid-turn without a word: its turn ends on
//     its replica, and a load on the other replica replays it.
//   - Another tenant cannot load the session on any replica.
func TestFleet_OneURLTwoReplicas(t *testing.T) {
	t.Parallel()
	fake := fakemodel.NewOpenAI(t)
	env := []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1"}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice "+aliceToken+"\nbob "+bobToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := pgtest.Start(t)
	replica := func(name, addr string) *gatewayProc {
		return startGateway(t, addr, env, "--model", "openai:gpt-fake", "--store", db, "--tokens-file", tokens, "--replica-name", name)
	}
	lb := newBalancer(t)
	ra, rb := replica("replica-a", ""), replica("replica-b", "")
	lb.add("replica-a", ra)
	lb.add("replica-b", rb)

	editor := startConnect(t, nil, []string{"ACP_AGENT_GATEWAY_TOKEN=" + aliceToken}, lb.url())
	cwd := t.TempDir()
	sid := editor.newSession(cwd, fixtureServer("fixture", ""))
	fake.Push(fakemodel.Turn{Text: "Noted: pelican."})
	if _, out := editor.prompt(sid, "remember the word pelican"); text(out) != "Noted: pelican." {
		t.Fatalf("first turn: %q", text(out))
	}

	// 1. replica-a (the first one: the editor's) dies mid-turn.
	fake.Push(fakemodel.Turn{Text: strings.Repeat("slow words ", 100), Delay: 100 * time.Millisecond})
	from := len(editor.Client.Updates())
	done := make(chan error, 1)
	go func() { _, err := editor.Prompt(context.Background(), sid, "talk slowly"); done <- err }()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, _, err := editor.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool { return n.Update.AgentMessageChunk != nil }); err != nil {
		t.Fatal(err)
	}
	lb.markDown("replica-a")
	_ = ra.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "lost") {
			t.Errorf("the turn on the killed replica: %v, want an error saying the connection was lost", err)
		}
	case <-ctx.Done():
		t.Fatal("the turn on the killed replica never ended")
	}
	if _, _, err := editor.Client.WaitFor(ctx, from, func(n acpsdk.SessionNotification) bool {
		return strings.Contains(acpclientText(n), "re-attached")
	}); err != nil {
		t.Fatalf("no re-attach: %v\n%s", err, dump(editor.Client.Updates()[from:]))
	}
	fake.Push(fakemodel.Turn{Text: "The word was pelican."})
	if _, out := editor.prompt(sid, "which word did I ask you to remember?"); text(out) != "The word was pelican." {
		t.Fatalf("on replica-b: %q", text(out))
	}
	if body := lastRequest(fake); !strings.Contains(body, "remember the word pelican") {
		t.Errorf("replica-b's model did not see the conversation")
	}
	if _, out := editor.prompt(sid, `/call mcp__fixture__echo {"message":"still here"}`); contentText(finalToolUpdate(t, out)) != "Echo: still here" {
		t.Errorf("the editor's stdio server after the move: %s", dump(out))
	}

	// 2. replica-a is back; another connection of alice's loads the
	// session there and runs a slow turn: the editor's prompt on
	// replica-b is busy, naming replica-a.
	ra2 := replica("replica-a", "")
	lb.add("replica-a", ra2)
	other := dialGateway(t, ra2.url(), aliceToken, remote.TransportWebSocket, nil)
	if _, err := other.Conn.LoadSession(t.Context(), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	fake.Push(fakemodel.Turn{Text: "Elsewhere: " + strings.Repeat("a long answer ", 20), Delay: 100 * time.Millisecond})
	otherFrom := len(other.Client.Updates())
	otherDone := make(chan acpsdk.StopReason, 1)
	go func() { stop, _, _ := other.prompt(sid, "answer from replica-a"); otherDone <- stop }()
	if _, _, err := other.Client.WaitFor(ctx, otherFrom, func(n acpsdk.SessionNotification) bool { return n.Update.AgentMessageChunk != nil }); err != nil {
		t.Fatal(err)
	}
	if _, out := editor.prompt(sid, "are you there?"); !strings.Contains(text(out), "running a turn on replica-a") {
		t.Errorf("a prompt while replica-a runs a turn: %q, want the busy message naming replica-a", text(out))
	}
	if stop := <-otherDone; stop != acpsdk.StopReasonEndTurn {
		t.Fatalf("replica-a's turn: %s", stop)
	}
	fake.Push(fakemodel.Turn{Text: "I see the answer from replica-a."})
	stop, out := editor.prompt(sid, "what did the other one say?")
	if stop != acpsdk.StopReasonEndTurn || !strings.Contains(text(out), "Elsewhere: ") || !strings.HasSuffix(text(out), "I see the answer from replica-a.") {
		t.Errorf("the next prompt on replica-b: %q, want replica-a's turn shown first", text(out))
	}
	if body := lastRequest(fake); !strings.Contains(body, "answer from replica-a") {
		t.Errorf("replica-b's model did not see replica-a's turn")
	}

	// 3. A client that goes away mid-turn, without a word: its turn ends on
	// its replica, and a load elsewhere replays it.
	var conns connTracker
	gone, err := dialGatewayWith(t, rb.url(), &remote.DialOptions{Token: aliceToken, Transport: remote.TransportHTTP,
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: conns.dial}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cwd2 := t.TempDir()
	sid2 := gone.newSession(cwd2)
	fake.Push(fakemodel.Turn{Text: "Finished while you were away.", Delay: 300 * time.Millisecond})
	goneCtx, goneCancel := context.WithCancel(t.Context())
	defer goneCancel()
	go func() {
		_, _ = gone.Conn.Prompt(goneCtx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid2), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("finish this")}})
	}()
	if _, _, err := gone.Client.WaitFor(ctx, 0, func(n acpsdk.SessionNotification) bool {
		return n.Update.AgentMessageChunk != nil && n.SessionId == acpsdk.SessionId(sid2)
	}); err != nil {
		t.Fatal(err)
	}
	conns.closeAll() // its streams and requests break; no DELETE, no cancel
	back := dialGateway(t, ra2.url(), aliceToken, remote.TransportWebSocket, nil)
	backFrom := len(back.Client.Updates())
	if _, err := back.Conn.LoadSession(t.Context(), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid2), Cwd: cwd2, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if got := text(back.Client.Updates()[backFrom:]); !strings.Contains(got, "Finished while you were away.") {
		t.Errorf("the load on replica-a replayed %q, want the turn that ended on replica-b", got)
	}

	// 4. bob cannot load alice's session, on either replica.
	for _, g := range []*gatewayProc{ra2, rb} {
		bob := dialGateway(t, g.url(), bobToken, "", nil)
		if _, err := bob.Conn.LoadSession(t.Context(), acpsdk.LoadSessionRequest{SessionId: acpsdk.SessionId(sid), Cwd: cwd, McpServers: []acpsdk.McpServer{}}); !isCode(err, -32002) {
			t.Errorf("bob loading alice's session on %s: %v, want -32002", g.addr, err)
		}
	}
}

// connTracker dials TCP connections and can break them all, as a client
// that vanishes (a laptop closed) leaves its server.
type connTracker struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (c *connTracker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		c.mu.Lock()
		c.conns = append(c.conns, conn)
		c.mu.Unlock()
	}
	return conn, err
}

func (c *connTracker) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		_ = conn.Close()
	}
}

// lastRequest is the body of the fake model's last request.
func lastRequest(fake *fakemodel.Server) string {
	reqs := fake.Requests()
	if len(reqs) == 0 {
		return ""
	}
	return string(reqs[len(reqs)-1].Body)
}
