// Package sqlite is the embedded session store: one SQLite database file
// (pure Go, modernc.org/sqlite), shared by every agent process that opens
// it. [Open] checks and migrates the file; [DefaultPath] is where the agent
// keeps it unless told otherwise.
package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	// 8: a turn is stored in two steps (AppendTurns): its row first, with
	// the time it was stored (Unix ms; 0 in older turns), then its session's
	// record (updated time, title, usage total), up to applied_seq, the seq
	// of the last turn folded into it; every older turn is.
	`ALTER TABLE turns ADD COLUMN at INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sessions ADD COLUMN applied_seq INTEGER NOT NULL DEFAULT 0;
	UPDATE sessions SET applied_seq = (SELECT coalesce(max(seq), 0) FROM turns WHERE session_id = sessions.id);`,
}

// SchemaVersion is the schema version this build writes (the database's
// PRAGMA user_version after Open). A database with a higher version is
// refused.
const SchemaVersion = len(migrations)

// Store is the embedded session store: one SQLite database file (pure Go,
// modernc.org/sqlite), in WAL mode with a busy timeout, so several agent
// processes can share it. Safe for concurrent use.
//
// A turn is stored in two steps. AppendTurns inserts the turns' rows and
// returns once they are committed: that is all a crash must not lose, and
// inserting one row is the cheapest durable write. The sessions' records
// (updated time, title, usage total) follow in a transaction of their own
// on one goroutine that runs while turns come (applyLoop);
// every read of a record (Get, List, Turns) waits for the turns appended
// before it, so a reader sees its writes. A session's applied_seq says how
// many of its turns its record holds: a record left behind by a crash
// between the two steps, or by a failed second step, is caught up from its
// turns at the next Open and at the session's next turn (catchUp). Writes
// of one process go through one writer lock, so they never wait on
// SQLite's busy timeout for each other.
type Store struct {
	db   *sql.DB // reads (and the writes of a store opened at an older schema: tests)
	path string

	// wmu serializes this process's writes, on w, the writer connection:
	// its statements are prepared once, on it, at open (the begin, commit
	// and rollback of a transaction too, where database/sql would parse
	// them each time); insertTurn is a turn's first step (insertTurnSQL),
	// turnSeq and applyTurns its second (turnSeqSQL, applyTurnsSQL). All nil on a store opened at an older
	// schema (tests).
	wmu                                                      sync.Mutex
	w                                                        *sql.Conn
	begin, commit, rollback, insertTurn, turnSeq, applyTurns *sql.Stmt

	amu sync.Mutex // guards queued, last, started and closed
	// queued are the turns inserted and not yet folded into their
	// records; nil when none.
	queued *applyBatch
	// last is closed once the last batch queued is applied (nil: none
	// queued since Open).
	last chan struct{}
	// started is set while applyLoop runs: AppendTurns starts it when
	// none runs; woken by wake (one signal buffered), it returns once idle
	// for applierIdle, or at Close (stop). It outlives a burst of turns: a
	// new goroutine per turn grew its stack through SQLite's deep calls
	// every time.
	started, closed    bool
	wake, urgent, stop chan struct{}
	appliers           sync.WaitGroup
}

// applyBatch is the inserted turns applyLoop folds into their records at
// once; done is closed when it has.
type applyBatch struct {
	turns []applied
	done  chan struct{}
}

// applied is what a turn adds to its session's record. turn is the turn
// itself, read-only, for its title: worked out by the applier, and only
// until a turn of the run has one, rather than on the answer's path. seq
// is the turn's, or 0 until the applier reads it by rowid (seqs), also
// off the answer's path.
type applied struct {
	id    string
	rowid int64
	seq   int64
	at    int64 // Unix ms
	turn  store.Turn
	usage gateway.Usage
}

