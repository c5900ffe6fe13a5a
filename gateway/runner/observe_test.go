package runner

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/audit"
)

// auditFuncs is an audit.Auditor of function fields.
type auditFuncs struct{ toolCall func(audit.Record) }

func (a auditFuncs) ToolCall(r audit.Record) { a.toolCall(r) }

var _ audit.Auditor = auditFuncs{}

// Every settled call is audited once, with the decision that let it run or
// stopped it and how it ended; the request gives the tenant and the
// sessionId.
func TestRunner_AuditsEveryToolCall(t *testing.T) {
	var runs atomic.Int32
	failing := &gateway.Tool{Name: "mcp__fx__fail", Group: "fx", Annotations: gateway.Annotations{ReadOnlyHint: true},
		Execute: func(context.Context, string, map[string]any, func(gateway.ToolUpdate)) (gateway.Result, error) {
			return gateway.ErrorResult("it failed"), nil
		}}
	write, read, banned := countingTool("write", false, &runs), countingTool("read", true, &runs), countingTool("banned", false, &runs)
	write.Group = "fx"
	const key = "acp:s1"
	reg := &gateway.Registry{}
	reg.Set(key, []*gateway.Tool{write, read, banned, failing})
	var mu sync.Mutex
	got := map[string]audit.Record{}
	rec := auditFuncs{func(r audit.Record) { mu.Lock(); got[r.CallID] = r; mu.Unlock() }}
	answers := []gateway.PermissionOutcome{gateway.PermissionAllowAlways, gateway.PermissionReject}
	ask := func(context.Context, gateway.PermissionRequest) (gateway.PermissionOutcome, error) {
		a := answers[0]
		answers = answers[1:]
		return a, nil
	}
	r := New(reg, &Options{
		Models: []gateway.Model{{ID: "fake", Provider: scripted(
			gateway.ToolCall{ID: "1", Name: "write", Args: map[string]any{"path": "a"}}, gateway.ToolCall{ID: "2", Name: "read"},
			gateway.ToolCall{ID: "3", Name: "banned"}, gateway.ToolCall{ID: "4", Name: "nope"}, gateway.ToolCall{ID: "5", Name: "mcp__fx__fail"},
		)}},
		Permissions: Permissions{Deny: []string{"banned"}},
		Audit:       rec,
	})
	run := func() {
		if _, err := r.Run(t.Context(), gateway.SendRequest{SessionKey: key, Tenant: "acme", SessionID: "s1", Ask: ask}, func(gateway.Event) {}); err != nil {
			t.Fatal(err)
		}
	}
	run()
	r.opts.Models[0].Provider = scripted(gateway.ToolCall{ID: "6", Name: "write"}) // allowed always: not asked
	run()
	r.Forget(t.Context(), key)
	r.opts.Models[0].Provider = scripted(gateway.ToolCall{ID: "7", Name: "write"}) // asked again: rejected
	run()

	want := map[string]struct {
		server, tool string
		perm         audit.Permission
		outcome      audit.Outcome
	}{
		"1": {"fx", "write", audit.PermissionAllowAlways, audit.OutcomeCompleted},
		"2": {"", "read", audit.PermissionPolicyAllow, audit.OutcomeCompleted},
		"3": {"", "banned", audit.PermissionPolicyDeny, audit.OutcomeNotRun},
		"4": {"", "nope", audit.PermissionUnknownTool, audit.OutcomeNotRun},
		"5": {"fx", "mcp__fx__fail", audit.PermissionPolicyAllow, audit.OutcomeFailed},
		"6": {"fx", "write", audit.PermissionAllowedAlways, audit.OutcomeCompleted},
		"7": {"fx", "write", audit.PermissionRejected, audit.OutcomeNotRun},
	}
	if len(got) != len(want) {
		t.Errorf("%d records, want %d: %+v", len(got), len(want), got)
	}
	for id, w := range want {
		g := got[id]
		if g.Server != w.server || g.Tool != w.tool || g.Permission != w.perm || g.Outcome != w.outcome {
			t.Errorf("call %s: %s/%s %s %s, want %s/%s %s %s", id, g.Server, g.Tool, g.Permission, g.Outcome, w.server, w.tool, w.perm, w.outcome)
		}
		if g.Tenant != "acme" || g.SessionID != "s1" || g.Time.IsZero() || g.Duration < 0 {
			t.Errorf("call %s: tenant %q session %q time %v duration %v", id, g.Tenant, g.SessionID, g.Time, g.Duration)
		}
	}
	if a := got["1"].Arguments; a["path"] != "a" {
		t.Errorf("arguments handed to the auditor = %v (the Log decides what to write)", a)
	}
}

