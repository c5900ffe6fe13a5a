package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// keyPrefix starts the gateway session key of every conversation the
// server starts: "mcp:" and the stored session's ID, where an ACP
// session's is "acp:" and its ID, or a key its client chose. The stored
// record keeps it (store.Record.Key), and it is how the server tells its
// own conversations from other front ends' sessions in a shared store.
const keyPrefix = "mcp:"

// gatewayKey is the gateway session key of the conversation stored under
// id.
func gatewayKey(id string) string { return keyPrefix + id }

// ours reports whether rec is a conversation of an MCP server: its key is
// gatewayKey of its ID (an ACP client cannot choose it: it would have to
// name a session ID before the agent issues it), or its ID is a digest of
// a client's key ("mcp_", storedID), which only this server makes (before
// the key marked them, those were stored under "acp:" keys). A session an
// editor opened over ACP is neither.
func ours(rec store.Record) bool {
	return rec.Key == gatewayKey(rec.ID) || strings.HasPrefix(rec.ID, "mcp_")
}

// refusal is the error of a sessionKey whose stored session the server
// does not continue: its text says why and what to do instead.
type refusal string

func (r refusal) Error() string { return string(r) }

// reopen reopens the stored conversation id, of sessionKey key, in the
// server's directory. It refuses (a refusal) a session the server did not
// start, such as an editor's ACP session under a key of the issued form,
// and a conversation started in another directory: a conversation
// continues where it was started, where its transcript's paths and its
// servers' roots are, as ACP session/load requires. An unknown id wraps
// store.ErrNotFound.
func (sv *conversations) reopen(ctx context.Context, id, key string) (*session.Session, error) {
	rec, err := sv.core.Store().Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("reading the session store: %w", err)
	}
	here := sv.opts.Cwd
	switch {
	case !ours(rec):
		return nil, refusal(fmt.Sprintf("ask_agent: sessionKey %q names a session that an editor opened over ACP in %s, not a conversation of acp-agent mcp-server (this server runs in %s): "+
			"mcp-server continues only the conversations it started. Continue that session from its editor (session/load), or leave sessionKey out to start a new conversation", key, rec.Cwd, here))
	case filepath.Clean(rec.Cwd) != filepath.Clean(here):
		return nil, refusal(fmt.Sprintf("ask_agent: sessionKey %q: the conversation was started in %s, and this server runs in %s: "+
			"a conversation continues only in the directory it was started in. Run acp-agent mcp-server in %s to continue it, or leave sessionKey out (or use another key) to start a new conversation here", key, rec.Cwd, here, rec.Cwd))
	}
	return sv.core.Open(ctx, session.OpenRequest{ID: id, Cwd: here})
}