// The statements of a turn: insertTurnSQL stores its row (its arguments:
// the id twice, the messages, stop reason, usage, compaction, the time),
// all the answer waits for; the applier reads the seqs of a batch back by
// their rowids' range with turnSeqSQL (RETURNING would cost SQLite an
// ephemeral table per insert, and the answer a second statement);
// applyTurnsSQL folds one or more turns
// of a session, seqs first to last, into its record, if the first is the
// next turn the record misses (the count of turns, updatedArg, the title,
// usageArgs, the last seq, the id, the seq before the first).
const (
	insertTurnSQL = `INSERT INTO turns (session_id, seq, messages, stop_reason, usage, compaction, at)
		VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM turns WHERE session_id = ?), ?, ?, ?, ?, ?)`
	turnSeqSQL    = `SELECT rowid, session_id, seq FROM turns WHERE rowid BETWEEN ? AND ?`
	applyTurnsSQL = `UPDATE sessions SET updated_at = max(updated_at + ?, ?), title = CASE WHEN title = '' THEN ? ELSE title END,
		usage_input = usage_input + ?, usage_cache_read = usage_cache_read + ?, usage_cache_write = usage_cache_write + ?,
		usage_output = usage_output + ?, usage_thought = usage_thought + ?, usage_requests = usage_requests + ?,
		usage_cost = usage_cost + ?, usage_unpriced = usage_unpriced + ?, applied_seq = ?
		WHERE id = ? AND applied_seq = ?`
)

// applierIdle is how long applyLoop waits for a turn before it returns.
const applierIdle = 10 * time.Second

// applyAfter is how long the second step waits for more turns to fold in
// with the first, unless a read waits for it: a busy session's turns are
// applied a few at a time, one UPDATE each, rather than one by one.
const applyAfter = 20 * time.Millisecond

// applyTimeout bounds the second step of a batch of turns.
const applyTimeout = 30 * time.Second

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
// path too. What to do about a damaged or full file is the remedy of
// store.ErrDamaged and store.ErrFull (gateway.ErrorText shows it).
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
	s := &Store{db: db, path: path, wake: make(chan struct{}, 1), urgent: make(chan struct{}, 1), stop: make(chan struct{})}
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
		if err := s.prepare(ctx); err != nil {
			s.Close()
			return fail(err)
		}
		if err := s.repair(ctx); err != nil {
			s.Close()
			return fail(err)
		}
	}
	return s, nil
}

// prepare takes the writer connection out of the pool and prepares its
// statements.
func (s *Store) prepare(ctx context.Context) (err error) {
	if s.w, err = s.db.Conn(ctx); err != nil {
		return err
	}
	for _, p := range []struct {
		st    **sql.Stmt
		query string
	}{{&s.begin, "BEGIN IMMEDIATE"}, {&s.commit, "COMMIT"}, {&s.rollback, "ROLLBACK"}, {&s.insertTurn, insertTurnSQL}, {&s.turnSeq, turnSeqSQL}, {&s.applyTurns, applyTurnsSQL}} {
		if *p.st, err = s.w.PrepareContext(ctx, p.query); err != nil {
			return fmt.Errorf("preparing %q: %w", strings.Fields(p.query)[0], err)
		}
	}
	return nil
}

// repair catches up the records that miss some of their turns: those of
// a process that died between a turn's two steps.
func (s *Store) repair(ctx context.Context) error {
	rs, err := s.db.QueryContext(ctx, `SELECT id FROM sessions WHERE applied_seq < (SELECT coalesce(max(seq), 0) FROM turns WHERE session_id = sessions.id)`)
	if err != nil {
		return fmt.Errorf("finding the sessions whose record misses turns: %w", err)
	}
	var ids []string
	for rs.Next() {
		var id string
		if err := rs.Scan(&id); err != nil {
			rs.Close()
			return err
		}
		ids = append(ids, id)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.write(ctx, func() error { return s.catchUp(ctx, id) }); err != nil {
			return fmt.Errorf("session %s: folding its stored turns into its record: %w", id, err)
		}
	}
	return nil
}

// write runs f in a transaction of the writer connection, under the
// writer lock: f writes with s.w and its statements.
func (s *Store) write(ctx context.Context, f func() error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, err := s.begin.ExecContext(ctx); err != nil {
		return err
	}
	if err := f(); err != nil {
		_, _ = s.rollback.ExecContext(context.WithoutCancel(ctx))
		return err
	}
	if _, err := s.commit.ExecContext(ctx); err != nil {
		_, _ = s.rollback.ExecContext(context.WithoutCancel(ctx))
		return err
	}
	return nil
}

