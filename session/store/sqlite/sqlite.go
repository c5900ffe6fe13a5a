// Package sqlite is the embedded session store: one SQLite database file
// (pure Go, modernc.org/sqlite), shared by every agent process that opens
// it. [Open] checks and migrates the file; [DefaultPath] is where the agent
// keeps it unless told otherwise.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	driver "modernc.org/sqlite" // the pure-Go SQLite driver, "sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/internal/rows"
)

// migrations are the schema versions, applied in order; the schema version
// is the database's PRAGMA user_version. Append only: a released migration
// never changes. An array, so that SchemaVersion is a constant.
var migrations = [...]string{
	// 1: sessions and their turns.
	`CREATE TABLE sessions (
		id          TEXT PRIMARY KEY,
		gateway_key TEXT NOT NULL,
		cwd         TEXT NOT NULL,
		title       TEXT NOT NULL DEFAULT '',
		created_at  INTEGER NOT NULL,
		updated_at  INTEGER NOT NULL,
		servers     TEXT NOT NULL DEFAULT '[]'
	);
	CREATE TABLE turns (
		session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
		seq        INTEGER NOT NULL,
		messages   TEXT NOT NULL,
		PRIMARY KEY (session_id, seq)
	);`,
	// 2: stop reasons, and indexes for listing newest first by cwd.
	`ALTER TABLE turns ADD COLUMN stop_reason TEXT NOT NULL DEFAULT 'end_turn';
	CREATE INDEX sessions_updated ON sessions (updated_at DESC, id DESC);
	CREATE INDEX sessions_cwd_updated ON sessions (cwd, updated_at DESC, id DESC);`,
	// 3: the model each session uses ('' = the default model).
	`ALTER TABLE sessions ADD COLUMN model TEXT NOT NULL DEFAULT '';`,
	// 4: the tenant owning each session ('' = a local store's single
	// owner), and listing newest first within a tenant.
	`ALTER TABLE sessions ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
	DROP INDEX sessions_updated;
	DROP INDEX sessions_cwd_updated;
	CREATE INDEX sessions_tenant_updated ON sessions (tenant, updated_at DESC, id DESC);
	CREATE INDEX sessions_tenant_cwd_updated ON sessions (tenant, cwd, updated_at DESC, id DESC);`,
	// 5: each turn's usage and compaction (JSON text of gateway.Usage and
	// gateway.Compaction; NULL for none, as in every older turn), and each
	// session's usage total (the sum of its turns', one column per
	// gateway.Usage field, so that AppendTurn adds to it in place).
	`ALTER TABLE turns ADD COLUMN usage TEXT;
	ALTER TABLE turns ADD COLUMN compaction TEXT;
	ALTER TABLE sessions ADD COLUMN usage_input INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sessions ADD COLUMN usage_cache_read INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sessions ADD COLUMN usage_cache_write INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sessions ADD COLUMN usage_output INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sessions ADD COLUMN usage_thought INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sessions ADD COLUMN usage_requests INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sessions ADD COLUMN usage_cost REAL NOT NULL DEFAULT 0;
	ALTER TABLE sessions ADD COLUMN usage_unpriced INTEGER NOT NULL DEFAULT 0;`,
	// 6: the mode each session is in ('' = the configuration's default).
	`ALTER TABLE sessions ADD COLUMN mode TEXT NOT NULL DEFAULT '';`,
	// 7: the changes the user made to each session's servers (JSON text
	// of package session; '' = none).
	`ALTER TABLE sessions ADD COLUMN server_changes TEXT NOT NULL DEFAULT '';`,
}

// SchemaVersion is the schema version this build writes (the database's
// PRAGMA user_version after Open). A database with a higher version is
// refused.
const SchemaVersion = len(migrations)

// Store is the embedded session store: one SQLite database file (pure Go,
// modernc.org/sqlite), in WAL mode with a busy timeout, so several agent
// processes can share it. Safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string
	// touchTurn and insertTurn are AppendTurn's statements (touchTurnSQL,
	// insertTurnSQL), prepared once at open; database/sql keeps them per
	// connection. Nil on a store opened at an older schema (tests).
	touchTurn, insertTurn *sql.Stmt
}

// The statements of AppendTurn, the per-turn write: touchTurnSQL adds the
// turn's usage to the session's total in place (its arguments: the time,
// the title, usageArgs, the id).
const (
	touchTurnSQL = `UPDATE sessions SET updated_at = max(updated_at + 1, ?), title = CASE WHEN title = '' THEN ? ELSE title END,
		usage_input = usage_input + ?, usage_cache_read = usage_cache_read + ?, usage_cache_write = usage_cache_write + ?,
		usage_output = usage_output + ?, usage_thought = usage_thought + ?, usage_requests = usage_requests + ?,
		usage_cost = usage_cost + ?, usage_unpriced = usage_unpriced + ?
		WHERE id = ?`
	insertTurnSQL = `INSERT INTO turns (session_id, seq, messages, stop_reason, usage, compaction) VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM turns WHERE session_id = ?), ?, ?, ?, ?)`
)

var (
	_ store.Store      = (*Store)(nil)
	_ store.BatchStore = (*Store)(nil)
)

