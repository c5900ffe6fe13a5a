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
