package runner

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/audit"
)

// Read-only mode refuses a tool that may change things before anyone is
// asked, whatever the policy or an earlier "allow always" says; a
// readOnlyHint tool and a Confined one run as the policy says (a Confined
// one is still asked about); ReadOnly false changes nothing. A model's call
// and a /call of the direct provider take the same path.
func TestRunner_ReadOnlyMode(t *testing.T) {
	const refused = "mcp__fx__t was refused: the session is in read-only mode"
	tests := []struct {
		name            string
		readOnly        bool
		hint, confined  bool
		perms           Permissions
		granted, noAsk  bool // an earlier "allow always"; no Ask func
		asked, ran      bool
		text            string // a prefix of the result's text
		perm            audit.Permission
		decision        string
		wantFailedEvent bool
	}{
		{name: "refuses a tool that may change things", readOnly: true,
			text: refused, perm: audit.PermissionModeDeny, decision: "read_only", wantFailedEvent: true},
		{name: "refuses it under mode allow", readOnly: true, perms: Permissions{Mode: PermissionAllow},
			text: refused, perm: audit.PermissionModeDeny, decision: "read_only", wantFailedEvent: true},
		{name: "refuses it under an allow glob", readOnly: true, perms: Permissions{Allow: []string{"mcp__fx__*"}},
			text: refused, perm: audit.PermissionModeDeny, decision: "read_only", wantFailedEvent: true},
		{name: "refuses it after allow always", readOnly: true, granted: true,
			text: refused, perm: audit.PermissionModeDeny, decision: "read_only", wantFailedEvent: true},
		{name: "refuses it with no one to ask", readOnly: true, noAsk: true,
			text: refused, perm: audit.PermissionModeDeny, decision: "read_only", wantFailedEvent: true},
		{name: "a denying policy comes first", readOnly: true, perms: Permissions{Deny: []string{"mcp__fx__*"}},
			text: "tool mcp__fx__t is denied", perm: audit.PermissionPolicyDeny, decision: "deny", wantFailedEvent: true},
		{name: "runs a readOnlyHint tool", readOnly: true, hint: true,
			ran: true, text: "ran", perm: audit.PermissionPolicyAllow, decision: "allow"},
		{name: "asks for a Confined tool", readOnly: true, confined: true,
			asked: true, ran: true, text: "ran", perm: audit.PermissionAllowOnce, decision: "allow_once"},
		{name: "runs a Confined tool the policy allows", readOnly: true, confined: true, perms: Permissions{Mode: PermissionAllow},
			ran: true, text: "ran", perm: audit.PermissionPolicyAllow, decision: "allow"},
		{name: "not read-only asks", asked: true, ran: true, text: "ran", perm: audit.PermissionAllowOnce, decision: "allow_once"},
		{name: "not read-only, allowed always", granted: true, ran: true, text: "ran", perm: audit.PermissionAllowedAlways, decision: "granted"},
	}
	for _, tt := range tests {
		for _, direct := range []bool{false, true} {
			name := tt.name + "/model"
			if direct {
				name = tt.name + "/direct"
			}
			t.Run(name, func(t *testing.T) {
				var runs atomic.Int32
				tool := countingTool("mcp__fx__t", tt.hint, &runs)
				tool.Group, tool.Confined = "fx", tt.confined
				reg := &gateway.Registry{}
				reg.Set("k", []*gateway.Tool{tool})
				var asked atomic.Int32
				req := gateway.SendRequest{SessionKey: "k", ReadOnly: tt.readOnly}
				if !tt.noAsk {
					req.Ask = func(context.Context, gateway.PermissionRequest) (gateway.PermissionOutcome, error) {
						asked.Add(1)
						return gateway.PermissionAllowOnce, nil
					}
				}
				var records []audit.Record
				var mu sync.Mutex
				obs := &observed{}
				opts := &Options{Permissions: tt.perms, Observer: obs,
					Audit: auditFuncs{func(r audit.Record) { mu.Lock(); records = append(records, r); mu.Unlock() }}}
				if direct {
					req.Message = []gateway.Content{gateway.TextContent("/call mcp__fx__t {}")}
					req.Command = &gateway.Command{Name: "call", Args: "mcp__fx__t {}"}
				} else {
					opts.Models = []gateway.Model{{ID: "fake", Provider: scripted(gateway.ToolCall{ID: "1", Name: "mcp__fx__t"})}}
				}
				r := New(reg, opts)
				if tt.granted {
					r.grants.grant("k", "mcp__fx__t")
				}
				var end *gateway.ToolCallEvent
				if _, err := r.Run(t.Context(), req, func(e gateway.Event) {
					if e.Kind == gateway.EventToolEnd {
						end = e.Call
					}
				}); err != nil {
					t.Fatal(err)
				}
				if end == nil {
					t.Fatal("no tool_call end")
				}
				if got := asked.Load() > 0; got != tt.asked {
					t.Errorf("asked %v, want %v", got, tt.asked)
				}
				if got := runs.Load() > 0; got != tt.ran {
					t.Errorf("ran %v, want %v", got, tt.ran)
				}
				if text := end.Result.Content[0].Text; !strings.HasPrefix(text, tt.text) || end.Result.IsError != tt.wantFailedEvent {
					t.Errorf("result %q (isError %v), want %q… (isError %v)", text, end.Result.IsError, tt.text, tt.wantFailedEvent)
				}
				if (end.Status == gateway.ToolFailed) != tt.wantFailedEvent {
					t.Errorf("status %s", end.Status)
				}
				if len(records) != 1 || records[0].Permission != tt.perm {
					t.Errorf("audit records %+v, want one with permission %s", records, tt.perm)
				}
				if !slices.Contains(obs.lines, "permission "+tt.decision) {
					t.Errorf("observed %q, want permission %s", obs.lines, tt.decision)
				}
			})
		}
	}
}

// The tools offered are the same in every mode: a mode switch mid-session
// must not change the tool definitions, the prompt cache's prefix. Denied
// tools stay hidden in both.
func TestRunner_ReadOnlyModeOffersTheSameTools(t *testing.T) {
	var runs atomic.Int32
	reg := &gateway.Registry{}
	reg.Set("k", []*gateway.Tool{countingTool("write", false, &runs), countingTool("read", true, &runs), countingTool("banned", false, &runs)})
	var offered [][]string
	p := &fakeProvider{complete: func(_ context.Context, req *gateway.Request, _ func(gateway.Event)) (*gateway.Response, error) {
		var names []string
		for _, t := range req.Tools {
			names = append(names, t.Name)
		}
		offered = append(offered, names)
		return &gateway.Response{}, nil
	}}
	r := New(reg, &Options{Models: []gateway.Model{{ID: "f", Provider: p}}, Permissions: Permissions{Deny: []string{"banned"}}})
	for _, readOnly := range []bool{false, true, false} {
		if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: "k", ReadOnly: readOnly}, func(gateway.Event) {}); err != nil {
			t.Fatal(err)
		}
	}
	for i, names := range offered {
		if strings.Join(names, ",") != "write,read" {
			t.Errorf("request %d offered %v, want write,read", i, names)
		}
	}
}
