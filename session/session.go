// Package session keeps acp-agent's sessions: their identities, their
// records and transcripts, and the store that keeps them across restarts.
//
// # Identities
//
// [NewID] issues ACP sessionIds; [Key] maps one to its gateway session key
// (the client's own from _meta, [MetaKey], or "acp:<sessionId>").
//
// # Stores
//
// A [Store] keeps each session's [Record] (working directory, title, times,
// server names and transports, model: never secrets) and its committed
// [Turn] values, and lists sessions newest first a page at a time
// ([ListOptions]). [OpenSQLite] opens the embedded store, one SQLite file
// (default [DefaultPath]) at schema version [SchemaVersion], shared safely by
// several agent processes; a damaged database is an error wrapping
// [ErrDamaged]. [NewMemory] is a store that lives as long as the process.
//
// # History
//
// [History] is the [gateway.History] of live sessions over a Store: the
// conversation of each attached session is cached in memory, and each
// finished turn is committed in one transaction. [TitleFrom] makes a
// session's title from its first prompt.
package session

import (
	"crypto/rand"
	"strings"
)

// idPrefix starts every sessionId the agent issues.
const idPrefix = "sess_"

// MetaKey is the _meta key of session/new under which a client may supply
// its own gateway session key.
const MetaKey = "sessionKey"

// NewID returns a new ACP sessionId: "sess_" and 26 random base32
// characters (130 bits), unguessable and safe in URLs and file names.
func NewID() string { return idPrefix + rand.Text() }

// Key returns the gateway session key of an ACP session: the client's own
// from _meta.sessionKey when it is a non-empty string, else "acp:<sessionId>"
// (docs/architecture.md, "Session key").
func Key(sessionID string, meta map[string]any) string {
	if k, ok := meta[MetaKey].(string); ok && strings.TrimSpace(k) != "" {
		return k
	}
	return "acp:" + sessionID
}
