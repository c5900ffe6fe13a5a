package remote

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
	"github.com/seed02d3eb6b/acp-agent/session/store/postgres"
)

// The fleet's rules, the same on every replica: two translators on one
// gateway, and two on two replicas of a fleet sharing a PostgreSQL store,
// take turns on one stored session.

// recModel is a model that answers each prompt "answer to <prompt>" and
// records the messages of each request it gets.
type recModel struct {
	mu       sync.Mutex
	requests [][]gateway.Message
}

func (*recModel) Name() string { return "rec" }

func (m *recModel) Complete(_ context.Context, req *gateway.Request, emit func(gateway.Event)) (*gateway.Response, error) {
	m.mu.Lock()
	m.requests = append(m.requests, slices.Clone(req.Messages))
	m.mu.Unlock()
	answer := "answer to " + gateway.PromptText(req.Messages[len(req.Messages)-1].Content)
	emit(gateway.Event{Kind: gateway.EventTextDelta, Text: answer})
	return &gateway.Response{Message: gateway.Message{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent(answer)}}}, nil
}

// lastRequest returns the texts of the messages of the model's latest
// request, oldest first.
func (m *recModel) lastRequest() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.requests) == 0 {
		return nil
	}
	return messageTexts(m.requests[len(m.requests)-1])
}

func messageTexts(msgs []gateway.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = gateway.PromptText(m.Content)
	}
	return out
}

// countedStore counts the Turns reads of a store (memory).
type countedStore struct {
	store.Store
	turns *atomic.Int64
}

func (s countedStore) Turns(ctx context.Context, id string) ([]store.Turn, error) {
	s.turns.Add(1)
	return s.Store.Turns(ctx, id)
}

// countedPostgres counts the Turns reads of a PostgreSQL store; it is still
// the fleet's Leases and a FencedStore.
type countedPostgres struct {
	*postgres.Store
	turns *atomic.Int64
}

func (s countedPostgres) Turns(ctx context.Context, id string) ([]store.Turn, error) {
	s.turns.Add(1)
	return s.Store.Turns(ctx, id)
}

// replicas is a gateway of one or two replicas, named replica-1 and
// replica-2, running turns on one recModel: translator A dials urls[0] and
// B urls[1] (the same URL with one replica).
type replicas struct {
	urls    [2]string
	servers []*Server
	model   *recModel
	turns   *atomic.Int64 // the Turns reads of the replicas' store
	store   store.Store   // what the replicas store, to check it
}

// replicaSetups are the gateways every fleet rule is checked on.
var replicaSetups = []struct {
	name  string
	start func(t *testing.T) *replicas
}{
	{"one replica, memory store", func(t *testing.T) *replicas {
		rs := &replicas{model: &recModel{}, turns: new(atomic.Int64)}
		rs.store = countedStore{Store: memory.New(), turns: rs.turns}
		url := rs.serve(t, rs.store, "replica-1")
		rs.urls = [2]string{url, url}
		return rs
	}},
	{"one replica, PostgreSQL", func(t *testing.T) *replicas {
		rs := &replicas{model: &recModel{}, turns: new(atomic.Int64)}
		rs.store = rs.openPostgres(t, pgtest.Start(t))
		url := rs.serve(t, rs.store, "replica-1")
		rs.urls = [2]string{url, url}
		return rs
	}},
	{"two replicas, PostgreSQL", func(t *testing.T) *replicas {
		rs := &replicas{model: &recModel{}, turns: new(atomic.Int64)}
		db := pgtest.Start(t)
		rs.store = rs.openPostgres(t, db)
		rs.urls = [2]string{rs.serve(t, rs.store, "replica-1"), rs.serve(t, rs.openPostgres(t, db), "replica-2")}
		return rs
	}},
}

// openPostgres opens the database at url as one replica's store (its own
// pool and lease connection), counting its Turns reads.
func (rs *replicas) openPostgres(t *testing.T, url string) store.Store {
	t.Helper()
	pg, err := postgres.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() }) // after the replica's shutdown
	return countedPostgres{Store: pg, turns: rs.turns}
}

