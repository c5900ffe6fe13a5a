package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

// otlpReceiver is an OTLP/HTTP trace receiver on 127.0.0.1 (protobuf, as
// otlptracehttp sends it): it keeps every span it is sent.
type otlpReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	service string        // the resource's service.name
	changed chan struct{} // closed and replaced on every export
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{changed: make(chan struct{})}
	r.Server = httptest.NewServer(http.HandlerFunc(r.export))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) export(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" || req.Method != http.MethodPost {
		http.NotFound(w, req)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var ex coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &ex); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range ex.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				r.service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// waitSpans waits until a span of each name has arrived and returns them
// by name (the first of each).
func (r *otlpReceiver) waitSpans(t *testing.T, d time.Duration, names ...string) map[string]*tracepb.Span {
	t.Helper()
	deadline := time.After(d)
	for {
		r.mu.Lock()
		got := map[string]*tracepb.Span{}
		for _, s := range r.spans {
			if _, ok := got[s.Name]; !ok {
				got[s.Name] = s
			}
		}
		ch := r.changed
		all := true
		for _, n := range names {
			all = all && got[n] != nil
		}
		if all {
			r.mu.Unlock()
			return got
		}
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("spans received: %v; want %v", keys(got), names)
		}
	}
}

func keys(m map[string]*tracepb.Span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func attr(s *tracepb.Span, key string) any {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			switch v := kv.Value.Value.(type) {
			case *commonpb.AnyValue_StringValue:
				return v.StringValue
			case *commonpb.AnyValue_IntValue:
				return v.IntValue
			}
			return kv.Value.String()
		}
	}
	return nil
}

// TestTrace_EditorToModelToMCPServer: with OTEL_EXPORTER_OTLP_ENDPOINT set,
// a prompt whose ACP _meta carries the editor's traceparent makes one trace:
// the turn's span is a child of the editor's span, the model request's and
// the tools/call's spans are children of the turn's, and the MCP server
// receives, in the tools/call _meta, a traceparent of the same trace whose
// parent is the tools/call span. Spans are flushed when the agent exits.
func TestTrace_EditorToModelToMCPServer(t *testing.T) {
	t.Parallel()
	const (
		editorTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
		editorSpan  = "00f067aa0ba902b7"
	)
	otlp := newOTLPReceiver(t)
	fake := fakemodel.NewAnthropic(t,
		fakemodel.Turn{ToolCalls: []fakemodel.ToolCall{{Name: "mcp__fx__meta", Args: `{}`}}},
		fakemodel.Turn{Text: "It got a traceparent."},
	)
	cfg := filepath.Join(t.TempDir(), "config.json")
	data, _ := json.Marshal(map[string]any{"model": map[string]any{"provider": "anthropic", "name": "claude-sonnet-4-5", "baseURL": fake.URL, "apiKeyEnv": "FAKE_MODEL_KEY"}})
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgentWith(t, []string{"FAKE_MODEL_KEY=test-key", "OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL}, "--config", cfg, "--store", "memory")
	sid := a.newSession(t.TempDir(), acpclient.Stdio("fx", fixtureBin, nil, nil))

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	from := len(a.Client.Updates())
	res, err := a.Conn.Prompt(ctx, acpsdk.PromptRequest{
		SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("what _meta does the server get?")},
		Meta: map[string]any{"traceparent": "00-" + editorTrace + "-" + editorSpan + "-01", "tracestate": "editor=zed"},
	})
	if err != nil || res.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v, %v", res.StopReason, err)
	}
	got := contentText(finalToolUpdate(t, a.Client.Updates()[from:]))
	var serverTP, serverTS string
	for _, line := range strings.Split(got, "\n") {
		if v, ok := strings.CutPrefix(line, "traceparent: "); ok {
			serverTP = v
		}
		if v, ok := strings.CutPrefix(line, "tracestate: "); ok {
			serverTS = v
		}
	}
	if err := a.Stop(30 * time.Second); err != nil { // exiting flushes the spans
		t.Fatalf("agent stop: %v", err)
	}

	spans := otlp.waitSpans(t, 30*time.Second, "invoke_agent acp-agent", "chat claude-sonnet-4-5", "tools/call meta")
	turn, chat, call := spans["invoke_agent acp-agent"], spans["chat claude-sonnet-4-5"], spans["tools/call meta"]
	hexID := func(b []byte) string { return fmt.Sprintf("%x", b) }
	if hexID(turn.TraceId) != editorTrace || hexID(turn.ParentSpanId) != editorSpan || turn.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("turn span: trace %x parent %x kind %v; want the editor's trace %s, parent %s, server", turn.TraceId, turn.ParentSpanId, turn.Kind, editorTrace, editorSpan)
	}
	for _, s := range []*tracepb.Span{chat, call} {
		if hexID(s.TraceId) != editorTrace || !bytes.Equal(s.ParentSpanId, turn.SpanId) || s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("%s: trace %x parent %x kind %v; want trace %s, parent the turn %x, client", s.Name, s.TraceId, s.ParentSpanId, s.Kind, editorTrace, turn.SpanId)
		}
	}
	for span, want := range map[*tracepb.Span]map[string]any{
		turn: {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": sid, "acp_agent.stop_reason": "end_turn"},
		chat: {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "anthropic", "gen_ai.request.model": "claude-sonnet-4-5"},
		call: {"mcp.method.name": "tools/call", "gen_ai.tool.name": "meta", "acp_agent.mcp.server.name": "fx", "network.transport": "pipe"},
	} {
		for k, v := range want {
			if g := attr(span, k); g != v {
				t.Errorf("%s: %s = %v, want %v", span.Name, k, g, v)
			}
		}
	}
	if in, ok := attr(chat, "gen_ai.usage.input_tokens").(int64); !ok || in <= 0 {
		t.Errorf("chat: gen_ai.usage.input_tokens = %v, want the tokens the model counted", attr(chat, "gen_ai.usage.input_tokens"))
	}
	if want := "00-" + editorTrace + "-" + hexID(call.SpanId) + "-01"; serverTP != want {
		t.Errorf("the MCP server got traceparent %q, want %q (the tools/call span's); its _meta:\n%s", serverTP, want, got)
	}
	if serverTS != "editor=zed" {
		t.Errorf("the MCP server got tracestate %q, want the editor's editor=zed", serverTS)
	}
	otlp.mu.Lock()
	service := otlp.service
	otlp.mu.Unlock()
	if service != "acp-agent" {
		t.Errorf("service.name = %q", service)
	}
}

