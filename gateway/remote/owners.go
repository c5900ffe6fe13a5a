package remote

import (
	"context"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// Which connection's tools a session key's turns run with, on one gateway.
//
// The rule is the fleet's, so that two translators on one replica see what
// two translators on two replicas see. Each connection keeps its own tools
// for each session key it registered (sessions.setExtraTools); the runner's
// registry holds one set per key, the owner's: the connection that last
// registered tools for the key or ran a turn of it. Any connection of the
// tenant may take the key (session/load in another editor), except while a
// turn of it runs here: then its registration waits for its own next turn
// (the running turn keeps the tools it started with), and its chat.send is
// busy, exactly as a prompt through another replica is (the lease). The
// previous owner keeps its tools and takes the key back by the same rule at
// its next turn; its sessions.clearExtraTools never removes the new owner's
// tools, and its late writes to a stored session are fenced by the lease.
// What the runner keeps of the key ("allow always" answers) stays with the
// key, whichever of the tenant's connections takes it.
//
// Lock order: Server.mu, then serverConn.mu.

// setTools records tools as the connection's set for the session key and
// installs them (the connection becomes the key's owner), unless another
// connection runs a turn of the key here: then they are installed when this
// connection's next turn of the key starts (claimTurn).
func (c *serverConn) setTools(wireKey string, tools []*gateway.Tool) {
	key := c.scoped(wireKey)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.mu.Lock()
	c.tools[key] = tools
	c.mu.Unlock()
	if t := c.s.turning[key]; t != nil && t != c {
		return
	}
	c.s.owners[key] = c
	c.s.local.Registry().Set(key, tools)
}

// dropTools forgets the connection's tools of the session key; when they
// are the installed ones, the key's registry entry and the runner's state of
// it go too. Another connection's tools of the key stay.
func (c *serverConn) dropTools(ctx context.Context, wireKey string) {
	key := c.scoped(wireKey)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.mu.Lock()
	delete(c.tools, key)
	c.mu.Unlock()
	if c.s.owners[key] == c {
		delete(c.s.owners, key)
		_ = c.s.local.ClearExtraTools(ctx, key) // in memory: quick, and under mu so no new owner's set is cleared
	}
}

// claimTurn makes the connection the owner of the session key for a turn,
// installing its tools if another connection's were installed. While the
// turn runs no other connection may take the key; unclaim (call it once,
// when the turn ends, before its lease is released) ends that. Another turn
// of the key running here is a CodeBusy error shaped as the lease's.
func (c *serverConn) claimTurn(wireKey string) (unclaim func(), err error) {
	key := c.scoped(wireKey)
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if c.s.turning[key] != nil {
		return nil, busyError(wireKey, c.s.opts.Replica)
	}
	c.s.turning[key] = c
	if c.s.owners[key] != c {
		c.s.owners[key] = c
		c.mu.Lock()
		tools, ok := c.tools[key]
		if !ok {
			c.tools[key] = nil // the key is the connection's now: release clears it
		}
		c.mu.Unlock()
		c.s.local.Registry().Set(key, tools)
	}
	return func() {
		c.s.mu.Lock()
		defer c.s.mu.Unlock()
		if c.s.turning[key] == c {
			delete(c.s.turning, key)
		}
	}, nil
}

// release removes the installed tools of every session key this
// connection owns, when it is gone; the sessions' conversations stay with
// their translators, and other connections' tools of the same keys stay
// with them.
func (c *serverConn) release() {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.tools {
		if c.s.owners[key] == c {
			delete(c.s.owners, key)
			c.s.local.Registry().Clear(key)
		}
	}
	c.tools = map[string][]*gateway.Tool{}
}

// busyError is the CodeBusy error of a turn of id (a stored session's id,
// or a wire session key) that holder runs: the lease's message
// (store.LeasedError) and what the user can do, whichever replica or
// connection runs the turn.
func busyError(id, holder string) error {
	return wireError(CodeBusy, "%s: wait for it to end (or cancel it there), then prompt again", &store.LeasedError{ID: id, Owner: holder})
}