// serve runs a replica on store named name and returns its URL.
func (rs *replicas) serve(t *testing.T, store store.Store, name string) string {
	t.Helper()
	local := runner.NewLocal(&runner.Options{Models: []gateway.Model{{ID: "rec", Label: "Rec", Provider: rs.model}}})
	srv := NewServer(local, &ServerOptions{Store: store, Replica: name})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		ts.Close()
	})
	rs.servers = append(rs.servers, srv)
	return "ws" + strings.TrimPrefix(ts.URL, "http")
}

// storedPrompts returns the first message (the prompt) of each stored turn
// of session id.
func (rs *replicas) storedPrompts(t *testing.T, id string) []string {
	t.Helper()
	turns, err := rs.store.Turns(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(turns))
	for i, turn := range turns {
		out[i] = gateway.PromptText(turn.Messages[0].Content)
	}
	return out
}

// translator is one translator as "acp-agent --gateway URL --store
// gateway" runs it: a Client with the sessions extension and a
// session.History over the gateway's store. Its tools: "where" answers
// the translator's name; "hold" tells started, then waits for release.
type translator struct {
	name    string
	c       *Client
	h       *session.History
	started chan struct{}
	release chan struct{}
	open    map[string]bool // the sessions open here
}

// newTranslator dials url; wrap, when not nil, wraps the store the
// translator's History writes through.
func newTranslator(t *testing.T, name, url string, wrap func(store.Store) store.Store) *translator {
	t.Helper()
	c := dialStore(t, "", url)
	st := c.Store()
	if wrap != nil {
		st = wrap(st)
	}
	h := session.NewHistory(st, nil)
	t.Cleanup(func() { h.Close() }) // before the client closes
	c.SetHistory(h)
	return &translator{name: name, c: c, h: h, started: make(chan struct{}, 1), release: make(chan struct{}), open: map[string]bool{}}
}

func (tr *translator) tools() []*gateway.Tool {
	where := &gateway.Tool{Name: "where", Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
		return gateway.Result{Content: []gateway.Content{gateway.TextContent(tr.name)}}, nil
	}}
	hold := &gateway.Tool{Name: "hold", Execute: func(ctx context.Context, _ string, _ map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
		tr.started <- struct{}{}
		select {
		case <-tr.release:
			return gateway.Result{Content: []gateway.Content{gateway.TextContent("released")}}, nil
		case <-ctx.Done():
			return gateway.Result{}, ctx.Err()
		}
	}}
	return []*gateway.Tool{where, hold}
}

// create stores a new session id and opens it.
func (tr *translator) create(t *testing.T, id string) {
	t.Helper()
	if err := tr.c.Store().Create(t.Context(), testRecord(id)); err != nil {
		t.Fatal(err)
	}
	tr.load(t, id)
}

// load opens the stored session id as session/load does (session.Core's
// open): its record, then, when it is open here already, the end of its
// live instance (its tools cleared, its history forgotten), then its
// history and its tools.
func (tr *translator) load(t *testing.T, id string) {
	t.Helper()
	ctx := t.Context()
	if _, err := tr.c.Store().Get(ctx, id); err != nil {
		t.Fatalf("%s: loading %s: %v", tr.name, id, err)
	}
	if tr.open[id] {
		if err := tr.c.ClearExtraTools(ctx, "acp:"+id); err != nil {
			t.Fatalf("%s: ending the live instance of %s: %v", tr.name, id, err)
		}
	}
	tr.open[id] = true
	if _, err := tr.h.Attach(ctx, "acp:"+id, id); err != nil {
		t.Fatalf("%s: loading %s: %v", tr.name, id, err)
	}
	if err := tr.c.SetExtraTools(ctx, "acp:"+id, tr.tools()); err != nil {
		t.Fatalf("%s: loading %s: %v", tr.name, id, err)
	}
}

// prompt runs a turn of session id and returns what the turn's tool calls
// answered.
func (tr *translator) prompt(ctx context.Context, id, text string) (toolResults []string, err error) {
	var mu sync.Mutex
	_, err = tr.c.Send(ctx, gateway.SendRequest{SessionKey: "acp:" + id, Message: []gateway.Content{gateway.TextContent(text)}}, func(e gateway.Event) {
		if e.Kind == gateway.EventToolEnd && e.Call != nil && len(e.Call.Result.Content) > 0 {
			mu.Lock()
			toolResults = append(toolResults, e.Call.Result.Content[0].Text)
			mu.Unlock()
		}
	})
	return toolResults, err
}