// TestAudit_AllowedAndRejectedCalls: with --audit-log, each tool call of a
// session is one JSON line: the session, the server, the tool, the
// permission decision (a read-only tool allowed by the policy; a tool the
// user rejected) and the outcome, without the arguments by default.
func TestAudit_AllowedAndRejectedCalls(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a := startAgentWith(t, nil, "--store", "memory", "--audit-log", path)
	perms := &permissionAnswers{}
	a.Client.SetPermission(perms.answer)
	sid := a.newSession(t.TempDir(), acpclient.Stdio("fx", fixtureBin, nil, nil))
	if stop, updates := a.prompt(sid, `/call mcp__fx__echo {"message":"secret-argument"}`); stop != acpsdk.StopReasonEndTurn || !strings.Contains(contentText(finalToolUpdate(t, updates)), "Echo: secret-argument") {
		t.Fatalf("echo: %s\n%s", stop, dump(updates))
	}
	perms.queue("reject_once")
	if stop, updates := a.prompt(sid, `/call mcp__fx__env {}`); stop != acpsdk.StopReasonEndTurn || finalToolUpdate(t, updates).Status == nil || *finalToolUpdate(t, updates).Status != acpsdk.ToolCallStatusFailed {
		t.Fatalf("env: %s\n%s", stop, dump(updates))
	}
	if err := a.Stop(30 * time.Second); err != nil { // exiting writes the last lines
		t.Fatalf("agent stop: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "secret-argument") {
		t.Errorf("the arguments (or the result) were written, unasked:\n%s", data)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), data)
	}
	want := []map[string]any{
		{"tenant": "", "sessionId": sid, "server": "fx", "tool": "mcp__fx__echo", "permission": "allowed_by_policy", "outcome": "completed"},
		{"tenant": "", "sessionId": sid, "server": "fx", "tool": "mcp__fx__env", "permission": "rejected", "outcome": "not_run"},
	}
	for i, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		for k, v := range want[i] {
			if rec[k] != v {
				t.Errorf("line %d: %s = %v, want %v\n%s", i+1, k, rec[k], v, line)
			}
		}
		if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(rec["time"])); err != nil {
			t.Errorf("line %d: time %v: %v", i+1, rec["time"], err)
		}
		if d, ok := rec["durationMs"].(float64); !ok || d < 0 {
			t.Errorf("line %d: durationMs = %v", i+1, rec["durationMs"])
		}
		if id, _ := rec["toolCallId"].(string); id == "" {
			t.Errorf("line %d: no toolCallId", i+1)
		}
	}
}

// TestTrace_ThroughTheGateway: a network client's traceparent in
// session/prompt's _meta reaches the gateway, whose turn span is its child
// and the model request's span the turn's.
func TestTrace_ThroughTheGateway(t *testing.T) {
	t.Parallel()
	const (
		editorTrace = "5bf92f3577b34da6a3ce929d0e0e4736"
		editorSpan  = "10f067aa0ba902b7"
	)
	otlp := newOTLPReceiver(t)
	fake := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "Hello through the gateway."})
	g := startGateway(t, "", []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1", "OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL}, "--model", "openai:gpt-fake")
	a := dialGateway(t, g.url(), "", "", nil)
	sid := a.newSession(t.TempDir())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := a.Conn.Prompt(ctx, acpsdk.PromptRequest{
		SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("hello")},
		Meta: map[string]any{"traceparent": "00-" + editorTrace + "-" + editorSpan + "-01"},
	})
	if err != nil || res.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt: %v, %v", res.StopReason, err)
	}
	spans := otlp.waitSpans(t, 30*time.Second, "invoke_agent acp-agent", "chat gpt-fake") // the gateway's, within its 5 s batch
	wantTurnAndChat(t, spans["invoke_agent acp-agent"], spans["chat gpt-fake"], editorTrace, editorSpan)
}

