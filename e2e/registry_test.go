package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
)

// The ACP registry lists only agents that offer an "agent" or "terminal"
// auth method. Its validator (.github/workflows/client.py of
// agentclientprotocol/registry, the commit internal/acpregistry/testdata
// names) starts the entry's cmd with no arguments in an empty HOME,
// initializes with these capabilities, and takes a method's type from its
// "type" field, else from _meta["terminal-auth"] (terminal), else "agent".
// acp-agent, with no model key anywhere, offers its terminal login so.
func TestRegistry_AuthCheckFindsTheTerminalLogin(t *testing.T) {
	t.Parallel()
	a := startAgentWith(t, nil) // the registry's command: no model flag, no key, empty HOME
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := a.Conn.Initialize(ctx, acpsdk.InitializeRequest{
		ProtocolVersion: 1,
		ClientInfo:      &acpsdk.Implementation{Name: "ACP Registry Validator", Version: "1.0.0"},
		ClientCapabilities: acpsdk.ClientCapabilities{
			Terminal: true,
			Fs:       acpsdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true},
			Meta:     map[string]any{"terminal_output": true, "terminal-auth": true},
		},
	})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	raw, err := json.Marshal(res.AuthMethods)
	if err != nil {
		t.Fatal(err)
	}
	var methods []struct {
		ID   string         `json:"id"`
		Type string         `json:"type"`
		Meta map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &methods); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range methods {
		typ := m.Type
		if typ == "" {
			if _, ok := m.Meta["terminal-auth"]; ok {
				typ = "terminal"
			} else {
				typ = "agent"
			}
		}
		if typ == "terminal" {
			ta, _ := m.Meta["terminal-auth"].(map[string]any)
			args, _ := json.Marshal(ta["args"])
			if string(args) != `["login"]` {
				t.Errorf("auth method %s: _meta.terminal-auth = %v, want the args [\"login\"]", m.ID, ta)
			}
			found = true
		}
	}
	if !found {
		t.Errorf("initialize authMethods = %s: the registry's validator finds no terminal method", raw)
	}
}