// DefaultPath returns $XDG_STATE_HOME/acp-agent/sessions.db, falling back to
// ~/.local/state/acp-agent/sessions.db.
func DefaultPath() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("session store: no XDG_STATE_HOME and no home directory: %w", err)
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "acp-agent", "sessions.db"), nil
}

// Open opens (creating if needed) the store at path, checks it with
// SQLite's quick_check and upgrades an older schema. A database that cannot
// be opened, is locked past the busy timeout, is damaged (not a database, or
// corrupt pages: store.ErrDamaged), or has a newer schema (a
// *store.SchemaError) is a *store.FileError naming the path and the cause;
// there is no silent fallback. Every later error of the store names the
// path too. What to do about them is the front end's to say
// (store.ErrorText).
func Open(ctx context.Context, path string) (*Store, error) {
	return open(ctx, path, SchemaVersion)
}

// open migrates up to version target (tests build older databases).
func open(ctx context.Context, path string, target int) (*Store, error) {
	fail := func(err error) (*Store, error) {
		if fe := (*store.FileError)(nil); errors.As(err, &fe) && fe.Path == path {
			return nil, err
		}
		return nil, &store.FileError{Path: path, Err: err}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fail(err)
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fail(err)
	}
	s := &Store{db: db, path: path}
	if err := s.check(ctx); err != nil {
		db.Close()
		return nil, s.wrap(err)
	}
	if err := s.migrate(ctx, target); err != nil {
		db.Close()
		return fail(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		db.Close()
		return fail(err)
	}
	if target == SchemaVersion {
		if s.touchTurn, err = db.PrepareContext(ctx, touchTurnSQL); err == nil {
			s.insertTurn, err = db.PrepareContext(ctx, insertTurnSQL)
		}
		if err != nil {
			db.Close()
			return fail(err)
		}
	}
	return s, nil
}

// execIn runs the prepared st in tx, or query when st is nil.
func execIn(ctx context.Context, tx *sql.Tx, st *sql.Stmt, query string, args ...any) (sql.Result, error) {
	if st == nil {
		return tx.ExecContext(ctx, query, args...)
	}
	return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}

// check runs PRAGMA quick_check: a damaged database is found at start, not
// by every later request.
func (s *Store) check(ctx context.Context) error {
	rs, err := s.db.QueryContext(ctx, "PRAGMA quick_check(5)")
	if err != nil {
		return fmt.Errorf("checking the database (quick_check): %w", err)
	}
	defer rs.Close()
	var problems []string
	for rs.Next() {
		var line string
		if err := rs.Scan(&line); err != nil {
			return fmt.Errorf("checking the database (quick_check): %w", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("checking the database (quick_check): %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: quick_check found: %s", store.ErrDamaged, strings.Join(problems, "; "))
	}
	return nil
}

// wrap names the database file in a store error (a *store.FileError) and
// marks a damaged database (store.ErrDamaged) and a file that cannot grow
// (store.ErrFull); store.ErrorText says what to do about them.
// store.ErrNotFound and store.ErrBadCursor pass unchanged: they are about
// the request, not the file.
func (s *Store) wrap(err error) error {
	var fe *store.FileError
	if err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrBadCursor) || errors.As(err, &fe) && fe.Path == s.path {
		return err
	}
	var se *driver.Error
	switch {
	case errors.Is(err, store.ErrDamaged): // check's finding: marked already
	case errors.As(err, &se) && (se.Code()&0xff == sqlite3.SQLITE_CORRUPT || se.Code()&0xff == sqlite3.SQLITE_NOTADB):
		err = fmt.Errorf("%w (%w)", store.ErrDamaged, err)
	case errors.As(err, &se) && (se.Code()&0xff == sqlite3.SQLITE_FULL || se.Code()&0xff == sqlite3.SQLITE_IOERR):
		err = fmt.Errorf("%w: %w", err, store.ErrFull)
	}
	return &store.FileError{Path: s.path, Err: err}
}

// migrate applies the missing migrations up to target, each in its own
// transaction with the version bump.
func (s *Store) migrate(ctx context.Context, target int) error {
	var version int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if version > SchemaVersion {
		return &store.SchemaError{Have: version, Want: SchemaVersion}
	}
	for v := version; v < target; v++ {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migrating to schema version %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrating to schema version %d: %w", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrating to schema version %d: %w", v+1, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migrating to schema version %d: %w", v+1, err)
		}
	}
	return nil
}

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// Close implements store.Store.
func (s *Store) Close() error {
	for _, st := range []*sql.Stmt{s.touchTurn, s.insertTurn} {
		if st != nil {
			_ = st.Close()
		}
	}
	return s.db.Close()
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, r store.Record) (err error) {
	defer func() { err = s.wrap(err) }()
	servers, err := json.Marshal(rows.OrEmpty(r.Servers))
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO sessions (id, gateway_key, cwd, title, created_at, updated_at, servers, model, mode, server_changes, tenant, `+rows.UsageColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		append([]any{r.ID, r.Key, r.Cwd, r.Title, r.Created.UnixMilli(), r.Updated.UnixMilli(), string(servers), r.Model, r.Mode, string(r.ServerChanges), r.Tenant}, rows.UsageArgs(r.Usage)...)...)
	return err
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Record, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+rows.RecordColumns+` FROM sessions WHERE id = ?`, id)
	r, err := rows.ScanRecord(row.Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Record{}, fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	return r, s.wrap(err)
}

// SetServers implements store.Store.
func (s *Store) SetServers(ctx context.Context, id string, servers []store.Server) (err error) {
	defer func() { err = s.wrap(err) }()
	b, err := json.Marshal(rows.OrEmpty(servers))
	if err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE sessions SET servers = ? WHERE id = ?`, string(b), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	return nil
}

// SetModel implements store.Store.
func (s *Store) SetModel(ctx context.Context, id, model string) (err error) {
	defer func() { err = s.wrap(err) }()
	res, err := s.db.ExecContext(ctx, `UPDATE sessions SET model = ? WHERE id = ?`, model, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	return nil
}

// SetServerChanges implements store.Store.
func (s *Store) SetServerChanges(ctx context.Context, id string, changes []byte) (err error) {
	defer func() { err = s.wrap(err) }()
	res, err := s.db.ExecContext(ctx, `UPDATE sessions SET server_changes = ? WHERE id = ?`, string(changes), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	return nil
}

// SetMode implements store.Store.
func (s *Store) SetMode(ctx context.Context, id, mode string) (err error) {
	defer func() { err = s.wrap(err) }()
	res, err := s.db.ExecContext(ctx, `UPDATE sessions SET mode = ? WHERE id = ?`, mode, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	return nil
}

// SetTitle implements store.Store.
func (s *Store) SetTitle(ctx context.Context, id, title string) (err error) {
	defer func() { err = s.wrap(err) }()
	res, err := s.db.ExecContext(ctx, `UPDATE sessions SET title = ? WHERE id = ?`, title, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	return nil
}

// Delete implements store.Store: the session's turns (with their usage
// and compaction) and its row, in one transaction. The turns are deleted
// by name, not left to ON DELETE CASCADE, which SQLite applies only with
// PRAGMA foreign_keys on.
func (s *Store) Delete(ctx context.Context, id string) (err error) {
	defer func() { err = s.wrap(err) }()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM turns WHERE session_id = ?`, id); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	return tx.Commit()
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, opts store.ListOptions) (_ []store.Record, _ string, err error) {
	defer func() { err = s.wrap(err) }()
	limit := opts.Limit
	if limit <= 0 {
		limit = 50
	}
	q := `SELECT ` + rows.RecordColumns + ` FROM sessions WHERE tenant = ?`
	args := []any{opts.Tenant}
	if opts.Cwd != "" {
		q += ` AND cwd = ?`
		args = append(args, opts.Cwd)
	}
	if opts.Cursor != "" {
		at, id, err := rows.DecodeCursor(opts.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (updated_at < ? OR (updated_at = ? AND id < ?))`
		args = append(args, at, at, id)
	}
	q += ` ORDER BY updated_at DESC, id DESC LIMIT ?`
	args = append(args, limit+1)
	rs, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	defer rs.Close()
	return rows.ReadPage(rs.Next, rs.Scan, rs.Err, limit)
}

// AppendTurn implements store.Store.
func (s *Store) AppendTurn(ctx context.Context, id string, turn store.Turn) error {
	return s.AppendTurns(ctx, []store.SessionTurn{{ID: id, Turn: turn}})
}

// AppendTurns implements store.BatchStore: the turns in one transaction,
// so one commit (and WAL write) for the batch.
func (s *Store) AppendTurns(ctx context.Context, batch []store.SessionTurn) (err error) {
	defer func() { err = s.wrap(err) }()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	now := time.Now().UnixMilli()
	for _, b := range batch {
		if err := s.appendIn(ctx, tx, now, b.ID, b.Turn); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// appendIn writes one turn of session id in tx.
func (s *Store) appendIn(ctx context.Context, tx *sql.Tx, now int64, id string, turn store.Turn) error {
	row, err := rows.EncodeTurn(id, turn)
	if err != nil {
		return err
	}
	title := ""
	if len(turn.Messages) > 0 && turn.Messages[0].Role == gateway.RoleUser {
		title = store.TitleFrom(turn.Messages[0].Content)
	}
	args := append(append([]any{now, title}, rows.UsageArgs(turn.Usage)...), id)
	res, err := execIn(ctx, tx, s.touchTurn, touchTurnSQL, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	_, err = execIn(ctx, tx, s.insertTurn, insertTurnSQL, id, id, row.Messages, string(turn.StopReason), row.Usage, row.Compaction)
	return err
}

// Turns implements store.Store.
func (s *Store) Turns(ctx context.Context, id string) (_ []store.Turn, err error) {
	defer func() { err = s.wrap(err) }()
	if _, err := s.Get(ctx, id); err != nil {
		return nil, err
	}
	rs, err := s.db.QueryContext(ctx, `SELECT `+rows.TurnColumns+` FROM turns WHERE session_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	return rows.ReadTurns(id, rs.Next, rs.Scan, rs.Err)
}