// exec runs query on the writer connection, under the writer lock (on
// the pool, for a store opened at an older schema).
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s.w == nil {
		return s.db.ExecContext(ctx, query, args...)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.w.ExecContext(ctx, query, args...)
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
// (store.ErrFull), whose remedies say what to do about them.
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

// Close implements store.Store: the turns appended are folded into their
// records first.
func (s *Store) Close() error {
	s.amu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.amu.Unlock()
	s.appliers.Wait()
	for _, st := range []*sql.Stmt{s.begin, s.commit, s.rollback, s.insertTurn, s.turnSeq, s.applyTurns} {
		if st != nil {
			_ = st.Close()
		}
	}
	if s.w != nil {
		_ = s.w.Close()
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
	_, err = s.exec(ctx, `INSERT INTO sessions (id, gateway_key, cwd, title, created_at, updated_at, servers, model, mode, server_changes, tenant, `+rows.UsageColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		append([]any{r.ID, r.Key, r.Cwd, r.Title, r.Created.UnixMilli(), r.Updated.UnixMilli(), string(servers), r.Model, r.Mode, string(r.ServerChanges), r.Tenant}, rows.UsageArgs(r.Usage)...)...)
	return err
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Record, error) {
	if err := s.settle(ctx); err != nil {
		return store.Record{}, err
	}
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
	res, err := s.exec(ctx, `UPDATE sessions SET servers = ? WHERE id = ?`, string(b), id)
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
	res, err := s.exec(ctx, `UPDATE sessions SET model = ? WHERE id = ?`, model, id)
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
	res, err := s.exec(ctx, `UPDATE sessions SET server_changes = ? WHERE id = ?`, string(changes), id)
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
	res, err := s.exec(ctx, `UPDATE sessions SET mode = ? WHERE id = ?`, mode, id)
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
	res, err := s.exec(ctx, `UPDATE sessions SET title = ? WHERE id = ?`, title, id)
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
	return s.write(ctx, func() error {
		if _, err := s.w.ExecContext(ctx, `DELETE FROM turns WHERE session_id = ?`, id); err != nil {
			return err
		}
		res, err := s.w.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: %q", store.ErrNotFound, id)
		}
		return nil
	})
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, opts store.ListOptions) (_ []store.Record, _ string, err error) {
	defer func() { err = s.wrap(err) }()
	if err := s.settle(ctx); err != nil {
		return nil, "", err
	}
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

// AppendTurns implements store.BatchStore: the turns' rows in one
// transaction (one alone needs none), so one commit (and WAL write) for
// the batch; it returns once they are committed. Their sessions' records
// are brought up to date after it returns (see Store).
func (s *Store) AppendTurns(ctx context.Context, batch []store.SessionTurn) (err error) {
	defer func() { err = s.wrap(err) }()
	turns := make([]applied, len(batch))
	encoded := make([]rows.TurnRow, len(batch))
	now := time.Now()
	for i, b := range batch {
		if encoded[i], err = rows.EncodeTurn(b.ID, b.Turn); err != nil {
			return err
		}
		at := b.Turn.At
		if at.IsZero() {
			at = now
		}
		turns[i] = applied{id: b.ID, at: at.UnixMilli(), turn: b.Turn, usage: b.Turn.Usage}
	}
	insert := func() error {
		for i, b := range batch {
			row := encoded[i]
			res, err := s.insertTurn.ExecContext(ctx, b.ID, b.ID, row.Messages, string(b.Turn.StopReason), row.Usage, row.Compaction, turns[i].at)
			if se := (*driver.Error)(nil); errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
				return fmt.Errorf("%w: %q", store.ErrNotFound, b.ID)
			}
			if err != nil {
				return err
			}
			if turns[i].rowid, err = res.LastInsertId(); err != nil {
				return err
			}
		}
		return nil
	}
	if len(batch) == 1 { // one statement: its own transaction
		s.wmu.Lock()
		err = insert()
		s.wmu.Unlock()
	} else {
		err = s.write(ctx, insert)
	}
	if err != nil {
		return err
	}
	s.queue(turns)
	return nil
}

// queue hands turns, inserted, to applyLoop, starting it if it is not
// running.
func (s *Store) queue(turns []applied) {
	s.amu.Lock()
	defer s.amu.Unlock()
	if s.queued == nil {
		s.queued = &applyBatch{done: make(chan struct{})}
		s.last = s.queued.done
	}
	s.queued.turns = append(s.queued.turns, turns...)
	if !s.started && !s.closed {
		s.started = true
		s.appliers.Go(s.applyLoop)
	}
	select {
	case s.wake <- struct{}{}:
	default: // a signal is pending already
	}
}

// applyLoop folds the queued turns into their records, waiting on wake
// while none is queued, and returns at Close once none is. Once turns are
// queued it waits applyAfter for more (unless a read is waiting: urgent),
// then folds all queued into their records in one transaction, one UPDATE
// per session (applyBatch). A batch that fails is left to catchUp: its
// turns are stored, and the records that miss them are caught up at their
// session's next turn or the next Open.
func (s *Store) applyLoop() {
	delay := time.NewTimer(applyAfter)
	delay.Stop()
	idle := time.NewTimer(applierIdle)
	defer idle.Stop()
	for {
		s.amu.Lock()
		pending := s.queued != nil
		s.amu.Unlock()
		if !pending {
			idle.Reset(applierIdle)
			select {
			case <-s.wake:
				continue
			case <-s.stop:
			case <-idle.C:
			}
			s.amu.Lock()
			if s.queued == nil { // the next AppendTurns starts another
				s.started = false
				s.amu.Unlock()
				return
			}
			s.amu.Unlock()
			continue
		}
		delay.Reset(applyAfter)
		select {
		case <-delay.C:
		case <-s.urgent:
			delay.Stop()
		case <-s.stop:
			delay.Stop()
		}
		s.amu.Lock()
		b := s.queued
		s.queued = nil
		s.amu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), applyTimeout)
		s.applyBatch(ctx, b.turns)
		cancel()
		close(b.done)
	}
}

