package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/pgtest"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// openPG opens a store on url, closed when t ends.
func openPG(t *testing.T, url string) *Store {
	t.Helper()
	st, err := Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// pgExec runs sql on url on a connection of its own.
func pgExec(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	c, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(t.Context(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

func TestPostgres_MigratesFromEmptyAndOpensAgain(t *testing.T) {
	url := pgtest.Start(t)
	a := openPG(t, url)
	var v int
	if err := a.pool.QueryRow(t.Context(), `SELECT version FROM acp_schema_version`).Scan(&v); err != nil || v != SchemaVersion {
		t.Fatalf("schema version %d, %v; want %d", v, err, SchemaVersion)
	}
	for _, table := range []string{"sessions", "turns", "session_leases"} {
		var n int
		a.pool.QueryRow(t.Context(), `SELECT count(*) FROM information_schema.tables WHERE table_name = $1`, table).Scan(&n)
		if n != 1 {
			t.Errorf("table %s: %d", table, n)
		}
	}
	if err := a.Create(t.Context(), store.Record{ID: "s", Key: "acp:s", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetMode(t.Context(), "s", "read-only"); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b := openPG(t, url) // an up-to-date database opens as it is
	if r, err := b.Get(t.Context(), "s"); err != nil || r.Mode != "read-only" {
		t.Errorf("after reopening: mode %q, %v; want read-only", r.Mode, err)
	}
	var rows int
	b.pool.QueryRow(t.Context(), `SELECT count(*) FROM acp_schema_version`).Scan(&rows)
	if rows != 1 {
		t.Errorf("acp_schema_version has %d rows, want 1", rows)
	}
}

// upgraded makes a database of schema version v holding stmts (SQL of that
// version), opens it with this build and checks that it is now at
// SchemaVersion.
func upgraded(t *testing.T, v int, stmts ...string) *Store {
	t.Helper()
	url := pgtest.Start(t)
	old, err := open(t.Context(), url, nil, v)
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	for _, q := range stmts {
		pgExec(t, url, q)
	}
	st := openPG(t, url)
	var got int
	if err := st.pool.QueryRow(t.Context(), `SELECT version FROM acp_schema_version`).Scan(&got); err != nil || got != SchemaVersion {
		t.Fatalf("schema version %d, %v; want %d", got, err, SchemaVersion)
	}
	return st
}

// oldSession is the session every upgrade test finds after the upgrade.
const oldSession = `INSERT INTO sessions (id, gateway_key, cwd, title, created_at, updated_at) VALUES ('sess_old', 'acp:sess_old', '/w', 'old one', 1, 2)`

// A database of schema version 1 (before usage and compaction were kept)
// opens at the current version: its turns read zero usage and no
// compaction, its sessions zero usage, and new turns keep both.
func TestPostgres_MigratesSchemaVersion1(t *testing.T) {
	st := upgraded(t, 1,
		`INSERT INTO sessions (id, gateway_key, cwd, title, created_at, updated_at, turn_count) VALUES ('sess_old', 'acp:sess_old', '/w', 'old one', 1, 2, 1)`,
		`INSERT INTO turns (session_id, seq, messages, stop_reason) VALUES ('sess_old', 1, '[{"role":"user","content":[{"type":"text","text":"hi"}]}]', 'cancelled')`)
	turns, err := st.Turns(t.Context(), "sess_old")
	if err != nil || len(turns) != 1 || turns[0].StopReason != gateway.StopCancelled || turns[0].Messages[0].Content[0].Text != "hi" ||
		turns[0].Usage != (gateway.Usage{}) || turns[0].Compaction != nil {
		t.Fatalf("turns %+v, %v", turns, err)
	}
	storetest.CheckUsageAfterUpgrade(t, st)
}

// A database of schema version 2 (before modes were kept) opens at the
// current version with every session's mode "", and keeps modes set after.
func TestPostgres_MigratesSchemaVersion2(t *testing.T) {
	st := upgraded(t, 2, oldSession)
	var mode string
	if err := st.pool.QueryRow(t.Context(), `SELECT mode FROM sessions WHERE id = 'sess_old'`).Scan(&mode); err != nil || mode != "" {
		t.Fatalf("the old session's mode %q, %v; want \"\"", mode, err)
	}
	storetest.CheckModeAfterUpgrade(t, st)
}

// A database of schema version 3 (before server changes were kept) opens
// at the current version with none, and keeps those set after.
func TestPostgres_MigratesSchemaVersion3(t *testing.T) {
	st := upgraded(t, 3, oldSession)
	storetest.CheckServerChangesAfterUpgrade(t, st)
}

func TestPostgres_RefusesNewerSchema(t *testing.T) {
	url := pgtest.Start(t)
	openPG(t, url).Close()
	pgExec(t, url, `UPDATE acp_schema_version SET version = 99`)
	_, err := Open(t.Context(), url, nil)
	var schema *store.SchemaError
	if !errors.As(err, &schema) || *schema != (store.SchemaError{Have: 99, Want: SchemaVersion}) || !strings.Contains(err.Error(), "postgres:///") {
		t.Errorf("newer schema: %v; want a *store.SchemaError{99, %d} naming the database", err, SchemaVersion)
	}
	if err != nil && strings.Contains(err.Error(), "upgrade") {
		t.Errorf("newer schema: %v; what to do is the front end's", err)
	}
}

func TestPostgres_RefusesAPasswordInTheURL(t *testing.T) {
	for _, url := range []string{
		"postgres://app:s3cret@db.example/sessions",
		"postgresql://app:s3cret@db.example/sessions?sslmode=require",
		"postgres://db.example/sessions?user=app&password=s3cret",
	} {
		_, err := Open(t.Context(), url, nil)
		if !errors.Is(err, ErrPassword) || strings.Contains(err.Error(), "s3cret") || err.Error() != "session store: a PostgreSQL URL must not carry a password" {
			t.Errorf("%s: %v; want ErrPassword without the password (what to do is the front end's)", url, err)
		}
	}
	if err := CheckURL("postgres://app@db.example/sessions?sslmode=require"); err != nil {
		t.Errorf("a URL without a password: %v", err)
	}
}

// Two replicas on one database see each other's sessions and turns.
func TestPostgres_TwoStoresShareOneDatabase(t *testing.T) {
	url := pgtest.Start(t)
	a, b := openPG(t, url), openPG(t, url)
	ctx := t.Context()
	if err := a.Create(ctx, store.Record{ID: "s", Key: "acp:s", Cwd: "/w", Tenant: "t", Created: time.Now(), Updated: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendTurn(ctx, "s", turn("from b", "ok")); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendTurn(ctx, "s", turn("from a", "ok")); err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]*Store{"a": a, "b": b} {
		turns, err := st.Turns(ctx, "s")
		if err != nil || len(turns) != 2 || turns[0].Messages[0].Content[0].Text != "from b" {
			t.Errorf("%s: turns %+v, %v", name, turns, err)
		}
		recs, _, err := st.List(ctx, store.ListOptions{Tenant: "t"})
		if err != nil || len(recs) != 1 || recs[0].Title != "from b" {
			t.Errorf("%s: list %+v, %v", name, recs, err)
		}
	}
}

func TestPostgres_LeasesAcrossReplicas(t *testing.T) {
	url := pgtest.Start(t)
	a, b := openPG(t, url), openPG(t, url)
	ctx := t.Context()
	la, err := a.Acquire(ctx, "s", "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	var le *store.LeasedError
	if _, err := b.Acquire(ctx, "s", "replica-b"); !errors.As(err, &le) || le.Owner != "replica-a" || le.ID != "s" {
		t.Fatalf("second replica: %v; want *LeasedError naming replica-a", err)
	}
	// Advisory locks are reentrant on one connection: the store checks its own.
	if _, err := a.Acquire(ctx, "s", "replica-a/2"); !errors.As(err, &le) || le.Owner != "replica-a" {
		t.Fatalf("same replica again: %v; want *LeasedError", err)
	}
	other, err := b.Acquire(ctx, "other", "replica-b")
	if err != nil {
		t.Fatalf("another session: %v", err)
	}
	defer other.Release(ctx)
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctx, "s", "replica-b")
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	if lb.Token <= la.Token {
		t.Errorf("token %d after %d: want greater", lb.Token, la.Token)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	la2, err := a.Acquire(ctx, "s", "replica-a")
	if err != nil || la2.Token <= lb.Token {
		t.Fatalf("back to a: %v, token %d after %d", err, la2.Token, lb.Token)
	}
	la2.Release(ctx)
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := a.Acquire(done, "s", "replica-a"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Acquire: %v", err)
	}
	if l, err := b.Acquire(ctx, "s", "replica-b"); err != nil { // the cancelled one holds nothing
		t.Errorf("after a cancelled Acquire: %v", err)
	} else {
		l.Release(ctx)
	}
}

// leaseConnPID returns the backend pid of st's lease connection (opening it).
func leaseConnPID(t *testing.T, st *Store) uint32 {
	t.Helper()
	var pid uint32
	if err := st.leases.do(t.Context(), func(_ context.Context, c *pgx.Conn) error { pid = c.PgConn().PID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitLost waits for l.Lost, generously.
func waitLost(t *testing.T, l *store.Lease) {
	t.Helper()
	select {
	case <-l.Lost:
	case <-time.After(time.Minute):
		t.Fatalf("Lost of %s not closed within a minute", l.ID)
	}
}

// A replica whose connection breaks loses its leases (Lost closes) and
// another takes them; it reconnects for later Acquires.
func TestPostgres_LeaseLostWithItsConnection(t *testing.T) {
	url := pgtest.Start(t)
	a, b := openPG(t, url), openPG(t, url)
	ctx := t.Context()
	la, err := a.Acquire(ctx, "s", "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	la2, err := a.Acquire(ctx, "s2", "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-la.Lost:
		t.Fatal("Lost closed while the lease is held")
	default:
	}
	pgExec(t, url, `SELECT pg_terminate_backend($1, 60000)`, int32(leaseConnPID(t, a))) // returns once the backend, and its locks, are gone
	waitLost(t, la)
	waitLost(t, la2)
	lb, err := b.Acquire(ctx, "s", "replica-b")
	if err != nil || lb.Token <= la.Token {
		t.Fatalf("the other replica after the loss: %v (token %v after %d)", err, lb, la.Token)
	}
	if err := la.Release(ctx); err != nil { // lost already: nothing to do
		t.Errorf("releasing a lost lease: %v", err)
	}
	if _, err := b.Acquire(ctx, "s", "x"); err == nil {
		t.Error("releasing the lost lease freed the new holder's")
	}
	l3, err := a.Acquire(ctx, "s3", "replica-a") // a new connection
	if err != nil {
		t.Fatalf("acquiring after reconnecting: %v", err)
	}
	l3.Release(ctx)
}

// Closing a store gives up its leases at once.
func TestPostgres_CloseReleasesLeases(t *testing.T) {
	url := pgtest.Start(t)
	a, b := openPG(t, url), openPG(t, url)
	la, err := a.Acquire(t.Context(), "s", "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	waitLost(t, la)
	if _, err := b.Acquire(t.Context(), "s", "replica-b"); err != nil {
		t.Errorf("after the holder closed: %v", err)
	}
	if _, err := a.Acquire(t.Context(), "s", "replica-a"); err == nil {
		t.Error("a closed store acquired")
	}
}

func TestPostgres_AppendTurnFenced(t *testing.T) {
	url := pgtest.Start(t)
	a, b := openPG(t, url), openPG(t, url)
	ctx := t.Context()
	if err := a.Create(ctx, store.Record{ID: "s", Key: "acp:s", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendTurnFenced(ctx, "s", 1, turn("never leased", "x")); !errors.Is(err, store.ErrFenced) {
		t.Errorf("fenced write with no lease: %v; want ErrFenced", err)
	}
	la, err := a.Acquire(ctx, "s", "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	one := turn("one", "x")
	one.Usage, one.Compaction = gateway.Usage{InputTokens: 5, Requests: 1, Cost: 0.5}, &gateway.Compaction{Summary: "s", From: 0}
	if err := a.AppendTurnFenced(ctx, "s", la.Token, one); err != nil {
		t.Fatalf("fenced write under the lease: %v", err)
	}
	// a's connection breaks; b takes the lease; a's late write is refused.
	pgExec(t, url, `SELECT pg_terminate_backend($1, 60000)`, int32(leaseConnPID(t, a))) // returns once the backend, and its locks, are gone
	waitLost(t, la)
	lb, err := b.Acquire(ctx, "s", "replica-b")
	if err != nil {
		t.Fatal(err)
	}
	stale := turn("stale", "x")
	stale.Usage = gateway.Usage{InputTokens: 1000, Requests: 1}
	if err := a.AppendTurnFenced(ctx, "s", la.Token, stale); !errors.Is(err, store.ErrFenced) {
		t.Errorf("stale token: %v; want ErrFenced", err)
	}
	if err := b.AppendTurnFenced(ctx, "s", lb.Token, turn("two", "x")); err != nil {
		t.Fatal(err)
	}
	turns, err := b.Turns(ctx, "s")
	if err != nil || len(turns) != 2 || turns[0].Messages[0].Content[0].Text != "one" || turns[1].Messages[0].Content[0].Text != "two" {
		t.Errorf("turns = %+v, %v; want one and two, not the stale write", turns, err)
	}
	// The fenced statement keeps the turn's usage and compaction and adds
	// the usage to the session's; the stale write counted nothing.
	if len(turns) == 2 && (turns[0].Usage != one.Usage || !reflect.DeepEqual(turns[0].Compaction, one.Compaction)) {
		t.Errorf("fenced turn: usage %+v, compaction %+v", turns[0].Usage, turns[0].Compaction)
	}
	if rec, err := b.Get(ctx, "s"); err != nil || rec.Usage != one.Usage {
		t.Errorf("usage %+v, %v; want only the written turns', %+v", rec.Usage, err, one.Usage)
	}
	// Deleted and created again under its id, the session is leased above
	// every earlier token: a holder that lost its lease before the delete
	// still cannot write into the new session.
	_ = lb.Release(ctx)
	if err := b.Delete(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, store.Record{ID: "s", Key: "acp:s", Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	lc, err := b.Acquire(ctx, "s", "replica-b")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lc.Release(context.Background()) }()
	if lc.Token <= lb.Token {
		t.Errorf("token after delete and create %d, want above the deleted session's %d", lc.Token, lb.Token)
	}
	if err := a.AppendTurnFenced(ctx, "s", la.Token, stale); !errors.Is(err, store.ErrFenced) {
		t.Errorf("stale token into the new session: %v; want ErrFenced", err)
	}
}

// Replicas racing for one session's lease: never two holders at once, and
// each hold's token greater than every earlier one.
func TestPostgres_LeaseRaceHasOneHolder(t *testing.T) {
	url := pgtest.Start(t)
	replicas := []*Store{openPG(t, url), openPG(t, url)}
	var mu sync.Mutex
	holders, last, holds := 0, int64(0), 0
	var wg sync.WaitGroup
	for r, st := range replicas {
		for g := range 4 {
			wg.Go(func() {
				for range 15 {
					l, err := st.Acquire(context.Background(), "hot", fmt.Sprintf("r%d/%d", r, g))
					var le *store.LeasedError
					if errors.As(err, &le) {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					holders++
					if holders != 1 || l.Token <= last {
						t.Errorf("%d holders, token %d after %d", holders, l.Token, last)
					}
					last = l.Token
					holds++
					mu.Unlock()
					if _, err := st.pool.Exec(context.Background(), "SELECT pg_sleep(0.002)"); err != nil { // the turn's work
						t.Error(err)
					}
					mu.Lock()
					holders--
					mu.Unlock()
					if err := l.Release(context.Background()); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
	wg.Wait()
	if holds == 0 {
		t.Error("no goroutine ever held the lease")
	}
}

// BenchmarkPostgresAppendTurn is the per-turn commit on PostgreSQL over a
// Unix socket (the test server runs with fsync off: this measures the
// store's round trips, not a disk).
func BenchmarkPostgresAppendTurn(b *testing.B) {
	st, err := Open(b.Context(), pgtest.Start(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Create(b.Context(), store.Record{ID: "s", Key: "acp:s", Cwd: "/w"}); err != nil {
		b.Fatal(err)
	}
	tr := turn(`/call mcp__fixture__echo {"message":"hi"}`, "Echo: hi")
	for b.Loop() {
		if err := st.AppendTurn(b.Context(), "s", tr); err != nil {
			b.Fatal(err)
		}
	}
}

func turn(prompt, answer string) store.Turn {
	return store.Turn{StopReason: gateway.StopEndTurn, Messages: []gateway.Message{
		{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent(prompt)}},
		{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent(answer)}},
	}}
}
