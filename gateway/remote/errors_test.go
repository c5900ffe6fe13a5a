package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// errLeaky is the error of a failing store or lease connection in the
// errors tests: what a driver's error holds (the database's URL with a
// password, another tenant's scoped session key).
var errLeaky = errors.New("session store postgres://user:secret@db/x: reading tenant:bob|acp:bob-private: connection refused")

// secrets are what no error reaching alice may hold: the database's URL
// and password, and anything of bob's or any scoped key.
var secrets = []string{"postgres://", "secret", "db/x", "bob", "tenant:", "key:"}

// failingStore is a store whose methods fail with errLeaky while its mode
// says so: "all", or "turns" (Turns only).
type failingStore struct {
	store.Store
	mode atomic.Value // string
}

func (s *failingStore) fails(method string) bool {
	m, _ := s.mode.Load().(string)
	return m == "all" || m == method
}

func (s *failingStore) Create(ctx context.Context, r store.Record) error {
	if s.fails("all") {
		return errLeaky
	}
	return s.Store.Create(ctx, r)
}

func (s *failingStore) Get(ctx context.Context, id string) (store.Record, error) {
	if s.fails("all") {
		return store.Record{}, fmt.Errorf("get %s: %w", id, errLeaky)
	}
	return s.Store.Get(ctx, id)
}

func (s *failingStore) SetServers(ctx context.Context, id string, servers []store.Server) error {
	if s.fails("all") {
		return errLeaky
	}
	return s.Store.SetServers(ctx, id, servers)
}

func (s *failingStore) SetModel(ctx context.Context, id, model string) error {
	if s.fails("all") {
		return errLeaky
	}
	return s.Store.SetModel(ctx, id, model)
}

func (s *failingStore) List(ctx context.Context, opts store.ListOptions) ([]store.Record, string, error) {
	if s.fails("all") {
		return nil, "", errLeaky
	}
	return s.Store.List(ctx, opts)
}

func (s *failingStore) AppendTurn(ctx context.Context, id string, t store.Turn) error {
	if s.fails("all") {
		return errLeaky
	}
	return s.Store.AppendTurn(ctx, id, t)
}

func (s *failingStore) Turns(ctx context.Context, id string) ([]store.Turn, error) {
	if s.fails("turns") {
		return nil, errLeaky
	}
	return s.Store.Turns(ctx, id)
}

// failingLeases are LocalLeases whose Acquire fails with errLeaky while
// broken.
type failingLeases struct {
	store.LocalLeases
	broken atomic.Bool
}

func (l *failingLeases) Acquire(ctx context.Context, id, owner string) (*store.Lease, error) {
	if l.broken.Load() {
		return nil, fmt.Errorf("acquiring the lease of %s: %w", id, errLeaky)
	}
	return l.LocalLeases.Acquire(ctx, id, owner)
}

// syncBuffer is a bytes.Buffer safe for concurrent writes: a log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

var refPattern = regexp.MustCompile(`the session store failed \(ref ([0-9a-f]{8})\); see the gateway's log|failed \(ref ([0-9a-f]{8})\); see the gateway's log`)

