package remote

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// dialStore dials url with the sessions extension, as token's tenant.
func dialStore(t *testing.T, token string, urls ...string) *Client {
	t.Helper()
	r, err := Dial(t.Context(), &ClientOptions{URLs: urls, Token: token, Info: PeerInfo{Name: "test", Version: "1"},
		Extensions: map[string]int{ExtSessions: ExtSessionsVersion}, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})

	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func testRecord(id string) store.Record {
	now := time.Now().Truncate(time.Millisecond)
	return store.Record{ID: id, Key: "acp:" + id, Cwd: "/tmp", Created: now, Updated: now}
}

func userTurn(text string) store.Turn {
	return store.Turn{Messages: []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent(text)}}}, StopReason: gateway.StopEndTurn}
}

func TestStore_RoundTripsOverTheProtocol(t *testing.T) {
	backing := memory.New()
	_, url := wsServer(t, &ServerOptions{Token: "s3cret", Store: backing})
	st := dialStore(t, "s3cret", url).Store()
	ctx := t.Context()
	if err := st.Create(ctx, testRecord("s1")); err != nil {
		t.Fatal(err)
	}
	if err := st.SetServers(ctx, "s1", []store.Server{{Name: "fs", Transport: "stdio"}}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetModel(ctx, "s1", "anthropic:claude"); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendTurn(ctx, "s1", userTurn("hello fleet")); err != nil {
		t.Fatal(err)
	}
	rec, err := st.Get(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Key != "acp:s1" || rec.Model != "anthropic:claude" || len(rec.Servers) != 1 || rec.Servers[0].Name != "fs" || rec.Title != "hello fleet" {
		t.Fatalf("record = %+v", rec)
	}
	turns, err := st.Turns(ctx, "s1")
	if err != nil || len(turns) != 1 || gateway.PromptText(turns[0].Messages[0].Content) != "hello fleet" || turns[0].StopReason != gateway.StopEndTurn {
		t.Fatalf("turns = %+v, %v", turns, err)
	}
	if err := st.Create(ctx, testRecord("s2")); err != nil {
		t.Fatal(err)
	}
	page, next, err := st.List(ctx, store.ListOptions{Limit: 1})
	if err != nil || len(page) != 1 || next == "" {
		t.Fatalf("list page 1 = %+v, %q, %v", page, next, err)
	}
	page2, next2, err := st.List(ctx, store.ListOptions{Limit: 1, Cursor: next})
	if err != nil || len(page2) != 1 || next2 != "" || page2[0].ID == page[0].ID {
		t.Fatalf("list page 2 = %+v, %q, %v", page2, next2, err)
	}
	if _, err := st.Get(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get of a missing session: %v, want ErrNotFound", err)
	}
	if _, err := st.Turns(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Turns of a missing session: %v, want ErrNotFound", err)
	}
	if _, _, err := st.List(ctx, store.ListOptions{Cursor: "garbage!"}); !errors.Is(err, store.ErrBadCursor) {
		t.Fatalf("List with a bad cursor: %v, want ErrBadCursor", err)
	}
	// What the translator wrote is in the gateway's store, as the default tenant's.
	if got, err := backing.Get(ctx, "s1"); err != nil || got.Tenant != "" || got.Title != "hello fleet" {
		t.Fatalf("backing record = %+v, %v", got, err)
	}
}

func TestStore_GatewayWithoutStoreIsRefusedAtDial(t *testing.T) {
	_, url := wsServer(t, &ServerOptions{Token: "s3cret"})
	_, err := Dial(t.Context(), &ClientOptions{URL: url, Token: "s3cret", Extensions: map[string]int{ExtSessions: ExtSessionsVersion}})
	if err == nil || !strings.Contains(err.Error(), "keeps no sessions") || !strings.Contains(err.Error(), "--store") {
		t.Fatalf("Dial to a gateway without a store: %v", err)
	}
	// Without the extension asked for, the store methods are not served.
	r := dialRemote(t, url, "s3cret")
	if _, err := r.Store().Get(t.Context(), "s1"); err == nil || !strings.Contains(err.Error(), "keeps no sessions") {
		t.Fatalf("sessions.get on a gateway without a store: %v", err)
	}
}

func TestTenants_NeverSeeEachOthersSessions(t *testing.T) {
	backing := memory.New()
	_, url := wsServer(t, &ServerOptions{Tokens: map[string]string{"tok-a": "alice", "tok-b": "bob"}, Store: backing})
	alice, bob := dialStore(t, "tok-a", url), dialStore(t, "tok-b", url)
	ctx := t.Context()
	as, bs := alice.Store(), bob.Store()
	if err := as.Create(ctx, testRecord("a1")); err != nil {
		t.Fatal(err)
	}
	if err := as.AppendTurn(ctx, "a1", userTurn("alice's secret")); err != nil {
		t.Fatal(err)
	}
	if rec, err := backing.Get(ctx, "a1"); err != nil || rec.Tenant != "alice" {
		t.Fatalf("stored record = %+v, %v; want tenant alice", rec, err)
	}
	_, missingErr := bs.Get(ctx, "missing")
	if _, err := bs.Get(ctx, "a1"); !errors.Is(err, store.ErrNotFound) || err.Error() != strings.ReplaceAll(missingErr.Error(), "missing", "a1") {
		t.Fatalf("bob's Get of alice's session: %v; want the same answer as a missing session (%v)", err, missingErr)
	}
	if _, err := bs.Turns(ctx, "a1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bob's Turns (session/load) of alice's session: %v", err)
	}
	for name, err := range map[string]error{
		"AppendTurn": bs.AppendTurn(ctx, "a1", userTurn("bob was here")),
		"SetModel":   bs.SetModel(ctx, "a1", "x"),
		"SetServers": bs.SetServers(ctx, "a1", nil),
	} {
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("bob's %s of alice's session: %v", name, err)
		}
	}
	if recs, _, err := bs.List(ctx, store.ListOptions{}); err != nil || len(recs) != 0 {
		t.Fatalf("bob's list = %+v, %v; want none", recs, err)
	}
	if recs, _, err := as.List(ctx, store.ListOptions{}); err != nil || len(recs) != 1 || recs[0].ID != "a1" {
		t.Fatalf("alice's list = %+v, %v", recs, err)
	}
	// Bob prompting alice's session is forbidden.
	p, err := bob.current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = p.call(ctx, "chat.send", ChatSendParams{SessionKey: "acp:a1", RunID: "r1", SessionID: "a1", Message: []gateway.Content{gateway.TextContent("hi")}}, nil)
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != CodeForbidden {
		t.Fatalf("bob's chat.send of alice's session: %v; want forbidden", err)
	}
	if turns, _ := backing.Turns(ctx, "a1"); len(turns) != 1 {
		t.Fatalf("alice's session has %d turns, want 1", len(turns))
	}
	// Session keys are per tenant: both may use the same key, each with
	// its own tools, run in its own translator.
	ran := make(chan string, 2)
	for name, c := range map[string]*Client{"alice": alice, "bob": bob} {
		tool := &gateway.Tool{Name: "whoami", Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
			ran <- name
			return gateway.Result{Content: []gateway.Content{gateway.TextContent(name)}}, nil
		}}
		if err := c.SetExtraTools(ctx, "acp:shared", []*gateway.Tool{tool}); err != nil {
			t.Fatalf("%s SetExtraTools: %v", name, err)
		}
	}
	if _, err := bob.Send(ctx, gateway.SendRequest{SessionKey: "acp:shared", Message: []gateway.Content{gateway.TextContent("/call whoami {}")}}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	if got := <-ran; got != "bob" {
		t.Fatalf("bob's turn ran %s's tool", got)
	}
	// A wrong token is refused.
	if _, err := Dial(ctx, &ClientOptions{URL: url, Token: "tok-c"}); err == nil || !strings.Contains(err.Error(), "wrong or missing token") {
		t.Fatalf("Dial with an unknown token: %v", err)
	}
}

