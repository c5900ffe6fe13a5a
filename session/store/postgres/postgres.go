// Package postgres is the session store of a gateway fleet: one PostgreSQL
// database shared by every replica (github.com/jackc/pgx/v5), which is also
// the fleet's [store.Leases] (PostgreSQL advisory locks) and a
// [store.FencedStore]. [Open] connects and migrates; [CheckURL] vets a URL
// without connecting.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/internal/rows"
)

// pgMigrations are the PostgreSQL schema versions, applied in order; the
// version is the one row of acp_schema_version. Append only: a released
// migration never changes. Version 1 is SQLite's schema version 4 (times
// in Unix milliseconds, messages and servers as JSON text) plus a turn
// count (the seq of the last turn) and the lease table; version 2 adds
// what SQLite's version 5 adds, version 3 what SQLite's version 6 adds, version 4 what its version 7 adds.
var pgMigrations = [...]string{
	// 1: sessions, their turns, and the fencing tokens of their leases.
	`CREATE TABLE sessions (
		id          TEXT PRIMARY KEY,
		gateway_key TEXT NOT NULL,
		cwd         TEXT NOT NULL,
		title       TEXT NOT NULL DEFAULT '',
		created_at  BIGINT NOT NULL,
		updated_at  BIGINT NOT NULL,
		servers     TEXT NOT NULL DEFAULT '[]',
		model       TEXT NOT NULL DEFAULT '',
		tenant      TEXT NOT NULL DEFAULT '',
		turn_count  INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX sessions_tenant_updated ON sessions (tenant, updated_at DESC, id DESC);
	CREATE INDEX sessions_tenant_cwd_updated ON sessions (tenant, cwd, updated_at DESC, id DESC);
	CREATE TABLE turns (
		session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
		seq         INTEGER NOT NULL,
		messages    TEXT NOT NULL,
		stop_reason TEXT NOT NULL DEFAULT 'end_turn',
		PRIMARY KEY (session_id, seq)
	);
	CREATE TABLE session_leases (
		session_id  TEXT PRIMARY KEY,
		token       BIGINT NOT NULL,
		owner       TEXT NOT NULL,
		acquired_at TIMESTAMPTZ NOT NULL
	);`,
	// 2: each turn's usage and compaction (JSON text of gateway.Usage and
	// gateway.Compaction; NULL for none, as in every older turn), and each
	// session's usage total (the sum of its turns', one column per
	// gateway.Usage field, so that AppendTurn adds to it in its statement).
	`ALTER TABLE turns ADD COLUMN usage TEXT, ADD COLUMN compaction TEXT;
	ALTER TABLE sessions
		ADD COLUMN usage_input BIGINT NOT NULL DEFAULT 0,
		ADD COLUMN usage_cache_read BIGINT NOT NULL DEFAULT 0,
		ADD COLUMN usage_cache_write BIGINT NOT NULL DEFAULT 0,
		ADD COLUMN usage_output BIGINT NOT NULL DEFAULT 0,
		ADD COLUMN usage_thought BIGINT NOT NULL DEFAULT 0,
		ADD COLUMN usage_requests BIGINT NOT NULL DEFAULT 0,
		ADD COLUMN usage_cost DOUBLE PRECISION NOT NULL DEFAULT 0,
		ADD COLUMN usage_unpriced BIGINT NOT NULL DEFAULT 0;`,
	// 3: the mode each session is in ('' = the configuration's default).
	`ALTER TABLE sessions ADD COLUMN mode TEXT NOT NULL DEFAULT '';`,
	// 4: the changes the user made to each session's servers (JSON text
	// of package session; '' = none).
	`ALTER TABLE sessions ADD COLUMN server_changes TEXT NOT NULL DEFAULT '';`,
}

// SchemaVersion is the PostgreSQL schema version this build writes
// (acp_schema_version after Open). A database with a higher version
// is refused.
const SchemaVersion = len(pgMigrations)

// migrateLockKey is the transaction-level advisory lock that serializes the
// migrations of replicas starting together ("acp-agent" in ASCII).
const migrateLockKey int64 = 0x6163702d6167656e

// Options configure Open. A nil *Options is valid.
type Options struct {
	// Logger receives the store's reports (lease connection lost and
	// reopened); nil discards them.
	Logger *slog.Logger
}

