package gateway

import (
	"slices"
	"sync"
)

// Registry holds the extra tools of each session, keyed by gateway session
// key (for an ACP session, "acp:<sessionId>"). Replacing a session's set is
// atomic: a reader sees the old set or the new one, never a mix. The runner
// reads the set at the start of every model turn.
//
// The zero Registry is ready to use; it is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	tools map[string][]*Tool // session key → tools in registration order; slices are never mutated after Set
}

// Set replaces the extra tools of sessionKey with tools. The slice is copied;
// the Tools themselves must not be modified afterwards. An empty tools clears
// the set.
func (r *Registry) Set(sessionKey string, tools []*Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(tools) == 0 {
		delete(r.tools, sessionKey)
		return
	}
	if r.tools == nil {
		r.tools = make(map[string][]*Tool)
	}
	r.tools[sessionKey] = slices.Clone(tools)
}

// Clear removes every extra tool of sessionKey. Clearing an unknown key is a
// no-op.
func (r *Registry) Clear(sessionKey string) {
	r.Set(sessionKey, nil)
}

// Tools returns the extra tools of sessionKey in registration order. The
// returned slice is shared and must not be modified.
func (r *Registry) Tools(sessionKey string) []*Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.tools[sessionKey]
}

// Lookup returns the extra tool of sessionKey named name, or nil.
func (r *Registry) Lookup(sessionKey, name string) *Tool {
	for _, t := range r.Tools(sessionKey) {
		if t.Name == name {
			return t
		}
	}
	return nil
}