// An error to one tenant reveals nothing of another's sessions, nor the
// store's URL: each error class a translator can provoke (its failing
// store and leases, another tenant's session, a busy session key) answers
// in the gateway's words, and a store's failure is logged whole under the
// reference the translator gets.
func TestTenants_ErrorsRevealNothingOfOthers(t *testing.T) {
	var log syncBuffer
	store := &failingStore{Store: memory.New()}
	leases := &failingLeases{}
	_, url := wsServer(t, &ServerOptions{Tokens: map[string]string{"tok-a": "alice", "tok-b": "bob"}, Store: store, Leases: leases,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	alice, bob := dialStore(t, "tok-a", url), dialStore(t, "tok-b", url)
	ctx := t.Context()
	if err := bob.Store().Create(ctx, testRecord("b1")); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	if err := bob.SetExtraTools(ctx, "acp:bob-private", []*gateway.Tool{blockingTool(started)}); err != nil {
		t.Fatal(err)
	}
	if err := alice.Store().Create(ctx, testRecord("a1")); err != nil {
		t.Fatal(err)
	}
	ap, err := alice.current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// call sends one request as alice and returns its error response.
	call := func(method string, params any) *RemoteError {
		t.Helper()
		err := ap.call(ctx, method, params, nil)
		var re *RemoteError
		if !errors.As(err, &re) {
			t.Fatalf("%s: %v; want an error response", method, err)
		}
		return re
	}
	// clean checks that alice's error holds no secret; logged, that the
	// store's error is in the gateway's log under its reference.
	clean := func(what string, re *RemoteError, logged bool) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(re.Message, s) {
				t.Errorf("%s: alice got %q, which holds %q", what, re.Message, s)
			}
		}
		if !logged {
			return
		}
		m := refPattern.FindStringSubmatch(re.Message)
		if m == nil {
			t.Errorf("%s: alice got %q; want the gateway's words and a reference to its log", what, re.Message)
			return
		}
		ref := m[1] + m[2]
		found := false
		for line := range strings.Lines(log.String()) {
			if strings.Contains(line, "ref="+ref) && strings.Contains(line, "postgres://user:secret@db/x") && strings.Contains(line, "tenant=alice") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no log line with ref %s, the tenant and the store's error:\n%s", what, ref, log.String())
		}
	}

	// Another tenant's session is a missing one; another tenant's key is
	// another key.
	missing := call("sessions.get", SessionIDParams{ID: "nope"})
	other := call("sessions.get", SessionIDParams{ID: "b1"})
	clean("sessions.get of bob's session", other, false)
	if other.Code != CodeNotFound || other.Message != missing.Message {
		t.Errorf("sessions.get of bob's session: %+v; want the answer of a missing one, %+v", other, missing)
	}
	for _, method := range []string{"sessions.turns", "sessions.setModel", "sessions.setServers", "sessions.appendTurn"} {
		clean(method+" of bob's session", call(method, SessionIDParams{ID: "b1"}), false)
	}
	re := call("chat.send", ChatSendParams{SessionKey: "acp:b1", RunID: "r1", SessionID: "b1", Message: []gateway.Content{gateway.TextContent("hi")}})
	clean("chat.send of bob's session", re, false)
	if re.Code != CodeForbidden {
		t.Errorf("chat.send of bob's session: %+v; want forbidden", re)
	}
	if err := alice.SetExtraTools(ctx, "acp:bob-private", nil); err != nil {
		t.Errorf("alice's own acp:bob-private: %v", err)
	}

	// A key busy with alice's own turn names her wire key only.
	aliceTwo := dialStore(t, "tok-a", url)
	if err := alice.SetExtraTools(ctx, "acp:k", []*gateway.Tool{blockingTool(started)}); err != nil {
		t.Fatal(err)
	}
	turnCtx, stopTurn := context.WithCancel(ctx)
	held := make(chan struct{})
	go func() {
		defer close(held)
		_, _ = alice.Send(turnCtx, gateway.SendRequest{SessionKey: "acp:k", Message: []gateway.Content{gateway.TextContent("/call wait {}")}}, func(gateway.Event) {})
	}()
	waitFor(t, started, "alice's held turn")
	p2, err := aliceTwo.current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = p2.call(ctx, "chat.send", ChatSendParams{SessionKey: "acp:k", RunID: "r2", Message: []gateway.Content{gateway.TextContent("hi")}}, nil)
	if !errors.As(err, &re) || re.Code != CodeBusy || !strings.Contains(re.Message, "session acp:k is running a turn") {
		t.Fatalf("a second chat.send of acp:k: %v; want busy", err)
	}
	clean("busy acp:k", re, false)
	stopTurn()
	<-held

	// The store fails: every method answers in the gateway's words.
	store.mode.Store("all")
	for _, tc := range []struct {
		method string
		params any
	}{
		{"sessions.create", SessionCreateParams{Record: wireRecord(testRecord("a2"))}},
		{"sessions.get", SessionIDParams{ID: "a1"}},
		{"sessions.list", SessionListParams{}},
		{"sessions.setServers", SessionSetServersParams{ID: "a1"}},
		{"sessions.setModel", SessionSetModelParams{ID: "a1", Model: "m"}},
		{"sessions.turns", SessionIDParams{ID: "a1"}},
		{"sessions.appendTurn", SessionAppendTurnParams{ID: "a1", Turn: wireTurn(userTurn("hi"))}},
		{"chat.send", ChatSendParams{SessionKey: "acp:a1", RunID: "r3", SessionID: "a1", Message: []gateway.Content{gateway.TextContent("hi")}}},
	} {
		re := call(tc.method, tc.params)
		clean(tc.method+" on a failing store", re, true)
		if re.Code != CodeInternal || !strings.HasPrefix(re.Message, tc.method+": the session store failed") {
			t.Errorf("%s on a failing store: %+v; want internal, naming the method and the store", tc.method, re)
		}
	}
	// Through the Client's Store, the error says as much.
	if _, err := alice.Store().Get(ctx, "a1"); err == nil || !strings.Contains(err.Error(), "the session store failed (ref ") {
		t.Errorf("Store().Get on a failing store: %v", err)
	}

	// Reading the stored history to check a turn's fails.
	store.mode.Store("turns")
	re = call("chat.send", ChatSendParams{SessionKey: "acp:a1", RunID: "r4", SessionID: "a1", Message: []gateway.Content{gateway.TextContent("hi")}})
	clean("chat.send checking the history on a failing store", re, true)

	// The leases fail.
	store.mode.Store("")
	leases.broken.Store(true)
	re = call("chat.send", ChatSendParams{SessionKey: "acp:a1", RunID: "r5", SessionID: "a1", Message: []gateway.Content{gateway.TextContent("hi")}})
	clean("chat.send with failing leases", re, true)
	if re.Code != CodeUnavailable || !strings.Contains(re.Message, "taking the lease of session a1") {
		t.Errorf("chat.send with failing leases: %+v; want unavailable, naming the session", re)
	}
	leases.broken.Store(false)
	if _, err := alice.Send(ctx, gateway.SendRequest{SessionKey: "acp:a1", Message: []gateway.Content{gateway.TextContent("/help")}}, func(gateway.Event) {}); err != nil {
		t.Fatalf("alice's turn once the store is back: %v", err)
	}
	// Bob's key and tools are untouched by all of it.
	if err := bob.SetExtraTools(ctx, "acp:bob-private", nil); err != nil {
		t.Fatal(err)
	}
}

// A store's failure is logged with what its operator can do about the
// store's file (store.ErrorText), and the translator gets the reference.
func TestStoreError_LogSaysWhatToDo(t *testing.T) {
	var log syncBuffer
	c := &serverConn{s: &Server{log: slog.New(slog.NewTextHandler(&log, nil))}}
	err := c.storeError("sessions.get", &store.FileError{Path: "/state/sessions.db", Err: store.ErrDamaged})
	if err == nil || !refPattern.MatchString(err.Error()) || strings.Contains(err.Error(), "sessions.db") {
		t.Errorf("storeError = %v, want a reference and nothing of the store", err)
	}
	if want := "session store /state/sessions.db: the database is damaged: move the file away"; !strings.Contains(log.String(), want) {
		t.Errorf("log:\n%s\nwant %q", log.String(), want)
	}
}
