package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
	"github.com/seed02d3eb6b/acp-agent/signin"
)

// The policies', the token file's and a signed-out server's errors state
// the fact; their remedies, which gateway.ErrorText shows, say what to
// do.
func TestErrorText(t *testing.T) {
	var p urlpolicy.Policy
	_, private := p.CheckURL("https://10.0.0.7/mcp")
	_, plain := p.CheckURL("http://mcp.example.com/mcp")
	_, metadata := p.CheckURL("http://169.254.169.254/")
	_, loopback := (&urlpolicy.Policy{RefuseLoopback: true}).CheckURL("http://127.0.0.1:9/mcp")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"private", private, `URL "https://10.0.0.7/mcp" refused: private network address 10.0.0.7 (set sandbox.allowPrivateNetworks to allow it)`},
		{"plain http", plain, `URL "http://mcp.example.com/mcp" refused: plain http only to loopback (localhost, 127.0.0.0/8, ::1); use https, or add the host to sandbox.allowHosts`},
		{"wrapped", fmt.Errorf("initialize failed: %w", private), `initialize failed: URL "https://10.0.0.7/mcp" refused: private network address 10.0.0.7 (set sandbox.allowPrivateNetworks to allow it)`},
		{"loopback on a gateway", loopback, `URL "http://127.0.0.1:9/mcp" refused: loopback address 127.0.0.1, on the agent's own host, not the client's; its operator may list the host in sandbox.allowHosts`},
		{"no setting", metadata, `URL "http://169.254.169.254/" refused: cloud metadata address 169.254.169.254`},
		{"rate limit", &quota.RateLimitError{Server: "gh", PerMinute: 3, RetryAfter: 19500 * time.Millisecond}, "rate limit: server gh allows 3 calls/min; retry in 20 s"},
		{"corrupt token file", fmt.Errorf("deleting the stored sign-in of MCP server %q: %w", "remote", &signin.CorruptError{Path: "/state/oauth-tokens.json", Err: errors.New("version 7, want 1")}),
			`deleting the stored sign-in of MCP server "remote": signin: corrupt token file /state/oauth-tokens.json (version 7, want 1): delete it and sign in to its MCP servers again`},
		{"signed out", errSignedOut, "signed out (/logout); /login signs in again"},
		{"signed out, calling", fmt.Errorf("%w: %w", ErrNotConnected, errSignedOut), "server not connected: signed out (/logout); /login signs in again"},
		{"other", errors.New("boom"), "boom"},
		{"nil", nil, ""},
	}
	for _, tt := range tests {
		if got := gateway.ErrorText(tt.err); got != tt.want {
			t.Errorf("%s: ErrorText = %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// A server whose name resolves to a private address is refused when it is
// dialed; its status keeps the *urlpolicy.Error, so ErrorText ends with
// the setting that would allow it.
func TestErrorText_DialRefusal(t *testing.T) {
	urls := &urlpolicy.Policy{Resolver: func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.0.0.5")}, nil
	}}
	m := NewManager(&Options{URLs: urls})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	_ = m.Connect(t.Context(), []ServerSpec{{Name: "corp", Transport: TransportHTTP, URL: "https://corp.test/mcp"}})
	st := m.Servers()[0]
	var pe *urlpolicy.Error
	if st.State != StateFailed || !errors.As(st.Err, &pe) || pe.Setting != urlpolicy.SettingAllowPrivateNetworks {
		t.Fatalf("status = %v %v, want failed with a private-network refusal", st.State, st.Err)
	}
	const hint = "corp.test resolves to private network address 10.0.0.5 (set sandbox.allowPrivateNetworks to allow it)"
	if got := gateway.ErrorText(st.Err); len(got) < len(hint) || got[len(got)-len(hint):] != hint {
		t.Errorf("ErrorText = %q, want it to end with %q", got, hint)
	}
}
