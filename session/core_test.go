package session

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// recordingGateway is a runner.Local that records, in order, the calls of
// interest to the lifecycle tests.
type recordingGateway struct {
	gateway.Gateway
	mu    sync.Mutex
	calls []string
}

func (g *recordingGateway) record(s string) {
	g.mu.Lock()
	g.calls = append(g.calls, s)
	g.mu.Unlock()
}

func (g *recordingGateway) log() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.calls...)
}

func (g *recordingGateway) SetExtraTools(ctx context.Context, key string, tools []*gateway.Tool) error {
	g.record("set " + key)
	return g.Gateway.SetExtraTools(ctx, key, tools)
}

func (g *recordingGateway) ClearExtraTools(ctx context.Context, key string) error {
	g.record("clear " + key)
	return g.Gateway.ClearExtraTools(ctx, key)
}

// newTestCore returns a Core over an in-memory store whose gateway offers
// the models "direct" (the default) and "other".
func newTestCore(t *testing.T, opts CoreOptions) (*Core, *recordingGateway) {
	t.Helper()
	st := memory.New()
	history := NewHistory(st, nil)
	gw := &recordingGateway{Gateway: runner.NewLocal(&runner.Options{History: history, Models: []gateway.Model{
		{ID: runner.DirectModelID, Label: "Direct", Provider: runner.NewDirect()},
		{ID: "other", Label: "Other", Provider: runner.NewDirect()},
	}})}
	opts.Gateway, opts.Store, opts.History = gw, st, history
	c := NewCore(&opts)
	t.Cleanup(c.Shutdown)
	return c, gw
}

func TestCore_OpenVetsTheRequest(t *testing.T) {
	c, _ := newTestCore(t, CoreOptions{
		Bridge:         bridge.Options{Limits: quota.Limits{ServersPerSession: 2}},
		DefaultServers: []bridge.ServerSpec{{Name: "a", Transport: bridge.TransportStdio, Command: "x"}, {Name: "b", Transport: bridge.TransportStdio, Command: "x"}},
	})
	file := t.TempDir() + "/f"
	if err := writeFile(file); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cwd, want string
		servers         []bridge.ServerSpec
	}{
		{"relative cwd", "rel", `cwd "rel" must be an absolute path`, nil},
		{"missing cwd", "/nonexistent/dir", `cwd "/nonexistent/dir" does not exist`, nil},
		{"file cwd", file, `is not a directory`, nil},
		{"quota", t.TempDir(), "3 servers (1 from the request, 2 default servers from the config) exceed the limit of 2",
			[]bridge.ServerSpec{{Name: "c", Transport: bridge.TransportStdio, Command: "x"}}},
	} {
		_, err := c.Open(t.Context(), OpenRequest{Cwd: tc.cwd, Servers: tc.servers})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Open = %v, want ErrInvalid saying %q", tc.name, err, tc.want)
		}
	}
	// A session entry replaces the default of the same name: 2 servers.
	s, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir(), Servers: []bridge.ServerSpec{{Name: "a", Transport: "http", URL: "http://127.0.0.1:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Servers()); got != 2 {
		t.Errorf("servers = %d, want 2 (a replaced, b)", got)
	}
	recs, _, err := c.Store().List(t.Context(), store.ListOptions{})
	if err != nil || len(recs) != 1 || recs[0].ID != s.ID() || recs[0].Key != "acp:"+s.ID() {
		t.Errorf("stored = %+v, %v; want only the opened session, keyed acp:<id>", recs, err)
	}
}

