package session_test

import (
	"context"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/internal/audit"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// auditFuncs is an audit.Auditor of function fields.
type auditFuncs struct{ toolCall func(audit.Record) }

func (a auditFuncs) ToolCall(r audit.Record) { a.toolCall(r) }

var _ audit.Auditor = auditFuncs{}

// A Core's tenant (CoreOptions.Tenant, a gateway's per-tenant Core) and
// the session's id reach the runner with every turn, as fields of its
// request: the audit record of a call names them, whatever key the client
// chose for the session; a Core without a tenant audits tenant "".
func TestCore_TenantReachesTheAuditLog(t *testing.T) {
	year := func(session.InProcessEnv) *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "clock", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "year", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "2026"}}}, nil, nil
			})
		return s
	}
	for _, tenant := range []string{"acme", ""} {
		var mu sync.Mutex
		var got []audit.Record
		core := session.NewCore(&session.CoreOptions{
			Gateway:   runner.NewLocal(&runner.Options{Audit: auditFuncs{func(r audit.Record) { mu.Lock(); got = append(got, r); mu.Unlock() }}}),
			InProcess: []session.InProcessServer{{Name: "clock", New: year}},
			Tenant:    tenant,
		})
		s, err := core.Open(t.Context(), session.OpenRequest{Cwd: t.TempDir(), Key: "tenant:other|the-clients-key"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Prompt(t.Context(), session.PromptRequest{Content: []gateway.Content{gateway.TextContent("/call mcp__clock__year {}")}}); err != nil {
			t.Fatal(err)
		}
		core.Shutdown()
		mu.Lock()
		if len(got) != 1 || got[0].Tenant != tenant || got[0].SessionID != s.ID() || got[0].Tool != "mcp__clock__year" || got[0].Outcome != audit.OutcomeCompleted {
			t.Errorf("tenant %q: audit records %+v, want one completed mcp__clock__year call of tenant %q, session %s", tenant, got, tenant, s.ID())
		}
		mu.Unlock()
	}
}
