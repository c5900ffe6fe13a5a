package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// Lease connection settings. TCP keepalive, set on both ends of the lease
// connection (the dialer here, tcp_keepalives_* on the server's side),
// bounds how long a partitioned or dead replica host keeps its leases:
// PostgreSQL drops the connection, and with it the replica's advisory
// locks, after about leaseKeepIdle + leaseKeepCount × leaseKeepInterval of
// silence (~25 s), and the replica sees its leases lost as soon. A Unix
// socket needs none: the kernel closes it with the process. (A process
// that hangs on a live host keeps its leases until it exits.)
const (
	leaseKeepIdle     = 10 * time.Second
	leaseKeepInterval = 5 * time.Second
	leaseKeepCount    = 3
	// leaseOpTimeout bounds one lease operation (connecting, or a
	// round trip) on the lease connection; past it the connection is
	// taken for broken.
	leaseOpTimeout = 10 * time.Second
)

// leaseKey is the advisory lock key of session id: the 64-bit FNV-1a hash
// of the id. Two ids with one key share a lease (one of them waits for the
// other's turn to end): with 64 bits, about one pair in 10^19.
func leaseKey(id string) int64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return int64(h.Sum64())
}

// Acquire implements store.Leases, fleet-wide: the lease of session id is
// the PostgreSQL session-level advisory lock pg_try_advisory_lock(key), key
// the 64-bit FNV-1a hash of id (ids that collide share a lease), held on
// one dedicated connection per store (not the pool's). Taking it bumps the
// session's row in session_leases (token = token + 1, owner), on the same
// connection: the Lease's Token. While another holder (another replica, or
// another caller of this store) has it, Acquire returns a *store.LeasedError
// naming the owner last recorded in session_leases (in the instant between
// a new holder's lock and its row update, the previous holder's name).
//
// The lease is lost, and Lease.Lost closed, when the dedicated connection
// breaks: PostgreSQL then releases all of its locks at once, so every
// lease this store holds is lost together, and the next Acquire opens a
// new connection. A replica that dies loses its connection at once; one
// that hangs or is cut off keeps its leases until TCP keepalive gives up
// (10 s idle, then 3 probes 5 s apart: within ~25 s).
//
// Acquire and Release are one or two round trips each, one at a time on
// the dedicated connection: a store takes or gives back at most about
// 1/(2 × round trip) leases a second (thousands on a LAN), whatever the
// pool size. Safe for concurrent use.
func (s *Store) Acquire(ctx context.Context, id, owner string) (*store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l, err := s.leases.acquire(ctx, id, owner)
	if err != nil {
		var le *store.LeasedError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, s.wrap(fmt.Errorf("acquiring the lease of session %s: %w", id, err))
	}
	if err := ctx.Err(); err != nil { // the caller gave up meanwhile
		_ = l.Release(context.WithoutCancel(ctx))
		return nil, err
	}
	return l, nil
}

// pgLeases is the lease connection of a PostgreSQL store and the leases held
// on it. One goroutine (run) owns the connection: acquire and release hand
// it operations; between operations it waits on the connection, so that a
// broken connection is seen at once, not at the next Acquire.
type pgLeases struct {
	// base is the lease connection's life: the values of Open's context
	// without its cancellation. run's operations derive from it, each under
	// its own bound, since they serve every caller of the store.
	base      context.Context
	cfg       *pgx.ConnConfig
	name      string
	log       *slog.Logger
	ops       chan leaseOp
	quit      chan struct{} // closed by close
	closeOnce sync.Once
	done      chan struct{} // closed when run returns

	// Owned by run.
	conn *pgx.Conn
	// held are the leases on conn by key; their lost channels close when
	// conn breaks.
	held map[int64]*pgHold
}

// pgHold is one held lease.
type pgHold struct {
	id, owner string
	token     int64
	lost      chan struct{}
}

// leaseOp is an operation run on the lease connection by run.
type leaseOp struct {
	fn   func(ctx context.Context, conn *pgx.Conn) error
	done chan error
}

func newPgLeases(ctx context.Context, cfg *pgx.ConnConfig, name string, log *slog.Logger) *pgLeases {
	d := &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: leaseKeepIdle, Interval: leaseKeepInterval, Count: leaseKeepCount}}
	cfg.DialFunc = d.DialContext
	cfg.RuntimeParams["application_name"] = "acp-agent leases"
	cfg.RuntimeParams["tcp_keepalives_idle"] = fmt.Sprint(leaseKeepIdle.Seconds())
	cfg.RuntimeParams["tcp_keepalives_interval"] = fmt.Sprint(leaseKeepInterval.Seconds())
	cfg.RuntimeParams["tcp_keepalives_count"] = fmt.Sprint(leaseKeepCount)
	l := &pgLeases{base: context.WithoutCancel(ctx), cfg: cfg, name: name, log: log, ops: make(chan leaseOp), quit: make(chan struct{}), done: make(chan struct{}), held: make(map[int64]*pgHold)}
	go l.run()
	return l
}

// errLeasesClosed: the store was closed.
var errLeasesClosed = errors.New("the session store is closed")

