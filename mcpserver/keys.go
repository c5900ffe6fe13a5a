package mcpserver

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/session"
)

// MaxKeyLength is the longest sessionKey a client may choose.
const MaxKeyLength = 128

// keyPattern is the JSON Schema pattern of a sessionKey: visible ASCII
// characters, '!' to '~' (no space, no control character).
const keyPattern = `^[!-~]+$`

// CheckKey reports whether key is a sessionKey a client may send: 1 to
// MaxKeyLength visible ASCII characters ('!' to '~': letters, digits and
// punctuation; no space or control character), such as
// "user-123-conversation" or a key an earlier result returned.
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKeyLength {
		return fmt.Errorf("ask_agent: sessionKey has %d characters: a sessionKey has 1 to %d", len(key), MaxKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < '!' || c > '~' {
			return fmt.Errorf("ask_agent: sessionKey %q has the character %q at byte %d: a sessionKey has only visible ASCII characters ('!' to '~': letters, digits, punctuation)", key, rune(c), i)
		}
	}
	return nil
}

// clientOf is the identity of the client that sent req: the UserID of the
// auth.TokenInfo an authenticating HTTP middleware attached to it (over
// --listen, a digest of the bearer token), or "" for a client the transport
// does not authenticate (stdio, or HTTP without a token): the one local
// client.
func clientOf(req *mcp.CallToolRequest) string {
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		return req.Extra.TokenInfo.UserID
	}
	return ""
}

// storedID is the ID of the stored session holding the conversation key of
// client. Keys are namespaced by client: the same key from two clients
// names two conversations. The ID is a digest of both ("mcp_" and 26
// base32 characters), so the store holds neither the client's identity nor
// its key; but a key of the form the agent issues ("sess_" and 26 base32
// characters) from the unauthenticated local client is the session's ID
// itself, as every key was before clients could choose theirs, so those
// conversations stay reachable.
func storedID(client, key string) string {
	if client == "" && issuedForm(key) {
		return key
	}
	h := sha256.New()
	h.Write([]byte("acp-agent mcp-server sessionKey\x00"))
	h.Write([]byte(client))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return "mcp_" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h.Sum(nil)[:16])
}

// issuedForm reports whether key has the form of the keys the agent
// issues: session.NewID's "sess_" and 26 base32 characters.
func issuedForm(key string) bool {
	rest, ok := strings.CutPrefix(key, "sess_")
	if !ok || len(rest) != 26 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// newKey is a key the agent issues for a call without one: unguessable.
func newKey() string { return session.NewID() }