// applyBatch folds turns, inserted in this order, into their sessions'
// records: each session's run of turns in one UPDATE (applyTurnsSQL),
// or caught up from the file when the record misses turns before them.
func (s *Store) applyBatch(ctx context.Context, turns []applied) {
	turns = s.seqs(ctx, turns)
	var order []string
	runs := make(map[string][]applied)
	for _, t := range turns {
		if _, ok := runs[t.id]; !ok {
			order = append(order, t.id)
		}
		runs[t.id] = append(runs[t.id], t)
	}
	// Turns of one session appended side by side may be queued out of
	// their seq order: a run is folded in seq order, and only when its
	// seqs follow each other; else its turns are caught up from the file.
	for _, id := range order {
		run := runs[id]
		slices.SortFunc(run, func(a, b applied) int { return cmp.Compare(a.seq, b.seq) })
		for i := 1; i < len(run); i++ {
			if run[i].seq != run[i-1].seq+1 {
				runs[id] = nil
				break
			}
		}
	}
	fold := func(id string) (int64, error) {
		if runs[id] == nil {
			return 0, nil
		}
		res, err := s.applyTurns.ExecContext(ctx, foldArgs(runs[id])...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	apply := func() error {
		for _, id := range order {
			n, err := fold(id)
			if err != nil {
				return err
			}
			if n == 0 {
				// Folded in already (another process's repair), or
				// after a gap, or the session is gone.
				if err := s.catchUp(ctx, id); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if len(order) == 1 { // one statement: its own transaction, unless it catches up
		s.wmu.Lock()
		n, err := fold(order[0])
		s.wmu.Unlock()
		if err != nil || n == 0 {
			_ = s.write(ctx, func() error { return s.catchUp(ctx, order[0]) })
		}
		return
	}
	_ = s.write(ctx, apply)
}

// seqs returns turns with the seq of each read by its rowid where it is
// not known yet (turnSeqSQL: one query over the batch's range of rowids,
// which other processes' turns may share), without the turns whose row is
// gone (their session deleted) or could not be read: those a record
// misses are caught up at their session's next turn or the next Open
// (catchUp).
func (s *Store) seqs(ctx context.Context, turns []applied) []applied {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, t := range turns {
		if t.seq == 0 {
			lo, hi = min(lo, t.rowid), max(hi, t.rowid)
		}
	}
	if hi == 0 {
		return turns
	}
	type row struct {
		id  string
		seq int64
	}
	found := make(map[int64]row)
	s.wmu.Lock()
	rs, err := s.turnSeq.QueryContext(ctx, lo, hi)
	if err == nil {
		for rs.Next() {
			var rowid int64
			var r row
			if rs.Scan(&rowid, &r.id, &r.seq) == nil {
				found[rowid] = r
			}
		}
		rs.Close()
	}
	s.wmu.Unlock()
	kept := turns[:0]
	for _, t := range turns {
		if t.seq == 0 {
			r, ok := found[t.rowid]
			if !ok || r.id != t.id {
				continue
			}
			t.seq = r.seq
		}
		kept = append(kept, t)
	}
	return kept
}

// foldArgs are applyTurnsSQL's arguments for run, one session's turns in
// seq order: the record's updated time becomes what store.NextUpdated
// gives turn after turn, max(updated + k, at_i + k - i) over the k turns
// (i from 1), and its title the first turn's that has one.
func foldArgs(run []applied) []any {
	k := int64(len(run))
	var at int64
	var title string
	var usage gateway.Usage
	for i, t := range run {
		at = max(at, t.at+k-int64(i+1))
		if title == "" {
			title = t.turn.Title()
		}
		usage = usage.Add(t.usage)
	}
	return append(append([]any{k, at, title}, rows.UsageArgs(usage)...), run[k-1].seq, run[0].id, run[0].seq-1)
}

// settle waits until the turns appended so far are folded into their
// records, or ctx ends.
func (s *Store) settle(ctx context.Context) error {
	s.amu.Lock()
	last := s.last
	s.amu.Unlock()
	if last == nil {
		return nil
	}
	select {
	case <-last:
		return nil
	default:
	}
	select {
	case s.urgent <- struct{}{}: // the reader waits: no applyAfter
	default:
	}
	select {
	case <-last:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// catchUp folds into session id's record the turns it misses, in order,
// in the writer's transaction (write). A session that is gone has nothing
// to catch up.
func (s *Store) catchUp(ctx context.Context, id string) error {
	tx := s.w
	var from int64
	if err := tx.QueryRowContext(ctx, `SELECT applied_seq FROM sessions WHERE id = ?`, id).Scan(&from); errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	rs, err := tx.QueryContext(ctx, `SELECT seq, at FROM turns WHERE session_id = ? AND seq > ? ORDER BY seq`, id, from)
	if err != nil {
		return err
	}
	var missed []applied
	for rs.Next() {
		t := applied{id: id}
		if err := rs.Scan(&t.seq, &t.at); err != nil {
			rs.Close()
			return err
		}
		missed = append(missed, t)
	}
	rs.Close()
	if err := rs.Err(); err != nil || len(missed) == 0 {
		return err
	}
	trs, err := tx.QueryContext(ctx, `SELECT `+rows.TurnColumns+` FROM turns WHERE session_id = ? AND seq > ? ORDER BY seq`, id, from)
	if err != nil {
		return err
	}
	turns, err := rows.ReadTurns(id, trs.Next, trs.Scan, trs.Err)
	trs.Close()
	if err != nil {
		return err
	}
	for i, t := range missed {
		if i < len(turns) {
			t.turn, t.usage = turns[i], turns[i].Usage
		}
		if _, err := s.applyTurns.ExecContext(ctx, foldArgs([]applied{t})...); err != nil {
			return err
		}
	}
	return nil
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
