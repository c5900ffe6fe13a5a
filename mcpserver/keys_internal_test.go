package mcpserver

import (
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/session"
)

// TestStoredID: a key is namespaced by its client: a digest of both, the
// same for the same pair, different for another client or key; a key of the
// issued form from the local client is the session ID itself (the keys of
// before client-chosen keys). The ID holds neither the key nor the client.
func TestStoredID(t *testing.T) {
	issued := session.NewID()
	if got := storedID("", issued); got != issued {
		t.Errorf("storedID(local, %q) = %q, want the key itself", issued, got)
	}
	ids := map[string]bool{}
	for _, c := range []struct{ client, key string }{
		{"", "user-123-conversation"}, {"token:aa", "user-123-conversation"}, {"token:bb", "user-123-conversation"},
		{"token:aa", issued}, {"token:aa", "user-123-conversation2"}, {"", "sess_short"},
	} {
		id := storedID(c.client, c.key)
		if id != storedID(c.client, c.key) {
			t.Errorf("storedID(%q, %q) is not deterministic", c.client, c.key)
		}
		if !strings.HasPrefix(id, "mcp_") || len(id) != len("mcp_")+26 || strings.Contains(id, c.key) || c.client != "" && strings.Contains(id, c.client) {
			t.Errorf("storedID(%q, %q) = %q: want mcp_ and 26 base32 characters, neither key nor client", c.client, c.key, id)
		}
		if ids[id] {
			t.Errorf("storedID(%q, %q) = %q collides", c.client, c.key, id)
		}
		ids[id] = true
	}
	for key, want := range map[string]bool{issued: true, "sess_" + strings.Repeat("A", 26): true, "sess_" + strings.Repeat("a", 26): false, "sess_" + strings.Repeat("A", 25): false, "mcp_" + strings.Repeat("A", 26): false} {
		if got := issuedForm(key); got != want {
			t.Errorf("issuedForm(%q) = %v, want %v", key, got, want)
		}
	}
}
