package runner

import (
	"log/slog"
	"sync"
	"weak"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// callIDIndex holds, per session key, the tool call IDs of the session's
// history, so that making a response's call IDs unique reads each history
// message once rather than the whole history at every model response. It
// does not keep histories alive: an entry whose history has been freed (its
// session ended without Runner.Forget) is dropped when a session is added.
// It is safe for concurrent use; turns of different sessions do not wait for
// each other.
type callIDIndex struct {
	mu sync.Mutex
	m  map[string]*sessionCallIDs
}

// sessionCallIDs are the call IDs found in the first n messages of the
// history whose first message is first (a weak pointer: equal only for the
// same array, even after it is freed). A gateway.History only appends
// to a session's messages (until Forget), so a history that starts at the
// same address and is no shorter begins with the messages already read; any
// other history (one reallocated by an append, or reloaded) is read again
// from the start.
type sessionCallIDs struct {
	mu    sync.Mutex
	first weak.Pointer[gateway.Message]
	n     int
	used  map[string]struct{}
}

// unique makes the IDs of calls unique in the session sessionKey, whose
// history is history (the finished turns) and turn (the running turn so
// far): a call with no ID, or with the ID of a call in history (a model may
// reuse one, and a loaded session's history holds the calls of earlier
// agent processes), in turn or earlier in calls, gets a fresh one. The
// client and the history then see only the new ID, so no two calls of a
// session share one (the client would merge them, and Anthropic rejects
// such a history).
func (x *callIDIndex) unique(sessionKey string, calls []gateway.ToolCall, history, turn []gateway.Message, log *slog.Logger) {
	if len(calls) == 0 {
		return
	}
	x.mu.Lock()
	if x.m == nil {
		x.m = make(map[string]*sessionCallIDs)
	}
	s := x.m[sessionKey]
	if s == nil {
		x.dropFreed()
		s = &sessionCallIDs{}
		x.m[sessionKey] = s
	}
	x.mu.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	s.catchUp(history)
	// The running turn is short and not yet in the history: read it each
	// time, with the IDs given so far in calls.
	fresh := make(map[string]struct{}, len(calls))
	for _, m := range turn {
		addCallIDs(fresh, m)
	}
	taken := func(id string) bool {
		_, inHistory := s.used[id]
		_, inTurn := fresh[id]
		return id == "" || inHistory || inTurn
	}
	for i := range calls {
		if taken(calls[i].ID) {
			id := NewToolCallID()
			for taken(id) {
				id = NewToolCallID()
			}
			log.Debug("tool call ID already used in the session: renamed", "tool", calls[i].Name, "id", calls[i].ID, "newId", id)
			calls[i].ID = id
		}
		fresh[calls[i].ID] = struct{}{}
	}
}

// catchUp adds the call IDs of the messages of history not read yet, or of
// all of them if history is not the one read before.
func (s *sessionCallIDs) catchUp(history []gateway.Message) {
	var first weak.Pointer[gateway.Message]
	if len(history) > 0 {
		first = weak.Make(&history[0])
	}
	if first != s.first || len(history) < s.n || s.used == nil {
		s.first, s.n, s.used = first, 0, make(map[string]struct{})
	}
	for _, m := range history[s.n:] {
		addCallIDs(s.used, m)
	}
	s.n = len(history)
}

// addCallIDs adds the IDs of m's tool calls, or of the call m answers.
func addCallIDs(used map[string]struct{}, m gateway.Message) {
	for _, c := range m.ToolCalls {
		used[c.ID] = struct{}{}
	}
	if m.ToolCallID != "" {
		used[m.ToolCallID] = struct{}{}
	}
}

// dropFreed drops the entries whose history has been freed. x.mu is held.
func (x *callIDIndex) dropFreed() {
	for k, s := range x.m {
		s.mu.Lock()
		freed := s.n > 0 && s.first.Value() == nil
		s.mu.Unlock()
		if freed {
			delete(x.m, k)
		}
	}
}

// forget drops what is kept of sessionKey.
func (x *callIDIndex) forget(sessionKey string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.m, sessionKey)
}
