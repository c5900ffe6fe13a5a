package bridge

import (
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolCache is a server's tool list (tools/list), which the Manager bridges
// and a retried call reads hints from. The zero value is an empty list.
type toolCache struct {
	// mu guards list. It is taken inside the Manager's mu and the
	// server's connection mu, never the other way round, and never held
	// across a request.
	mu   sync.Mutex
	list []*mcp.Tool // from tools/list, in server order; never modified once set

	refresh rerun // tools/list_changed refreshes
}

// get returns the list; the slice must not be modified.
func (c *toolCache) get() []*mcp.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.list
}

// set replaces the list.
func (c *toolCache) set(list []*mcp.Tool) {
	c.mu.Lock()
	c.list = list
	c.mu.Unlock()
}

// idempotent reports whether the tool named name says that calling it twice
// does no more than once (readOnlyHint or idempotentHint).
func (c *toolCache) idempotent(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.list {
		if t.Name == name && t.Annotations != nil {
			return t.Annotations.ReadOnlyHint || t.Annotations.IdempotentHint
		}
	}
	return false
}