// where runs "/call where" in session id and returns whose tool answered.
func (tr *translator) where(t *testing.T, id string) string {
	t.Helper()
	res, err := tr.prompt(t.Context(), id, "/call where {}")
	if err != nil || len(res) != 1 {
		t.Fatalf("%s: /call where: %v, %v", tr.name, res, err)
	}
	return res[0]
}

// waitFor waits for ch or fails t when the test's context ends first.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-t.Context().Done():
		t.Fatalf("%s never happened", what)
	}
}

// busyS1 is the busy error of a prompt of session s1 while a turn of it
// runs on replica-1: the same on that replica and on another.
const busyS1 = "session s1 is running a turn on replica-1: wait for it to end (or cancel it there), then prompt again"

// Two translators take one session in turns: a load while it is idle or
// while a turn of it runs works, a prompt while a turn runs is busy with
// the same error, each turn runs with its own translator's tools, and the
// running turn keeps the tools it started with; on one replica as on two.
func TestFleet_LoadAndBusyAreTheSameOnEveryReplica(t *testing.T) {
	for _, setup := range replicaSetups {
		t.Run(setup.name, func(t *testing.T) {
			t.Parallel()
			rs := setup.start(t)
			a, b := newTranslator(t, "A", rs.urls[0], nil), newTranslator(t, "B", rs.urls[1], nil)
			a.create(t, "s1")
			if got := a.where(t, "s1"); got != "A" {
				t.Fatalf("A's turn ran %s's tool", got)
			}
			b.load(t, "s1") // while it is idle
			if got := b.where(t, "s1"); got != "B" {
				t.Fatalf("B's turn after its load ran %s's tool", got)
			}
			if got := a.where(t, "s1"); got != "A" {
				t.Fatalf("A's next turn ran %s's tool", got)
			}

			held := make(chan error, 1)
			go func() {
				_, err := a.prompt(t.Context(), "s1", "/call hold {}")
				held <- err
			}()
			waitFor(t, a.started, "A's held turn")
			b.load(t, "s1") // again, while A's turn runs: it works, as through another replica
			_, err := b.prompt(t.Context(), "s1", "/call where {}")
			var re *RemoteError
			if !errors.As(err, &re) || re.Code != CodeBusy || re.Message != busyS1 {
				t.Fatalf("B's prompt while A's turn runs: %v; want busy %q", err, busyS1)
			}
			// A's running turn still has A's tools on its replica.
			tool := rs.servers[0].local.Registry().Lookup("acp:s1", "where")
			if tool == nil {
				t.Fatal("A's running turn lost its tools")
			}
			if res, err := tool.Execute(t.Context(), "probe", map[string]any{}, nil); err != nil || res.Content[0].Text != "A" {
				t.Fatalf("A's running turn's where tool answers %+v, %v; want A's", res, err)
			}
			close(a.release)
			if err := <-held; err != nil {
				t.Fatalf("A's held turn: %v", err)
			}
			if got := b.where(t, "s1"); got != "B" {
				t.Fatalf("B's turn after A's ran %s's tool", got)
			}
			if got, want := rs.storedPrompts(t, "s1"), []string{"/call where {}", "/call where {}", "/call where {}", "/call hold {}", "/call where {}"}; !slices.Equal(got, want) {
				t.Fatalf("stored turns %q, want %q", got, want)
			}
		})
	}
}