// do runs fn on the lease connection (connecting first if needed) and
// returns its error. ctx can stop the wait for the connection's turn, not
// fn, which runs under its own bound (leaseOpTimeout).
func (l *pgLeases) do(ctx context.Context, fn func(ctx context.Context, conn *pgx.Conn) error) error {
	op := leaseOp{fn: fn, done: make(chan error, 1)}
	select {
	case l.ops <- op:
	case <-l.quit:
		return errLeasesClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-op.done
}

func (l *pgLeases) acquire(ctx context.Context, id, owner string) (*store.Lease, error) {
	key := leaseKey(id)
	var h *pgHold
	err := l.do(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		if o, ok := l.held[key]; ok { // advisory locks are reentrant: check ours first
			return &store.LeasedError{ID: id, Owner: o.owner}
		}
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&got); err != nil {
			return err
		}
		if !got {
			le := &store.LeasedError{ID: id, Owner: "another replica"}
			var o string
			if err := conn.QueryRow(ctx, `SELECT owner FROM session_leases WHERE session_id = $1`, id).Scan(&o); err == nil && o != "" {
				le.Owner = o
			} else if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			return le
		}
		var token int64
		err := conn.QueryRow(ctx, `INSERT INTO session_leases (session_id, token, owner, acquired_at) VALUES ($1, 1, $2, now())
			ON CONFLICT (session_id) DO UPDATE SET token = session_leases.token + 1, owner = excluded.owner, acquired_at = excluded.acquired_at
			RETURNING token`, id, owner).Scan(&token)
		if err != nil {
			if !conn.IsClosed() {
				_, _ = conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key)
			}
			return err
		}
		h = &pgHold{id: id, owner: owner, token: token, lost: make(chan struct{})}
		l.held[key] = h
		return nil
	})
	if err != nil {
		return nil, err
	}
	return store.NewLease(id, owner, h.token, h.lost, func(ctx context.Context) error { return l.release(context.WithoutCancel(ctx), key, h) }), nil
}

// release unlocks h's key, unless h was lost meanwhile (its lock went with
// its connection). A release is not abandoned: callers pass a ctx without
// cancellation (context.WithoutCancel).
func (l *pgLeases) release(ctx context.Context, key int64, h *pgHold) error {
	err := l.do(ctx, func(ctx context.Context, conn *pgx.Conn) error {
		if l.held[key] != h {
			return nil
		}
		delete(l.held, key)
		_, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key)
		return err
	})
	if errors.Is(err, errLeasesClosed) {
		return nil // closing released it
	}
	if err != nil {
		return fmt.Errorf("session store %s: releasing the lease of session %s: %w", l.name, h.id, err)
	}
	return nil
}

// run owns the lease connection until close.
func (l *pgLeases) run() {
	defer close(l.done)
	defer l.drop()
	for {
		if l.conn == nil {
			select {
			case op := <-l.ops:
				l.run1(op)
			case <-l.quit:
				return
			}
			continue
		}
		// Idle: read the connection, which fails as soon as it breaks (the
		// server's termination message, or a reset).
		conn := l.conn
		wctx, cancel := context.WithCancel(l.base)
		werr := make(chan error, 1)
		go func() { _, err := conn.WaitForNotification(wctx); werr <- err }() // waited for below
		select {
		case op := <-l.ops:
			cancel()
			l.checkIdle(<-werr, wctx)
			l.run1(op)
		case err := <-werr:
			cancel()
			l.checkIdle(err, wctx)
		case <-l.quit:
			cancel()
			<-werr
			return
		}
	}
}

// checkIdle drops the connection if the idle wait ended for another reason
// than its cancellation (or a notification, which nothing sends).
func (l *pgLeases) checkIdle(err error, wctx context.Context) {
	if err != nil && (wctx.Err() == nil || l.conn.IsClosed()) {
		l.log.Warn("session store: the lease connection broke: its leases are lost", "store", l.name, "leases", len(l.held), "error", err)
		l.drop()
	}
}

// run1 runs op, connecting first if needed; an operation that finds the
// connection broken drops it and is tried once more on a new one.
func (l *pgLeases) run1(op leaseOp) {
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		ctx, cancel := context.WithTimeout(l.base, leaseOpTimeout)
		if l.conn == nil {
			l.conn, err = pgx.ConnectConfig(ctx, l.cfg)
			if err != nil {
				l.conn = nil
				cancel()
				break
			}
		}
		err = op.fn(ctx, l.conn)
		cancel()
		timedOut := errors.Is(err, context.DeadlineExceeded)
		if err == nil || !l.conn.IsClosed() && !timedOut {
			break
		}
		// Broken, or hung past leaseOpTimeout (its state unknown): either
		// way its locks are not to be trusted.
		l.log.Warn("session store: the lease connection broke: its leases are lost", "store", l.name, "leases", len(l.held), "error", err)
		l.drop()
		if timedOut {
			break
		}
	}
	op.done <- err
}

// drop closes the connection and loses every lease held on it. On a
// connection still open, the locks are released first
// (pg_advisory_unlock_all, which the server has done when it answers):
// the server ends a closed connection's backend, and frees its locks, only
// some time after the close. Lost closes only after that, so whoever sees
// it may take the lease at once.
func (l *pgLeases) drop() {
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(l.base, time.Second)
		if !l.conn.IsClosed() && len(l.held) > 0 {
			_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
		}
		_ = l.conn.Close(ctx)
		cancel()
		l.conn = nil
	}
	for key, h := range l.held {
		close(h.lost)
		delete(l.held, key)
	}
}

// close stops run (closing the connection, which releases the locks) and
// waits for it; the leases still held are lost (Lost closes). Later and
// concurrent calls wait for the same end.
func (l *pgLeases) close() {
	l.closeOnce.Do(func() { close(l.quit) })
	<-l.done
}
