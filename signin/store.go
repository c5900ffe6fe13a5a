package signin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Store keeps [Record]s, at most one per key (ServerURL, TokenURL). Its methods
// are safe for concurrent use; records passed in and returned are copies the
// caller owns.
type Store interface {
	// Latest returns the most recently saved record of serverURL, or nil, nil.
	Latest(ctx context.Context, serverURL string) (*Record, error)
	// Save stores a copy of rec under its key, replacing an older one, and sets
	// its Saved time. rec must have a ServerURL, a TokenURL and a Token.
	Save(ctx context.Context, rec *Record) error
	// Delete removes every record of serverURL and returns them (for
	// revocation); none is nil, nil.
	Delete(ctx context.Context, serverURL string) ([]*Record, error)
	// Update runs fn with the current record of the key (nil if none) under an
	// exclusive lock of the key (across goroutines, and for a [FileStore]
	// across processes) and saves what fn returns: nil leaves the record as it
	// is, [ErrDeleteRecord] removes it, another error is returned unchanged.
	// A returned record must have the key's ServerURL and TokenURL. Update
	// returns the record now stored (nil if none). Waiting for the lock ends
	// with ctx.
	Update(ctx context.Context, serverURL, tokenURL string, fn func(cur *Record) (*Record, error)) (*Record, error)
}

// key identifies a record.
type key struct{ server, token string }

func (r *Record) key() key { return key{r.ServerURL, r.TokenURL} }

// validate reports what a record to be stored lacks.
func (r *Record) validate() error {
	switch {
	case r == nil:
		return errors.New("signin: nil record")
	case r.ServerURL == "":
		return errors.New("signin: record has no serverUrl")
	case r.TokenURL == "":
		return fmt.Errorf("signin: record of %s has no tokenUrl", r.ServerURL)
	case r.Token == nil:
		return fmt.Errorf("signin: record of %s has no token", r.ServerURL)
	}
	return nil
}

// records is the content of a store, oldest saved first (so the last record of
// a server is its latest).
type records []*Record

func (rs records) find(k key) *Record {
	for _, r := range rs {
		if r.key() == k {
			return r
		}
	}
	return nil
}

func (rs records) latest(serverURL string) *Record {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].ServerURL == serverURL {
			return rs[i]
		}
	}
	return nil
}

// without returns rs without the records keep rejects, and those records.
func (rs records) without(drop func(*Record) bool) (kept records, dropped []*Record) {
	for _, r := range rs {
		if drop(r) {
			dropped = append(dropped, r)
		} else {
			kept = append(kept, r)
		}
	}
	return kept, dropped
}

// put returns rs with a copy of rec (stamped now) replacing the record of its
// key, as the latest.
func (rs records) put(rec *Record, now time.Time) records {
	k := rec.key()
	rs, _ = rs.without(func(r *Record) bool { return r.key() == k })
	c := rec.clone()
	c.Saved = now
	return append(rs, c)
}

// apply runs an Update's fn on the record of k in rs and returns the new
// content, the record now stored, and whether rs changed.
func (rs records) apply(k key, now time.Time, fn func(*Record) (*Record, error)) (records, *Record, bool, error) {
	cur := rs.find(k)
	next, err := fn(cur.clone())
	switch {
	case errors.Is(err, ErrDeleteRecord):
		kept, dropped := rs.without(func(r *Record) bool { return r.key() == k })
		return kept, nil, len(dropped) > 0, nil
	case err != nil:
		return rs, nil, false, err
	case next == nil:
		return rs, cur.clone(), false, nil
	}
	if err := next.validate(); err != nil {
		return rs, nil, false, err
	}
	if next.key() != k {
		return rs, nil, false, fmt.Errorf("signin: Update of (%s, %s) returned a record of (%s, %s)", k.server, k.token, next.ServerURL, next.TokenURL)
	}
	rs = rs.put(next, now)
	return rs, rs[len(rs)-1].clone(), true, nil
}

// keyLocks is a set of per-key mutexes whose Lock honours a context.
type keyLocks struct {
	mu sync.Mutex
	// m holds a 1-slot semaphore per key that is locked or waited for; an
	// entry is removed when refs drops to zero.
	m map[key]*keyLock
}

type keyLock struct {
	sem  chan struct{}
	refs int // goroutines holding or waiting for sem; guarded by keyLocks.mu
}

// lock takes the lock of k and returns its unlock function.
func (l *keyLocks) lock(ctx context.Context, k key) (func(), error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = make(map[key]*keyLock)
	}
	kl := l.m[k]
	if kl == nil {
		kl = &keyLock{sem: make(chan struct{}, 1)}
		l.m[k] = kl
	}
	kl.refs++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		if kl.refs--; kl.refs == 0 {
			delete(l.m, k)
		}
		l.mu.Unlock()
	}
	select {
	case kl.sem <- struct{}{}:
		return func() { <-kl.sem; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// Memory is the [Store] kept in memory (--store memory): nothing outlives the
// process. Its zero value is not usable: call [NewMemory].
type Memory struct {
	locks keyLocks // per-key Update locks, taken before mu
	mu    sync.Mutex
	recs  records // guarded by mu
	now   func() time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() Store { return &Memory{now: time.Now} }

// Latest implements [Store].
func (m *Memory) Latest(_ context.Context, serverURL string) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.recs.latest(serverURL).clone(), nil
}

// Save implements [Store].
func (m *Memory) Save(ctx context.Context, rec *Record) error {
	if err := rec.validate(); err != nil {
		return err
	}
	_, err := m.Update(ctx, rec.ServerURL, rec.TokenURL, func(*Record) (*Record, error) { return rec, nil })
	return err
}

// Delete implements [Store].
func (m *Memory) Delete(_ context.Context, serverURL string) ([]*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var dropped []*Record
	m.recs, dropped = m.recs.without(func(r *Record) bool { return r.ServerURL == serverURL })
	return dropped, nil
}

// Update implements [Store]; fn runs under the key's lock but not the store's,
// so a slow fn (a refresh request) delays only callers of the same key.
func (m *Memory) Update(ctx context.Context, serverURL, tokenURL string, fn func(*Record) (*Record, error)) (*Record, error) {
	k := key{serverURL, tokenURL}
	unlock, err := m.locks.lock(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("signin: waiting for the lock of %s: %w", serverURL, err)
	}
	defer unlock()
	m.mu.Lock()
	cur := m.recs.find(k).clone()
	m.mu.Unlock()
	next, err := fn(cur)
	m.mu.Lock()
	defer m.mu.Unlock()
	// Delete may have run meanwhile (it does not take key locks): apply fn's
	// verdict to the list as it is now.
	recs, stored, _, err := m.recs.apply(k, m.now(), func(*Record) (*Record, error) { return next, err })
	if err != nil {
		return nil, err
	}
	m.recs = recs
	return stored, nil
}