// TestCore_OpenCreateUnderAnID: Create makes a new session under the ID
// given, which a plain Open then reopens; the ID must be new and well-formed.
func TestCore_OpenCreateUnderAnID(t *testing.T) {
	c, _ := newTestCore(t, CoreOptions{})
	s, err := c.Open(t.Context(), OpenRequest{ID: "mcp_chosen-1", Create: true, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := c.Store().Get(t.Context(), "mcp_chosen-1")
	if err != nil || s.ID() != "mcp_chosen-1" || rec.Key != "acp:mcp_chosen-1" {
		t.Fatalf("created %q, stored %+v, %v; want the session stored under mcp_chosen-1", s.ID(), rec, err)
	}
	s.End()
	if _, err := c.Open(t.Context(), OpenRequest{ID: "mcp_chosen-1", Create: true, Cwd: t.TempDir()}); err == nil || errors.Is(err, ErrInvalid) {
		t.Errorf("Create of a stored ID = %v, want the store's error", err)
	}
	if s, err := c.Open(t.Context(), OpenRequest{ID: "mcp_chosen-1", Cwd: t.TempDir()}); err != nil || s.ID() != "mcp_chosen-1" {
		t.Errorf("reopen of the created session = %v", err)
	}
	for _, id := range []string{"", "has space", "ünïcode", "a/b", strings.Repeat("x", 65)} {
		if _, err := c.Open(t.Context(), OpenRequest{ID: id, Create: true, Cwd: t.TempDir()}); !errors.Is(err, ErrInvalid) {
			t.Errorf("Create with ID %q = %v, want ErrInvalid", id, err)
		}
	}
}

// blockingClearGateway holds the first ClearExtraTools until release is
// closed, so that an End is caught in the middle of its teardown.
type blockingClearGateway struct {
	*recordingGateway
	once     sync.Once
	clearing chan struct{} // closed when the first ClearExtraTools is held
	release  chan struct{}
}

func (g *blockingClearGateway) ClearExtraTools(ctx context.Context, key string) error {
	g.once.Do(func() {
		close(g.clearing)
		<-g.release
	})
	return g.recordingGateway.ClearExtraTools(ctx, key)
}

// TestCore_ReopenWaitsForTheEndingInstance: a session reopened (by another
// connection) while its old instance's End is still tearing down waits for
// that teardown, which would otherwise clear the new instance's tools and
// detach its history (the key is the same).
func TestCore_ReopenWaitsForTheEndingInstance(t *testing.T) {
	st := memory.New()
	history := NewHistory(st, nil)
	rec := &recordingGateway{Gateway: runner.NewLocal(&runner.Options{History: history})}
	gw := &blockingClearGateway{recordingGateway: rec, clearing: make(chan struct{}), release: make(chan struct{})}
	c := NewCore(&CoreOptions{Gateway: gw, Store: st, History: history})
	t.Cleanup(c.Shutdown)
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(gw.release) }) }
	t.Cleanup(release) // before Shutdown, which would wait for the held End
	waiting := make(chan struct{}, 1)
	c.waitingForEnd = func() { waiting <- struct{}{} }

	old, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { defer close(ended); old.End() }() // the old connection's end
	<-gw.clearing

	type opened struct {
		s   *Session
		err error
	}
	reopened := make(chan opened, 1)
	go func() {
		s, err := c.Open(t.Context(), OpenRequest{ID: old.ID(), Cwd: t.TempDir()})
		reopened <- opened{s, err}
	}()
	select {
	case <-waiting:
	case r := <-reopened:
		t.Fatalf("the reopen (%v) did not wait for the old instance's teardown", r.err)
	}
	release()
	<-ended
	r := <-reopened
	if r.err != nil {
		t.Fatal(r.err)
	}
	log := rec.log()
	if last := log[len(log)-1]; last != "set "+r.s.Key() {
		t.Errorf("gateway calls %q: the new instance's tools are not the last word", log)
	}
	if _, err := r.s.Turn(t.Context(), func(context.Context) (gateway.StopReason, error) { return gateway.StopEndTurn, nil }); err != nil {
		t.Errorf("a turn of the reopened session = %v", err)
	}
}