// blockingTool is a translator tool that blocks until its call's context
// ends; started is told when it runs.
func blockingTool(started chan<- struct{}) *gateway.Tool {
	return &gateway.Tool{Name: "wait", Execute: func(ctx context.Context, _ string, _ map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return gateway.Result{}, ctx.Err()
	}}
}

func TestLease_BusyWhileAnotherHolderRunsTheSession(t *testing.T) {
	leases := &store.LocalLeases{}
	_, url := wsServer(t, &ServerOptions{Store: memory.New(), Leases: leases, Replica: "replica-1"})
	c := dialStore(t, "", url)
	ctx := t.Context()
	if err := c.Store().Create(ctx, testRecord("s1")); err != nil {
		t.Fatal(err)
	}
	other, err := leases.Acquire(ctx, "s1", "replica-2")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Send(ctx, gateway.SendRequest{SessionKey: "acp:s1", Message: []gateway.Content{gateway.TextContent("hi")}}, func(gateway.Event) {})
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != CodeBusy || !strings.Contains(re.Message, "s1") || !strings.Contains(re.Message, "replica-2") {
		t.Fatalf("chat.send while replica-2 holds the lease: %v; want busy naming s1 and replica-2", err)
	}
	_ = other.Release(ctx)
	if _, err := c.Send(ctx, gateway.SendRequest{SessionKey: "acp:s1", Message: []gateway.Content{gateway.TextContent("hi")}}, func(gateway.Event) {}); err != nil {
		t.Fatalf("chat.send once the lease is free: %v", err)
	}
	// The turn's lease was released when it ended.
	l, err := leases.Acquire(ctx, "s1", "replica-2")
	if err != nil {
		t.Fatalf("the turn kept its lease: %v", err)
	}
	_ = l.Release(ctx)
}

