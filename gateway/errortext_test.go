package gateway_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/provider"
	"github.com/seed02d3eb6b/acp-agent/sandbox/quota"
	"github.com/seed02d3eb6b/acp-agent/sandbox/urlpolicy"
	"github.com/seed02d3eb6b/acp-agent/session/store"
	"github.com/seed02d3eb6b/acp-agent/signin"
)

// The errors of the packages gateway does not import meet the contract by
// their method alone.
var (
	_ gateway.Remedier = (*urlpolicy.Error)(nil)
	_ gateway.Remedier = (*quota.RateLimitError)(nil)
	_ gateway.Remedier = (*signin.CorruptError)(nil)
	_ gateway.Remedier = (*provider.Error)(nil)
)

// remedied is an error with a remedy of the test's choosing, wrapping err.
type remedied struct {
	msg, remedy string
	err         error
}

func (e *remedied) Error() string  { return e.msg }
func (e *remedied) Remedy() string { return e.remedy }
func (e *remedied) Unwrap() error  { return e.err }

func TestErrorText(t *testing.T) {
	full := &remedied{msg: "disk I/O error (778)", remedy: "once there is room, writes succeed again"}
	busy := &remedied{msg: "busy", remedy: "send the prompt again"}
	private := &remedied{msg: "private network address 10.0.0.7", remedy: " (set sandbox.allowPrivateNetworks to allow it)"}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"none", errors.New("boom"), "boom"},
		{"joined with ; ", busy, "busy; send the prompt again"},
		{"its own joint", private, "private network address 10.0.0.7 (set sandbox.allowPrivateNetworks to allow it)"},
		{"its own colon", &remedied{msg: "corrupt", remedy: ": delete it"}, "corrupt: delete it"},
		{"wrapped", fmt.Errorf("initialize failed: %w", private),
			"initialize failed: private network address 10.0.0.7 (set sandbox.allowPrivateNetworks to allow it)"},
		{"nested: innermost first", &remedied{msg: "lease lost (" + full.Error() + ")", remedy: "send the prompt again", err: full},
			"lease lost (" + full.Error() + "); once there is room, writes succeed again; send the prompt again"},
		{"joined: left to right", errors.Join(private, busy),
			private.Error() + "\nbusy (set sandbox.allowPrivateNetworks to allow it); send the prompt again"},
		{"the same remedy once", fmt.Errorf("%w: %w", busy, &remedied{msg: "again", remedy: "send the prompt again"}),
			"busy: again; send the prompt again"},
		{"empty remedy", &remedied{msg: "quiet"}, "quiet"},
		{"WithRemedy", fmt.Errorf("opening: %w", gateway.WithRemedy(errors.New("locked"), "or start with --store memory")),
			"opening: locked; or start with --store memory"},
	} {
		if got := gateway.ErrorText(tt.err); got != tt.want {
			t.Errorf("%s: ErrorText = %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// Each kind of remedy, as the front ends show it: the policy's, the rate
// limit's, the sign-in token file's, the session store's file's and a
// provider's hint; the session's and the bridge's own are in their
// packages' tests.
func TestErrorText_Remedies(t *testing.T) {
	var p urlpolicy.Policy
	_, private := p.CheckURL("https://10.0.0.7/mcp")
	_, plain := p.CheckURL("http://mcp.example.com/mcp")
	_, metadata := p.CheckURL("http://169.254.169.254/")
	_, loopback := (&urlpolicy.Policy{RefuseLoopback: true}).CheckURL("http://127.0.0.1:9/mcp")
	full := &store.FileError{Path: "/s.db", Err: fmt.Errorf("%w: %w", errors.New("disk I/O error (778)"), store.ErrFull)}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"policy: private network", private,
			`URL "https://10.0.0.7/mcp" refused: private network address 10.0.0.7 (set sandbox.allowPrivateNetworks to allow it)`},
		{"policy: plain http", plain,
			`URL "http://mcp.example.com/mcp" refused: plain http only to loopback (localhost, 127.0.0.0/8, ::1); use https, or add the host to sandbox.allowHosts`},
		{"policy: loopback on a gateway", loopback,
			`URL "http://127.0.0.1:9/mcp" refused: loopback address 127.0.0.1, on the agent's own host, not the client's; its operator may list the host in sandbox.allowHosts`},
		{"policy: no setting allows it", metadata, `URL "http://169.254.169.254/" refused: cloud metadata address 169.254.169.254`},
		{"rate limit", &quota.RateLimitError{Server: "gh", PerMinute: 3, RetryAfter: 19500 * time.Millisecond},
			"rate limit: server gh allows 3 calls/min; retry in 20 s"},
		{"sign-in token file", fmt.Errorf("deleting: %w", &signin.CorruptError{Path: "/t.json", Err: errors.New("version 7, want 1")}),
			"deleting: signin: corrupt token file /t.json (version 7, want 1): delete it and sign in to its MCP servers again"},
		{"store: damaged", &store.FileError{Path: "/s.db", Err: store.ErrDamaged},
			"session store /s.db: the database is damaged: move the file away (or restore it from a backup) and start acp-agent again, which creates a new empty store"},
		{"store: full", full,
			"session store /s.db: disk I/O error (778): the disk may be full or the file not allowed to grow; once there is room, writes succeed again"},
		{"store: none", &store.SchemaError{Have: 9, Want: 5}, "the database has schema version 9, newer than this acp-agent's 5"},
		{"provider hint", &provider.Error{Provider: "anthropic", Status: 404, Hint: "check the model name and the base URL"},
			"anthropic: HTTP 404 Not Found (check the model name and the base URL)"},
		{"provider, no hint", &provider.Error{Provider: "anthropic", Status: 418}, "anthropic: HTTP 418 I'm a teapot"},
		{"two kinds", fmt.Errorf("%w (%w)", private, full), private.Error() + " (" + full.Error() + ")" +
			" (set sandbox.allowPrivateNetworks to allow it); once there is room, writes succeed again"},
	} {
		if got := gateway.ErrorText(tt.err); got != tt.want {
			t.Errorf("%s: ErrorText = %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// WithRemedy keeps err's text and chain, and adds nothing to nil or for an
// empty remedy.
func TestWithRemedy(t *testing.T) {
	base := &remedied{msg: "the database has schema version 9"}
	err := gateway.WithRemedy(base, ": upgrade")
	var got *remedied
	if err.Error() != base.Error() || !errors.As(err, &got) || got != base || !errors.Is(err, base) {
		t.Errorf("WithRemedy = %v, want %v's text, with errors.As and errors.Is seeing it", err, base)
	}
	var r gateway.Remedier
	if !errors.As(err, &r) || r.Remedy() != ": upgrade" {
		t.Errorf("WithRemedy's Remedier = %v", r)
	}
	if gateway.WithRemedy(nil, "x") != nil {
		t.Error("WithRemedy(nil) is not nil")
	}
	if got := gateway.WithRemedy(base, ""); got != error(base) {
		t.Errorf("WithRemedy(err, \"\") = %v, want err itself", got)
	}
	// A sentinel made with it is told by identity.
	sentinel := gateway.WithRemedy(errors.New("damaged"), "move it away")
	if wrapped := fmt.Errorf("open: %w", sentinel); !errors.Is(wrapped, sentinel) || gateway.ErrorText(wrapped) != "open: damaged; move it away" {
		t.Errorf("sentinel: Is %v, ErrorText %q", errors.Is(wrapped, sentinel), gateway.ErrorText(wrapped))
	}
}