// Store is the session store of a gateway fleet: one PostgreSQL
// database shared by every replica (github.com/jackc/pgx/v5 with its pool).
// It keeps what the SQLite store (session/store/sqlite) keeps, with the
// same promises: each finished turn is committed in one transaction, so a
// crash loses at most the turn in progress. It is also the fleet's
// [store.Leases] and a [store.FencedStore] (see Acquire). Safe for
// concurrent use, by any number of processes on one database. The database
// should be acp-agent's own: the tables are named sessions, turns,
// session_leases and acp_schema_version.
type Store struct {
	pool   *pgxpool.Pool
	name   string // the URL, for errors and logs (it holds no password)
	leases *pgLeases
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.FencedStore = (*Store)(nil)
	_ store.Leases      = (*Store)(nil)
)

// ErrPassword: a PostgreSQL URL carries a password, which would end
// up in a config file, a process list or a log. The driver reads the
// password from PGPASSWORD or ~/.pgpass (PGPASSFILE) instead: saying so is
// the front end's part.
var ErrPassword = errors.New("a PostgreSQL URL must not carry a password")

// IsURL reports whether store names a PostgreSQL database
// (postgres:// or postgresql://) rather than a SQLite file.
func IsURL(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// CheckURL checks a postgres:// or postgresql:// URL without
// connecting: it must parse and must not carry a password (in the user
// info or a password parameter): ErrPassword.
func CheckURL(raw string) error {
	if !IsURL(raw) {
		return fmt.Errorf("%q is not a postgres:// or postgresql:// URL", redactURL(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("the PostgreSQL URL does not parse: %v", redactURL(raw))
	}
	if _, ok := u.User.Password(); ok || u.Query().Has("password") {
		return ErrPassword
	}
	if _, err := pgxpool.ParseConfig(raw); err != nil {
		return fmt.Errorf("PostgreSQL URL %s: %w", redactURL(raw), err)
	}
	return nil
}

// redactURL is raw with any password replaced, for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// Open connects to the PostgreSQL database at rawURL
// (postgres://[user@]host[:port]/db[?params] or postgresql://…; the
// password comes from PGPASSWORD or ~/.pgpass, never the URL:
// ErrPassword), creates or upgrades its schema (one transaction per
// migration, serialized across replicas by an advisory lock) and refuses a
// database whose schema is newer than this build's (a *store.SchemaError).
// Errors name the URL.
// Close releases the pool and the lease connection.
func Open(ctx context.Context, rawURL string, opts *Options) (*Store, error) {
	return open(ctx, rawURL, opts, SchemaVersion)
}

// open migrates up to version target (tests build older databases).
func open(ctx context.Context, rawURL string, opts *Options, target int) (*Store, error) {
	if err := CheckURL(rawURL); err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	name := redactURL(rawURL)
	fail := func(err error) (*Store, error) {
		return nil, fmt.Errorf("session store %s: %w", name, err)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return fail(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	s := &Store{pool: pool, name: name}
	if err := s.migrate(ctx, target); err != nil {
		pool.Close()
		return fail(err)
	}
	s.leases = newPgLeases(ctx, cfg.ConnConfig.Copy(), name, o.Logger)
	return s, nil
}

// migrate applies the missing migrations up to target in one transaction
// holding migrateLockKey.
func (s *Store) migrate(ctx context.Context, target int) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrateLockKey); err != nil {
		return fmt.Errorf("locking the schema for migration: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS acp_schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	version := 0
	err = tx.QueryRow(ctx, `SELECT version FROM acp_schema_version`).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		_, err = tx.Exec(ctx, `INSERT INTO acp_schema_version (version) VALUES (0)`)
	}
	if err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if version > SchemaVersion {
		return &store.SchemaError{Have: version, Want: SchemaVersion}
	}
	for v := version; v < target; v++ {
		if _, err := tx.Exec(ctx, pgMigrations[v]); err != nil {
			return fmt.Errorf("migrating to schema version %d: %w", v+1, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE acp_schema_version SET version = $1`, v+1); err != nil {
			return fmt.Errorf("migrating to schema version %d: %w", v+1, err)
		}
	}
	return tx.Commit(ctx)
}

// wrap names the database in a store error. store.ErrNotFound,
// store.ErrBadCursor and store.ErrFenced pass unchanged: they are about the
// request, not the database.
func (s *Store) wrap(err error) error {
	if err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrBadCursor) || errors.Is(err, store.ErrFenced) {
		return err
	}
	return fmt.Errorf("session store %s: %w", s.name, err)
}

// Name returns the database's URL (it holds no password).
func (s *Store) Name() string { return s.name }

// Close implements store.Store: it gives up every lease (closing the lease
// connection releases them server-side; their Lost channels close) and
// closes the pool. Later calls do nothing.
func (s *Store) Close() error {
	s.leases.close()
	s.pool.Close()
	return nil
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, r store.Record) error {
	servers, err := json.Marshal(rows.OrEmpty(r.Servers))
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO sessions (id, gateway_key, cwd, title, created_at, updated_at, servers, model, mode, server_changes, tenant, `+rows.UsageColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
		append([]any{r.ID, r.Key, r.Cwd, r.Title, r.Created.UnixMilli(), r.Updated.UnixMilli(), string(servers), r.Model, r.Mode, string(r.ServerChanges), r.Tenant}, rows.UsageArgs(r.Usage)...)...)
	return s.wrap(err)
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Record, error) {
	r, err := rows.ScanRecord(s.pool.QueryRow(ctx, `SELECT `+rows.RecordColumns+` FROM sessions WHERE id = $1`, id).Scan)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Record{}, fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	return r, s.wrap(err)
}

// update runs a one-row UPDATE of session id: store.ErrNotFound if no row.
func (s *Store) update(ctx context.Context, id, sql string, args ...any) error {
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return s.wrap(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	return nil
}

// SetServers implements store.Store.
func (s *Store) SetServers(ctx context.Context, id string, servers []store.Server) error {
	b, err := json.Marshal(rows.OrEmpty(servers))
	if err != nil {
		return err
	}
	return s.update(ctx, id, `UPDATE sessions SET servers = $1 WHERE id = $2`, string(b), id)
}

// SetModel implements store.Store.
func (s *Store) SetModel(ctx context.Context, id, model string) error {
	return s.update(ctx, id, `UPDATE sessions SET model = $1 WHERE id = $2`, model, id)
}

// SetServerChanges implements store.Store.
func (s *Store) SetServerChanges(ctx context.Context, id string, changes []byte) error {
	return s.update(ctx, id, `UPDATE sessions SET server_changes = $1 WHERE id = $2`, string(changes), id)
}

// SetMode implements store.Store.
func (s *Store) SetMode(ctx context.Context, id, mode string) error {
	return s.update(ctx, id, `UPDATE sessions SET mode = $1 WHERE id = $2`, mode, id)
}

// SetTitle implements store.Store.
func (s *Store) SetTitle(ctx context.Context, id, title string) error {
	return s.update(ctx, id, `UPDATE sessions SET title = $1 WHERE id = $2`, title, id)
}

// Delete implements store.Store: the session's turns (with their usage
// and compaction) and its sessions row, in one transaction. Its
// session_leases row stays: its token is the fence's high-water mark, so a
// session created again under the same id (mcp-server's keys, session.
// OpenRequest.Create) is leased above every token a stale holder may still
// write with. A lease a replica holds on it (an advisory lock) is not
// taken away: its fenced writes then find no session (the gateway takes
// the lease before it deletes: sessions.delete).
func (s *Store) Delete(ctx context.Context, id string) (err error) {
	defer func() { err = s.wrap(err) }()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `DELETE FROM turns WHERE session_id = $1`, id); err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `DELETE FROM sessions WHERE id = $1`, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	return tx.Commit(ctx)
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, opts store.ListOptions) (_ []store.Record, _ string, err error) {
	defer func() { err = s.wrap(err) }()
	limit := opts.Limit
	if limit <= 0 {
		limit = 50
	}
	q := `SELECT ` + rows.RecordColumns + ` FROM sessions WHERE tenant = $1`
	args := []any{opts.Tenant}
	if opts.Cwd != "" {
		args = append(args, opts.Cwd)
		q += fmt.Sprintf(` AND cwd = $%d`, len(args))
	}
	if opts.Cursor != "" {
		at, id, err := rows.DecodeCursor(opts.Cursor)
		if err != nil {
			return nil, "", err
		}
		args = append(args, at, id)
		q += fmt.Sprintf(` AND (updated_at, id) < ($%d, $%d)`, len(args)-1, len(args))
	}
	args = append(args, limit+1)
	q += fmt.Sprintf(` ORDER BY updated_at DESC, id DESC LIMIT $%d`, len(args))
	rs, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	defer rs.Close()
	return rows.ReadPage(rs.Next, rs.Scan, rs.Err, limit)
}

// AppendTurn implements store.Store.
func (s *Store) AppendTurn(ctx context.Context, id string, turn store.Turn) error {
	return s.appendTurn(ctx, id, turn, nil)
}

// AppendTurns implements store.BatchStore: the turns' statements sent in one
// round trip (pgx.Batch) and committed in one transaction, so one WAL
// flush for the batch.
func (s *Store) AppendTurns(ctx context.Context, batch []store.SessionTurn) (err error) {
	defer func() { err = s.wrap(err) }()
	b := &pgx.Batch{}
	now := time.Now()
	for _, t := range batch {
		if t.Turn.At.IsZero() {
			t.Turn.At = now
		}
		q, args, err := appendTurnArgs(t.ID, t.Turn, nil)
		if err != nil {
			return err
		}
		b.Queue(q, args...)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		br := tx.SendBatch(ctx, b)
		for _, t := range batch {
			tag, err := br.Exec()
			if err != nil {
				_ = br.Close()
				return err
			}
			if tag.RowsAffected() != 1 {
				_ = br.Close()
				return fmt.Errorf("%w: %q", store.ErrNotFound, t.ID)
			}
		}
		return br.Close()
	})
}

// AppendTurnFenced implements store.FencedStore: in the turn's statement (one
// transaction), the session's session_leases row is read FOR SHARE (a
// later Acquire's token bump waits for the commit) and the turn is written
// only if its token is token; else store.ErrFenced (store.ErrNotFound for
// an unknown session) and nothing is written.
func (s *Store) AppendTurnFenced(ctx context.Context, id string, token int64, turn store.Turn) error {
	return s.appendTurn(ctx, id, turn, &token)
}

// appendTurnSQL writes a turn in one statement, so one round trip and one
// transaction: the session row's UPDATE bumps turn_count and adds the
// turn's usage to the session's total (a concurrent append to the session
// waits for its row lock and then sees the new count and total), and the
// turn is inserted with that count as its seq. No row: the session does
// not exist. fencedTurnSQL adds the fence: the session's session_leases row
// must hold the token ($16), read FOR SHARE, so a later Acquire's token
// bump waits for this commit and a bump before it leaves no row. The
// arguments: $1 the id, $2 the time, $3 the title, $4 to $7 the turn's row
// (messages, stop reason, usage, compaction), $8 to $15 usageArgs.
const (
	pgTouchTurn = `UPDATE sessions SET updated_at = greatest(updated_at + 1, $2), title = CASE WHEN title = '' THEN $3 ELSE title END, turn_count = turn_count + 1,
		usage_input = usage_input + $8, usage_cache_read = usage_cache_read + $9, usage_cache_write = usage_cache_write + $10,
		usage_output = usage_output + $11, usage_thought = usage_thought + $12, usage_requests = usage_requests + $13,
		usage_cost = usage_cost + $14, usage_unpriced = usage_unpriced + $15`
	pgInsertTurn  = `INSERT INTO turns (session_id, seq, messages, stop_reason, usage, compaction) SELECT id, turn_count, $4, $5, $6, $7 FROM u`
	appendTurnSQL = `WITH u AS (` + pgTouchTurn + `
		WHERE id = $1 RETURNING id, turn_count)
	` + pgInsertTurn
	fencedTurnSQL = `WITH l AS (SELECT 1 FROM session_leases WHERE session_id = $1 AND token = $16 FOR SHARE),
	u AS (` + pgTouchTurn + `
		WHERE id = $1 AND EXISTS (SELECT 1 FROM l) RETURNING id, turn_count)
	` + pgInsertTurn
)

// appendTurn writes turn, fenced by *token if not nil.
func (s *Store) appendTurn(ctx context.Context, id string, turn store.Turn, token *int64) (err error) {
	defer func() { err = s.wrap(err) }()
	q, args, err := appendTurnArgs(id, turn, token)
	if err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, q, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	if token != nil { // fenced, or no such session?
		if _, err := s.Get(ctx, id); err != nil {
			return err
		}
		return fmt.Errorf("session %s, token %d: %w", id, *token, store.ErrFenced)
	}
	return fmt.Errorf("%w: %q", store.ErrNotFound, id)
}

// appendTurnArgs returns the statement and arguments that append turn to
// session id at now (Unix ms), fenced by *token if not nil.
func appendTurnArgs(id string, turn store.Turn, token *int64) (string, []any, error) {
	row, err := rows.EncodeTurn(id, turn)
	if err != nil {
		return "", nil, err
	}
	q := appendTurnSQL
	args := append([]any{id, rows.AtMillis(turn), turn.Title(), row.Messages, string(turn.StopReason), row.Usage, row.Compaction}, rows.UsageArgs(turn.Usage)...)
	if token != nil {
		q, args = fencedTurnSQL, append(args, *token)
	}
	return q, args, nil
}

// Turns implements store.Store.
func (s *Store) Turns(ctx context.Context, id string) (_ []store.Turn, err error) {
	defer func() { err = s.wrap(err) }()
	if _, err := s.Get(ctx, id); err != nil {
		return nil, err
	}
	rs, err := s.pool.Query(ctx, `SELECT `+rows.TurnColumns+` FROM turns WHERE session_id = $1 ORDER BY seq`, id)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	return rows.ReadTurns(id, rs.Next, rs.Scan, rs.Err)
}