// lossyLeases hand out leases whose loss the test decides.
type lossyLeases struct {
	mu   sync.Mutex
	lost chan struct{}
}

func (l *lossyLeases) Acquire(_ context.Context, id, owner string) (*store.Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost = make(chan struct{})
	return store.NewLease(id, owner, 1, l.lost, nil), nil
}

func TestLease_LostLeaseCancelsTheTurn(t *testing.T) {
	leases := &lossyLeases{}
	_, url := wsServer(t, &ServerOptions{Store: memory.New(), Leases: leases, Replica: "replica-1"})
	c := dialStore(t, "", url)
	ctx := t.Context()
	if err := c.Store().Create(ctx, testRecord("s1")); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	if err := c.SetExtraTools(ctx, "acp:s1", []*gateway.Tool{blockingTool(started)}); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := c.Send(ctx, gateway.SendRequest{SessionKey: "acp:s1", Message: []gateway.Content{gateway.TextContent("/call wait {}")}}, func(gateway.Event) {})
		errc <- err
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn's tool never started")
	}
	leases.mu.Lock()
	close(leases.lost)
	leases.mu.Unlock()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "lease of session s1 was lost") || !strings.Contains(err.Error(), "replica-1") {
			t.Fatalf("turn after its lease was lost: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the turn went on after its lease was lost")
	}
}

func TestLease_TurnWriteIsFencedByTheTurnsLease(t *testing.T) {
	leases := &store.LocalLeases{}
	backing := memory.New()
	_, url := wsServer(t, &ServerOptions{Store: backing, Leases: leases})
	c := dialStore(t, "", url)
	ctx := t.Context()
	st := c.Store()
	h := session.NewHistory(st, nil)
	defer h.Close()
	c.SetHistory(h)
	if err := st.Create(ctx, testRecord("s1")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Attach(ctx, "acp:s1", "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Send(ctx, gateway.SendRequest{SessionKey: "acp:s1", Message: []gateway.Content{gateway.TextContent("/help")}}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	if err := h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if turns, err := backing.Turns(ctx, "s1"); err != nil || len(turns) != 1 {
		t.Fatalf("stored turns = %d, %v; want the turn, written through the gateway", len(turns), err)
	}
	c.mu.Lock()
	token := c.fences["s1"]
	c.mu.Unlock()
	if token == 0 || token != leases.Latest("s1") {
		t.Fatalf("the turn's write carried token %d, the lease's is %d", token, leases.Latest("s1"))
	}
	// A later turn (another replica's, say) takes the lease: this turn's
	// token is stale, and a write with it is refused.
	l, err := leases.Acquire(ctx, "s1", "replica-2")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Release(ctx)
	if err := st.AppendTurn(ctx, "s1", userTurn("late")); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("a write with a stale lease token: %v, want ErrFenced", err)
	}
	if turns, _ := backing.Turns(ctx, "s1"); len(turns) != 1 {
		t.Fatalf("stored turns = %d after a fenced write, want 1", len(turns))
	}
}

// deadURL returns a loopback ws:// URL that refuses connections.
func deadURL(t *testing.T) string {
	t.Helper()
	return "ws://" + testutil.RefusedAddr(t)
}

