// Package memory is the session store that keeps everything in memory
// (--store memory): nothing survives the process. It is the store of tests
// and of an agent told to keep nothing.
package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/session/store/internal/rows"
)

// Store is a store.Store that keeps everything in memory: nothing survives
// the process. Safe for concurrent use.
type Store struct {
	mu       sync.Mutex
	sessions map[string]*memSession
}

type memSession struct {
	rec   store.Record
	turns []store.Turn
}

var _ store.Store = (*Store)(nil)

// New returns an empty in-memory store.
func New() *Store { return &Store{sessions: make(map[string]*memSession)} }

// Create implements store.Store.
func (m *Store) Create(_ context.Context, r store.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[r.ID]; ok {
		return fmt.Errorf("session %q exists", r.ID)
	}
	r.Servers, r.ServerChanges = slices.Clone(r.Servers), slices.Clone(r.ServerChanges)
	m.sessions[r.ID] = &memSession{rec: r}
	return nil
}

// Get implements store.Store.
func (m *Store) Get(_ context.Context, id string) (store.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return store.Record{}, fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	r := s.rec
	r.Servers, r.ServerChanges = slices.Clone(r.Servers), slices.Clone(r.ServerChanges)
	return r, nil
}

// update runs f on the record of session id under the lock, or returns
// store.ErrNotFound.
func (m *Store) update(id string, f func(*store.Record)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	f(&s.rec)
	return nil
}

// SetServers implements store.Store.
func (m *Store) SetServers(_ context.Context, id string, servers []store.Server) error {
	return m.update(id, func(r *store.Record) { r.Servers = slices.Clone(servers) })
}

// SetModel implements store.Store.
func (m *Store) SetModel(_ context.Context, id, model string) error {
	return m.update(id, func(r *store.Record) { r.Model = model })
}

// SetServerChanges implements store.Store.
func (m *Store) SetServerChanges(_ context.Context, id string, changes []byte) error {
	return m.update(id, func(r *store.Record) { r.ServerChanges = slices.Clone(changes) })
}

// SetMode implements store.Store.
func (m *Store) SetMode(_ context.Context, id, mode string) error {
	return m.update(id, func(r *store.Record) { r.Mode = mode })
}

// SetTitle implements store.Store.
func (m *Store) SetTitle(_ context.Context, id, title string) error {
	return m.update(id, func(r *store.Record) { r.Title = title })
}

// Delete implements store.Store.
func (m *Store) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[id]; !ok {
		return fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	delete(m.sessions, id)
	return nil
}

// List implements store.Store.
func (m *Store) List(_ context.Context, opts store.ListOptions) ([]store.Record, string, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = 50
	}
	var at int64
	var after string
	if opts.Cursor != "" {
		var err error
		if at, after, err = rows.DecodeCursor(opts.Cursor); err != nil {
			return nil, "", err
		}
	}
	m.mu.Lock()
	var all []store.Record
	for _, s := range m.sessions {
		if s.rec.Tenant == opts.Tenant && (opts.Cwd == "" || s.rec.Cwd == opts.Cwd) {
			all = append(all, s.rec)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b store.Record) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return compareStrings(b.ID, a.ID)
	})
	var out []store.Record
	for _, r := range all {
		u := r.Updated.UnixMilli()
		if opts.Cursor != "" && !(u < at || (u == at && r.ID < after)) {
			continue
		}
		out = append(out, r)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = rows.EncodeCursor(out[limit-1].Updated.UnixMilli(), out[limit-1].ID)
	}
	return out, next, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// AppendTurn implements store.Store.
func (m *Store) AppendTurn(_ context.Context, id string, turn store.Turn) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	s.turns = append(s.turns, store.Turn{Messages: slices.Clone(turn.Messages), StopReason: turn.StopReason, Usage: turn.Usage, Compaction: cloneCompaction(turn.Compaction)})
	s.rec.Usage = s.rec.Usage.Add(turn.Usage)
	s.rec.Updated = store.NextUpdated(s.rec.Updated, turn.At)
	if s.rec.Title == "" {
		s.rec.Title = turn.Title()
	}
	return nil
}

// Turns implements store.Store.
func (m *Store) Turns(_ context.Context, id string) ([]store.Turn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", store.ErrNotFound, id)
	}
	out := slices.Clone(s.turns)
	for i := range out {
		out[i].Compaction = cloneCompaction(out[i].Compaction)
	}
	return out, nil
}

// cloneCompaction returns a copy of c (nil for nil), so that neither the
// caller of AppendTurn nor that of Turns can change a stored turn.
func cloneCompaction(c *gateway.Compaction) *gateway.Compaction {
	if c == nil {
		return nil
	}
	cc := *c
	cc.Loaded = slices.Clone(c.Loaded)
	cc.Head = slices.Clone(c.Head)
	return &cc
}

// Close implements store.Store.
func (m *Store) Close() error { return nil }
