package session

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Memory is a Store that keeps everything in memory (--store memory):
// nothing survives the process. Safe for concurrent use.
type Memory struct {
	mu       sync.Mutex
	sessions map[string]*memSession
}

type memSession struct {
	rec   Record
	turns []Turn
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{sessions: make(map[string]*memSession)} }

// Create implements Store.
func (m *Memory) Create(_ context.Context, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[r.ID]; ok {
		return fmt.Errorf("session %q exists", r.ID)
	}
	r.Servers = slices.Clone(r.Servers)
	m.sessions[r.ID] = &memSession{rec: r}
	return nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, id string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return Record{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	r := s.rec
	r.Servers = slices.Clone(r.Servers)
	return r, nil
}

// SetServers implements Store.
func (m *Memory) SetServers(_ context.Context, id string, servers []Server) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	s.rec.Servers = slices.Clone(servers)
	return nil
}

// SetModel implements Store.
func (m *Memory) SetModel(_ context.Context, id, model string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	s.rec.Model = model
	return nil
}

// List implements Store.
func (m *Memory) List(_ context.Context, opts ListOptions) ([]Record, string, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = 50
	}
	var at int64
	var after string
	if opts.Cursor != "" {
		var err error
		if at, after, err = decodeCursor(opts.Cursor); err != nil {
			return nil, "", err
		}
	}
	m.mu.Lock()
	var all []Record
	for _, s := range m.sessions {
		if s.rec.Tenant == opts.Tenant && (opts.Cwd == "" || s.rec.Cwd == opts.Cwd) {
			all = append(all, s.rec)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b Record) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return compareStrings(b.ID, a.ID)
	})
	var out []Record
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
		next = encodeCursor(out[limit-1].Updated.UnixMilli(), out[limit-1].ID)
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

// AppendTurn implements Store.
func (m *Memory) AppendTurn(_ context.Context, id string, turn Turn) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	s.turns = append(s.turns, Turn{Messages: slices.Clone(turn.Messages), StopReason: turn.StopReason, Usage: turn.Usage, Compaction: cloneCompaction(turn.Compaction)})
	s.rec.Usage = s.rec.Usage.Add(turn.Usage)
	now := time.Now().Truncate(time.Millisecond)
	if !now.After(s.rec.Updated) {
		now = s.rec.Updated.Add(time.Millisecond)
	}
	s.rec.Updated = now
	if s.rec.Title == "" && len(turn.Messages) > 0 && turn.Messages[0].Role == gateway.RoleUser {
		s.rec.Title = TitleFrom(turn.Messages[0].Content)
	}
	return nil
}

// Turns implements Store.
func (m *Memory) Turns(_ context.Context, id string) ([]Turn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
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

// Close implements Store.
func (m *Memory) Close() error { return nil }