// Two translators alternate on one session: each turn's model request
// holds every stored turn, the other translator's included, and a
// translator that ran and stored the session's last turn sends its next
// without the gateway reading the store.
func TestFleet_NextTurnSeesTheOtherTranslatorsTurn(t *testing.T) {
	for _, setup := range replicaSetups {
		t.Run(setup.name, func(t *testing.T) {
			t.Parallel()
			rs := setup.start(t)
			a, b := newTranslator(t, "A", rs.urls[0], nil), newTranslator(t, "B", rs.urls[1], nil)
			ctx := t.Context()
			prompt := func(tr *translator, text string) {
				t.Helper()
				if _, err := tr.prompt(ctx, "s1", text); err != nil {
					t.Fatalf("%s: %s: %v", tr.name, text, err)
				}
			}
			reads := func() int64 { return rs.turns.Load() }
			a.create(t, "s1")
			prompt(a, "A1")
			b.load(t, "s1")
			n := reads()
			prompt(b, "B1")
			// B's history, just loaded, is checked against the store (one
			// read) and found current: B reads nothing again.
			if d := reads() - n; d != 1 {
				t.Errorf("B's first turn after its load read the stored turns %d times, want 1", d)
			}
			n = reads()
			prompt(a, "A2")
			want := []string{"A1", "answer to A1", "B1", "answer to B1", "A2"}
			if got := rs.model.lastRequest(); !slices.Equal(got, want) {
				t.Fatalf("the model got %q for A's turn after B's; want %q", got, want)
			}
			// The gateway read the store, and A its history again.
			if d := reads() - n; d != 2 {
				t.Errorf("A's turn after B's read the stored turns %d times, want 2", d)
			}
			n = reads()
			prompt(a, "A3")
			want = []string{"A1", "answer to A1", "B1", "answer to B1", "A2", "answer to A2", "A3"}
			if got := rs.model.lastRequest(); !slices.Equal(got, want) {
				t.Fatalf("the model got %q for A's next turn; want %q", got, want)
			}
			if d := reads() - n; d != 0 {
				t.Errorf("A's turn after its own read the stored turns %d times, want none", d)
			}
			prompt(b, "B2")
			want = append(want, "answer to A3", "B2")
			if got := rs.model.lastRequest(); !slices.Equal(got, want) {
				t.Fatalf("the model got %q for B's turn after A's; want %q", got, want)
			}
			if got, want := messageTexts(a.h.View(ctx, "acp:s1").Messages), want[:len(want)-1]; !slices.Equal(got, want) {
				t.Errorf("A's history = %q, want %q", got, want)
			}
			if got, want := rs.storedPrompts(t, "s1"), []string{"A1", "B1", "A2", "A3", "B2"}; !slices.Equal(got, want) {
				t.Fatalf("stored turns %q, want %q", got, want)
			}
		})
	}
}

// gatedStore holds the turn writes of a translator's History while armed:
// each tells reached, then waits for release.
type gatedStore struct {
	store.Store
	armed   atomic.Bool
	reached chan struct{}
	release chan struct{}
}

func (g *gatedStore) AppendTurn(ctx context.Context, id string, turn store.Turn) error {
	if g.armed.Load() {
		g.reached <- struct{}{}
		<-g.release
	}
	return g.Store.AppendTurn(ctx, id, turn)
}

// A translator loses a race: another takes the session's lease between
// its turn and that turn's write, which is then fenced out. Its next turn
// holds the winner's turn, and not its own lost one.
func TestFleet_LoserOfARaceSeesTheWinnersTurn(t *testing.T) {
	for _, setup := range replicaSetups {
		t.Run(setup.name, func(t *testing.T) {
			t.Parallel()
			rs := setup.start(t)
			gate := &gatedStore{reached: make(chan struct{}, 1), release: make(chan struct{})}
			a := newTranslator(t, "A", rs.urls[0], func(st store.Store) store.Store { gate.Store = st; return gate })
			b := newTranslator(t, "B", rs.urls[1], nil)
			ctx := t.Context()
			a.create(t, "s1")
			if _, err := a.prompt(ctx, "s1", "A1"); err != nil {
				t.Fatal(err)
			}
			gate.armed.Store(true)
			lost := make(chan error, 1)
			go func() {
				_, err := a.prompt(ctx, "s1", "A2")
				lost <- err
			}()
			waitFor(t, gate.reached, "A2's write")
			b.load(t, "s1")
			if _, err := b.prompt(ctx, "s1", "B1"); err != nil {
				t.Fatal(err)
			}
			gate.armed.Store(false)
			close(gate.release)
			if err := <-lost; !errors.Is(err, store.ErrFenced) || !strings.Contains(err.Error(), "could not be stored") {
				t.Fatalf("A's turn whose write came after B's turn: %v; want it fenced out", err)
			}
			if _, err := a.prompt(ctx, "s1", "A3"); err != nil {
				t.Fatal(err)
			}
			want := []string{"A1", "answer to A1", "B1", "answer to B1", "A3"}
			if got := rs.model.lastRequest(); !slices.Equal(got, want) {
				t.Fatalf("the model got %q for A's turn after the lost race; want %q", got, want)
			}
			if got, want := rs.storedPrompts(t, "s1"), []string{"A1", "B1", "A3"}; !slices.Equal(got, want) {
				t.Fatalf("stored turns %q, want %q", got, want)
			}
		})
	}
}
