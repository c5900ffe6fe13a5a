package bridge

import (
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listCache is a server's list of one feature (its tools, its prompts)
// and the refresh its list_changed notification runs. The zero value is an
// empty list.
type listCache[T any] struct {
	// mu guards list. It is a leaf: never held across a request nor while
	// another lock is taken (it may be taken inside the Manager's mu and
	// the server's connection mu).
	mu   sync.Mutex
	list []T // from the feature's list request, in server order; never modified once set

	refresh rerun // list_changed refreshes
}

// get returns the list; the slice must not be modified.
func (c *listCache[T]) get() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.list
}

// set replaces the list.
func (c *listCache[T]) set(list []T) {
	c.mu.Lock()
	c.list = list
	c.mu.Unlock()
}

// toolCache is a server's tool list (tools/list), which the Manager bridges
// and a retried call reads hints from.
type toolCache struct{ listCache[*mcp.Tool] }

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
