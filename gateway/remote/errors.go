package remote

import (
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// What the gateway tells a translator when something fails on its side.
//
// A connection's translator is one tenant's; the gateway serves many. An
// error that reaches a translator (an error response, a chat.error event)
// therefore carries only what that tenant may know: its own wire session
// keys (never the runtime's tenant-scoped names, "tenant:<t>|<key>"), its own
// session ids, and the gateway's own words. The errors of the session store
// and its driver (which name the database's URL, host and user, a SQLite
// file's path, or rows of other tenants' sessions) never cross: they are
// logged here, whole, under a short reference, and the translator gets
// "… the session store failed (ref 5c1f0e9a); see the gateway's log", the
// reference its operator looks up.

// newRef returns a fresh reference for a log line: 8 random hex digits.
func newRef() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}

// internalError logs err, the cause of what (such as "sessions.get: the
// session store"), with its details (and, for a session store's file, what
// to do: store.ErrorText) and a fresh reference, and returns the error the
// translator gets: code, what failed and the reference, nothing of err.
func (c *serverConn) internalError(code int64, what string, err error) *jsonrpc2.Error {
	ref := newRef()
	tenant, client := c.who()
	c.s.log.Error(what+" failed", "ref", ref, "tenant", tenant, "client", client, "err", store.ErrorText(err))
	return wireError(code, "%s failed (ref %s); see the gateway's log", what, ref)
}

// storeError maps an error of the session store to the wire: not_found,
// bad_cursor and conflict carry the session package's own words (the same
// text for a missing session and another tenant's); any other failure is an
// internalError ("<method>: the session store failed (ref …)").
func (c *serverConn) storeError(method string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return wireError(CodeNotFound, "%s: %v", method, store.ErrNotFound)
	case errors.Is(err, store.ErrBadCursor):
		return wireError(CodeBadCursor, "%s: %v", method, store.ErrBadCursor)
	case errors.Is(err, store.ErrFenced):
		return wireError(CodeConflict, "%s: %v", method, store.ErrFenced)
	}
	return c.internalError(CodeInternal, method+": the session store", err)
}

// shown is an error a handler returns as it reaches the translator: a
// protocol error (*jsonrpc2.Error, *fatalError) as it is, anything else as
// an internalError of method, so that no Go error's text (a store's, a
// driver's) is sent by accident.
func (c *serverConn) shown(method string, err error) error {
	var je *jsonrpc2.Error
	var fe *fatalError
	if err == nil || errors.As(err, &je) || errors.As(err, &fe) {
		return err
	}
	return c.internalError(CodeInternal, method, err)
}

// turnErrorText is what the translator is told of err, the error of a
// turn the gateway ran (chat.error, chat.send's error): err's text and, for
// a *provider.Error, its Hint in parentheses, the words the translator's
// front end shows its user.
func turnErrorText(err error) string {
	var pe *provider.Error
	if errors.As(err, &pe) && pe.Hint != "" {
		return err.Error() + " (" + pe.Hint + ")"
	}
	return err.Error()
}