func dialURLs(t *testing.T, urls ...string) *Client {
	t.Helper()
	c, err := Dial(t.Context(), &ClientOptions{URLs: urls, Info: PeerInfo{Name: "test", Version: "1"}, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestClient_SeveralURLs_FirstDownSecondAnswers(t *testing.T) {
	_, live := wsServer(t, nil)
	c := dialURLs(t, deadURL(t), live)
	if got := c.currentURL(); got != live {
		t.Fatalf("connected to %s, want %s", got, live)
	}
	if _, err := c.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:s1", Message: []gateway.Content{gateway.TextContent("/help")}}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	// Every URL down: Dial names each.
	d1, d2 := deadURL(t), deadURL(t)
	_, err := Dial(t.Context(), &ClientOptions{URLs: []string{d1, d2}})
	if err == nil || !strings.Contains(err.Error(), d1) || !strings.Contains(err.Error(), d2) {
		t.Fatalf("Dial with every URL down: %v", err)
	}
}

func TestClient_ConnectionDropGoesToTheNextURL(t *testing.T) {
	srv1, url1 := wsServer(t, nil)
	_, url2 := wsServer(t, nil)
	c := dialURLs(t, url1, url2)
	if got := c.currentURL(); got != url1 {
		t.Fatalf("connected to %s, want %s", got, url1)
	}
	echo := &gateway.Tool{Name: "echo", Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
		return gateway.Result{Content: []gateway.Content{gateway.TextContent("echoed")}}, nil
	}}
	if err := c.SetExtraTools(t.Context(), "acp:s1", []*gateway.Tool{echo}); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	srv1.Shutdown(sctx) // replica 1 goes away for good
	cancel()
	evs, emit := collectEvents()
	// Send waits for the reconnection, which goes to replica 2, where
	// the session's tools are registered again.
	var err error
	if !testutil.Eventually(30*time.Second, func() bool {
		_, err = c.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:s1", Message: []gateway.Content{gateway.TextContent("/call echo {}")}}, emit)
		return err == nil
	}) {
		t.Fatalf("no turn on replica 2: %v", err)
	}
	if got := c.currentURL(); got != url2 {
		t.Fatalf("reconnected to %s, want %s", got, url2)
	}
	var ended bool
	for _, e := range *evs {
		if e.Kind == gateway.EventToolEnd && e.Call != nil && e.Call.Status == "completed" {
			ended = true
		}
	}
	if !ended {
		t.Fatalf("the tool did not run through replica 2: %+v", *evs)
	}
}

// slowLeases are LocalLeases whose release takes a while, as a database's
// can: a turn's lease outlives the end of its chat.send a little.
type slowLeases struct{ store.LocalLeases }

func (l *slowLeases) Acquire(ctx context.Context, id, owner string) (*store.Lease, error) {
	held, err := l.LocalLeases.Acquire(ctx, id, owner)
	if err != nil {
		return nil, err
	}
	return store.NewLease(id, owner, held.Token, nil, func(ctx context.Context) error {
		time.Sleep(20 * time.Millisecond)
		return held.Release(ctx)
	}), nil
}

func TestLease_PromptRightAfterCancelIsNotBusy(t *testing.T) {
	_, url := wsServer(t, &ServerOptions{Store: memory.New(), Leases: &slowLeases{}})
	c := dialStore(t, "", url)
	if err := c.Store().Create(t.Context(), testRecord("s1")); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	if err := c.SetExtraTools(t.Context(), "acp:s1", []*gateway.Tool{blockingTool(started)}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = c.Send(ctx, gateway.SendRequest{SessionKey: "acp:s1", Message: []gateway.Content{gateway.TextContent("/call wait {}")}}, func(gateway.Event) {})
		}()
		<-started
		cancel()
		<-done
		// The gateway may still be ending the cancelled turn: the next
		// prompt waits for it rather than being refused as busy.
		if _, err := c.Send(t.Context(), gateway.SendRequest{SessionKey: "acp:s1", Message: []gateway.Content{gateway.TextContent("/help")}}, func(gateway.Event) {}); err != nil {
			t.Fatalf("prompt %d right after a cancel: %v", i, err)
		}
	}
}

// heldStore holds each AppendTurn until release is closed.
type heldStore struct {
	store.Store
	release chan struct{}
}

func (h *heldStore) AppendTurn(ctx context.Context, id string, t store.Turn) error {
	<-h.release
	return h.Store.AppendTurn(ctx, id, t)
}

// A turn's response waits for its commit, fenced by the turn's lease, so
// a prompt answered is a turn stored; back-to-back turns both reach the
// store.
func TestLease_ResponseWaitsForTheTurnsCommit(t *testing.T) {
	leases := &store.LocalLeases{}
	backing := memory.New()
	_, url := wsServer(t, &ServerOptions{Store: backing, Leases: leases})
	c := dialStore(t, "", url)
	ctx := t.Context()
	held := &heldStore{Store: c.Store(), release: make(chan struct{})}
	h := session.NewHistory(held, nil)
	c.SetHistory(h)
	if err := held.Create(ctx, testRecord("s1")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Attach(ctx, "acp:s1", "s1"); err != nil {
		t.Fatal(err)
	}
	send := func() error {
		_, err := c.Send(ctx, gateway.SendRequest{SessionKey: "acp:s1", Message: []gateway.Content{gateway.TextContent("/help")}}, func(gateway.Event) {})
		return err
	}
	first := make(chan error, 1)
	go func() { first <- send() }() // its commit is held
	select {
	case err := <-first:
		t.Errorf("the turn was answered (%v) before its commit", err)
		first <- err
	case <-time.After(200 * time.Millisecond):
	}
	close(held.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := send(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if turns, err := backing.Turns(ctx, "s1"); err != nil || len(turns) != 2 {
		t.Fatalf("stored turns = %d, %v; want both (the first one's commit was fenced out)", len(turns), err)
	}
}