// A model request is a span, a child of the turn's, with the provider,
// the model's name and the usage (input counting the cached tokens); the
// direct provider's requests are not. Not parallel: it installs a global
// tracer provider (the no-op one again at the end), as cmd/acp-agent does.
func TestRunner_TracesModelRequests(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	otel.SetTracerProvider(tp)
	// The global provider cannot go back to its initial delegate: the
	// no-op provider is what "off" is from here on.
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	model := &fakeProvider{complete: func(context.Context, *gateway.Request, func(gateway.Event)) (*gateway.Response, error) {
		return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent("hi")}},
			Usage: gateway.Usage{InputTokens: 10, CacheReadTokens: 100, CacheWriteTokens: 5, OutputTokens: 3, Requests: 1}}, nil
	}}
	r := New(&gateway.Registry{}, &Options{Models: []gateway.Model{{ID: "anthropic:claude-sonnet-4-5", Provider: model}}})
	ctx, turn := tp.Tracer("test").Start(t.Context(), "turn")
	if _, err := r.Run(ctx, gateway.SendRequest{SessionKey: "k", Message: []gateway.Content{gateway.TextContent("hello")}}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, gateway.SendRequest{SessionKey: "k", Model: DirectModelID, Message: []gateway.Content{gateway.TextContent("/tools")}, Command: &gateway.Command{Name: "tools"}}, func(gateway.Event) {}); err != nil {
		t.Fatal(err)
	}
	turn.End()
	var chats []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() != "turn" {
			chats = append(chats, s)
		}
	}
	if len(chats) != 1 || chats[0].Name() != "chat claude-sonnet-4-5" {
		t.Fatalf("spans besides the turn: %d (%v), want one chat span", len(chats), chats)
	}
	c := chats[0]
	if c.Parent().SpanID() != turn.SpanContext().SpanID() || c.SpanKind() != trace.SpanKindClient {
		t.Errorf("parent %s kind %v, want the turn %s and client", c.Parent().SpanID(), c.SpanKind(), turn.SpanContext().SpanID())
	}
	attrs := map[string]any{}
	for _, kv := range c.Attributes() {
		attrs[string(kv.Key)] = kv.Value.AsInterface()
	}
	for k, v := range map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "fake", "gen_ai.request.model": "claude-sonnet-4-5",
		"gen_ai.usage.input_tokens": int64(115), "gen_ai.usage.output_tokens": int64(3),
		"gen_ai.usage.cache_read.input_tokens": int64(100), "gen_ai.usage.cache_creation.input_tokens": int64(5),
	} {
		if attrs[k] != v {
			t.Errorf("%s = %v, want %v", k, attrs[k], v)
		}
	}
	if fr, _ := attrs["gen_ai.response.finish_reasons"].([]string); len(fr) != 1 || fr[0] != "end_turn" {
		t.Errorf("finish reasons = %v", attrs["gen_ai.response.finish_reasons"])
	}
}

// A session's tenant and id travel as fields of its request
// (SendRequest.Tenant, SessionID), not inside its key: the audit records
// of its calls and the spans of its model requests carry the tenant, a
// subagent's calls are audited under the subagent's id, and a session
// without a tenant's spans have no tenant attribute. Not parallel: it
// installs a global tracer provider, as TestRunner_TracesModelRequests.
func TestRunner_TenantInAuditAndSpans(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	var mu sync.Mutex
	var got []audit.Record
	for _, tenant := range []string{"acme", ""} { // a runner each: call ids are unique within a session
		s := &taskScript{
			parent: func(n int, req *gateway.Request) gateway.Message {
				if n == 0 {
					return gateway.Message{ToolCalls: []gateway.ToolCall{
						{ID: "p1", Name: "echo", Args: map[string]any{"message": "x"}},
						taskCall("t1", map[string]any{"description": "Look", "prompt": "look"}),
					}}
				}
				return answer("done")
			},
			child: func(_ context.Context, req *gateway.Request) (gateway.Message, error) {
				if len(req.Messages) == 1 {
					return gateway.Message{ToolCalls: []gateway.ToolCall{{ID: "c1", Name: "echo", Args: map[string]any{"message": "y"}}}}, nil
				}
				return answer("seen"), nil
			},
		}
		r := newTaskRunner(s, nil, echoTool("echo"))
		r.opts.Audit = auditFuncs{func(rec audit.Record) { mu.Lock(); got = append(got, rec); mu.Unlock() }}
		req := prompt("go")
		req.Tenant, req.SessionID = tenant, "sess_1"
		if _, err := r.Run(t.Context(), req, func(gateway.Event) {}); err != nil {
			t.Fatal(err)
		}
	}

	ids := map[string]string{}
	for _, rec := range got {
		ids[rec.Tenant+" "+rec.CallID] = rec.SessionID
	}
	want := map[string]string{"acme p1": "sess_1", "acme c1": "sess_1/task-t1", " p1": "sess_1", " c1": "sess_1/task-t1"}
	if len(got) != len(want) {
		t.Errorf("%d audit records, want %d: %+v", len(got), len(want), got)
	}
	for k, sid := range want {
		if ids[k] != sid {
			t.Errorf("audit record (tenant, call) %q: sessionId %q, want %q (all: %v)", k, ids[k], sid, ids)
		}
	}
	tenants := map[string]int{}
	for _, sp := range sr.Ended() {
		tenant := "(none)"
		for _, kv := range sp.Attributes() {
			if kv.Key == "acp_agent.tenant" {
				tenant = kv.Value.AsString()
			}
		}
		tenants[tenant]++
	}
	// Each run: the parent's 2 requests and the child's 2.
	if tenants["acme"] != 4 || tenants["(none)"] != 4 || len(tenants) != 2 {
		t.Errorf("model request spans by acp_agent.tenant = %v, want 4 of acme's and 4 without", tenants)
	}
}