// wantTurnAndChat checks that turn is a child of span parentSpan of trace
// traceID, and chat a child of turn.
func wantTurnAndChat(t *testing.T, turn, chat *tracepb.Span, traceID, parentSpan string) {
	t.Helper()
	hexID := func(b []byte) string { return fmt.Sprintf("%x", b) }
	if hexID(turn.TraceId) != traceID || hexID(turn.ParentSpanId) != parentSpan {
		t.Errorf("turn span: trace %x parent %x; want the caller's trace %s, parent %s", turn.TraceId, turn.ParentSpanId, traceID, parentSpan)
	}
	if hexID(chat.TraceId) != traceID || !bytes.Equal(chat.ParentSpanId, turn.SpanId) {
		t.Errorf("chat span: trace %x parent %x; want trace %s, parent the turn %x", chat.TraceId, chat.ParentSpanId, traceID, turn.SpanId)
	}
}

// TestTrace_MCPServerTurn: an ask_agent call whose _meta carries the
// caller's traceparent is a turn span of the caller's trace, and the model
// request a child of it.
func TestTrace_MCPServerTurn(t *testing.T) {
	t.Parallel()
	const (
		callerTrace = "6bf92f3577b34da6a3ce929d0e0e4736"
		callerSpan  = "20f067aa0ba902b7"
	)
	otlp := newOTLPReceiver(t)
	fake := fakemodel.NewOpenAI(t, fakemodel.Turn{Text: "Delegated."})
	p := startMCPServerClient(t, "stdio", mcpClientOptions{}, []string{"OPENAI_API_KEY=k", "OPENAI_BASE_URL=" + fake.URL + "/v1", "OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL},
		"--model", "openai:gpt-fake", "--store", "memory")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := p.client.CallTool(ctx, &mcp.CallToolParams{Name: "ask_agent", Arguments: map[string]any{"message": "do it"},
		Meta: mcp.Meta{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("ask_agent: %+v, %v", res, err)
	}
	if !p.stop() { // exiting flushes the spans
		t.Fatalf("mcp-server exited with %v", p.cmd.ProcessState)
	}
	spans := otlp.waitSpans(t, 30*time.Second, "invoke_agent acp-agent", "chat gpt-fake")
	wantTurnAndChat(t, spans["invoke_agent acp-agent"], spans["chat gpt-fake"], callerTrace, callerSpan)
}

// TestAudit_FileRules: the audit log is appended only to a regular file
// of the agent's user that no one else may read. A link planted at its
// path (to a file the attacker wants written) and a file of mode 0666 stop
// the agent at start, naming the file and the rule, and the link's target
// is untouched. Lines the file no longer takes (here a file size limit,
// as a full disk) are dropped, counted in
// acp_agent_audit_dropped_lines_total, and every turn goes on.
func TestAudit_FileRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "audit.log")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(dir, "loose.log")
	if err := os.WriteFile(loose, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o666); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		link:  `--audit-log: audit log "` + link + `" is a symbolic link`,
		loose: `--audit-log: audit log "` + loose + `" is readable or writable by group or others (mode 0666)`,
	} {
		code, out := runBinary(t, nil, "--store", "memory", "--audit-log", path)
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("--audit-log %s: exit %d, want 1 with %q:\n%s", filepath.Base(path), code, want, out)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if fi, err := os.Stat(loose); err != nil || fi.Mode().Perm() != 0o666 || fi.Size() != 0 {
		t.Errorf("the loose file was written or changed: %v %v", fi, err)
	}

	// A file that takes no more: the agent's file size limit at its size.
	full := filepath.Join(dir, "full.log")
	if err := os.WriteFile(full, []byte(strings.Repeat("x", 4096)), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startAgentWith(t, nil, "--store", "memory", "--audit-log", full, "--metrics-addr", "127.0.0.1:0")
	base := metricsBase(t, a)
	if out, err := exec.Command("prlimit", "--pid", fmt.Sprint(a.Cmd.Process.Pid), "--fsize=4096:4096").CombinedOutput(); err != nil {
		t.Fatalf("prlimit: %v: %s", err, out)
	}
	sid := a.newSession(t.TempDir(), fixtureServer("fixture", ""))
	for range 3 {
		if _, out := a.prompt(sid, `/call mcp__fixture__echo {"message":"hi"}`); contentText(finalToolUpdate(t, out)) != "Echo: hi" {
			t.Fatalf("/call with the audit log full: %s", dump(out))
		}
	}
	testutil.WaitFor(t, 30*time.Second, func() bool {
		v, _ := scrapeMetrics(t, base, "").value("acp_agent_audit_dropped_lines_total")
		return v == 3
	}, "acp_agent_audit_dropped_lines_total never reached 3:\n%s", a.stderr)
	if !strings.Contains(a.stderr.String(), "audit log: cannot write a line") {
		t.Errorf("the agent did not log the failed writes:\n%s", a.stderr)
	}
}