func TestCore_KeyInUseUntilEnd(t *testing.T) {
	c, _ := newTestCore(t, CoreOptions{})
	s, err := c.Open(t.Context(), OpenRequest{Key: "k", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var ke *KeyInUseError
	_, err = c.Open(t.Context(), OpenRequest{Key: "k", Cwd: t.TempDir()})
	if !errors.As(err, &ke) || ke.Key != "k" || !errors.Is(err, ErrInvalid) {
		t.Fatalf("second Open with key k = %v, want a KeyInUseError wrapping ErrInvalid", err)
	}
	if !c.Close(s.ID()) || c.Close(s.ID()) {
		t.Error("Close: want true for the live session, then false")
	}
	if _, err := c.Open(t.Context(), OpenRequest{Key: "k", Cwd: t.TempDir()}); err != nil {
		t.Errorf("Open with key k after End = %v", err)
	}
}

func TestCore_ReopenEndsTheLiveInstance(t *testing.T) {
	c, _ := newTestCore(t, CoreOptions{})
	if _, err := c.Open(t.Context(), OpenRequest{ID: "sess_missing", Cwd: t.TempDir()}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("reopen of an unknown ID = %v, want ErrNotFound", err)
	}
	old, err := c.Open(t.Context(), OpenRequest{Key: "k", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.SetModel(t.Context(), "other"); err != nil {
		t.Fatal(err)
	}
	var replayed bool
	s, err := c.Open(t.Context(), OpenRequest{ID: old.ID(), Key: "ignored", Cwd: t.TempDir(), Replay: func([]store.Turn) { replayed = true }})
	if err != nil {
		t.Fatal(err)
	}
	if s == old || c.Lookup(old.ID()) != s || s.Key() != "k" || !replayed {
		t.Errorf("reopen: same=%v live=%v key=%q replayed=%v; want a new live instance with the stored key, replayed", s == old, c.Lookup(old.ID()) == s, s.Key(), replayed)
	}
	if s.Model() != "other" {
		t.Errorf("reopened model = %q, want the stored %q", s.Model(), "other")
	}
	if _, err := old.Turn(t.Context(), func(context.Context) (gateway.StopReason, error) { return gateway.StopEndTurn, nil }); !errors.Is(err, ErrEnded) {
		t.Errorf("turn of the replaced instance = %v, want ErrEnded", err)
	}
}

func TestSession_SetModel(t *testing.T) {
	c, _ := newTestCore(t, CoreOptions{})
	s, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if s.Model() != runner.DirectModelID {
		t.Errorf("model = %q, want the default %q", s.Model(), runner.DirectModelID)
	}
	if err := s.SetModel(t.Context(), "nope"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `unknown model "nope" (the models are: direct, other)`) {
		t.Errorf("SetModel(nope) = %v", err)
	}
	if err := s.SetModel(t.Context(), "other"); err != nil {
		t.Fatal(err)
	}
	rec, err := c.Store().Get(t.Context(), s.ID())
	if err != nil || rec.Model != "other" || s.Model() != "other" {
		t.Errorf("after SetModel(other): stored %q (%v), live %q", rec.Model, err, s.Model())
	}
}

// End cancels the running turn and waits for it before it tears the
// session down; it is idempotent, and concurrent calls all wait.
func TestSession_EndCancelsTheTurnFirst(t *testing.T) {
	c, gw := newTestCore(t, CoreOptions{})
	s, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	turnErr := make(chan error, 1)
	go func() {
		_, err := s.Turn(context.Background(), func(ctx context.Context) (gateway.StopReason, error) {
			close(started)
			<-ctx.Done()
			gw.record("turn returned")
			return gateway.StopCancelled, nil
		})
		turnErr <- err
	}()
	<-started
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(s.End)
	}
	wg.Wait()
	want := []string{"set " + s.Key(), "turn returned", "clear " + s.Key()}
	if got := gw.log(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("calls = %q, want %q (the turn ends before the teardown, once)", got, want)
	}
	select {
	case err := <-turnErr:
		if err != nil {
			t.Errorf("cancelled turn = %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the turn did not return")
	}
	if c.Lookup(s.ID()) != nil {
		t.Error("the ended session is still live")
	}
}

func TestSession_CancelEndsOnlyTheTurn(t *testing.T) {
	c, _ := newTestCore(t, CoreOptions{})
	s, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	go func() { <-started; s.Cancel() }()
	stop, err := s.Turn(t.Context(), func(ctx context.Context) (gateway.StopReason, error) {
		close(started)
		<-ctx.Done()
		return gateway.StopCancelled, nil
	})
	if stop != gateway.StopCancelled || err != nil {
		t.Errorf("cancelled turn = %q, %v", stop, err)
	}
	stop, err = s.Prompt(t.Context(), PromptRequest{Content: []gateway.Content{{Type: gateway.ContentText, Text: "/help"}}})
	if stop != gateway.StopEndTurn || err != nil {
		t.Errorf("next turn = %q, %v; want end_turn: the session goes on", stop, err)
	}
}

func TestCore_ShutdownRefusesNewSessions(t *testing.T) {
	c, gw := newTestCore(t, CoreOptions{})
	s, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	c.Shutdown()
	c.Shutdown()
	if c.Lookup(s.ID()) != nil || !strings.Contains(strings.Join(gw.log(), "|"), "clear "+s.Key()) {
		t.Errorf("after Shutdown: live=%v calls=%q", c.Lookup(s.ID()) != nil, gw.log())
	}
	if _, err := c.Open(t.Context(), OpenRequest{Cwd: t.TempDir()}); !errors.Is(err, ErrClosed) {
		t.Errorf("Open after Shutdown = %v, want ErrClosed", err)
	}
}

func writeFile(name string) error { return os.WriteFile(name, []byte("x"), 0o600) }
