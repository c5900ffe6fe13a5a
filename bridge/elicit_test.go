package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// elicitServer returns an in-process MCP server whose tools report the
// client's elicitation capability (caps) and ask the user: "form" with the
// schema given as argument "schema" (default: a name with a default and an
// enum; with "detached", the question outlives a cancelled call unless the
// client withdraws it) and sends what it saw to saw (if non-nil), "url" in
// URL mode, then completes it. It speaks 2025-11-25 at most (legacyServer),
// so its questions are server-initiated elicitation/create requests, as
// TypeScript servers send them; TestManager_InputRequests covers 2026-07-28.
func elicitServer(t *testing.T, saw chan<- string) *mcp.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "ask", Version: "1.0.0"}, legacyServer())
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	srv.AddTool(&mcp.Tool{Name: "caps", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, _ := json.Marshal(req.Session.InitializeParams().Capabilities.Elicitation)
		return text(string(b)), nil
	})
	srv.AddTool(&mcp.Tool{Name: "form", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Schema   map[string]any `json:"schema"`
			Detached bool           `json:"detached"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &args)
		if args.Schema == nil {
			args.Schema = map[string]any{"type": "object", "properties": map[string]any{
				"name":  map[string]any{"type": "string", "default": "Ada"},
				"color": map[string]any{"type": "string", "enum": []any{"red", "green"}, "default": "green"},
			}, "required": []any{"name"}}
		}
		ectx := ctx
		if args.Detached {
			ectx = context.WithoutCancel(ctx)
		}
		res, err := req.Session.Elicit(ectx, &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: args.Schema})
		out := "elicit: "
		if err != nil {
			out += err.Error()
		} else {
			b, _ := json.Marshal(res.Content)
			out = res.Action + " " + string(b)
		}
		if saw != nil {
			saw <- out
		}
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil
		}
		return text(out), nil
	})
	srv.AddTool(&mcp.Tool{Name: "url", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.test/login", ElicitationID: "e1"})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicit: " + err.Error()}}}, nil
		}
		// A completion of an ID the server never sent is dropped; then e1's.
		_ = req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: "forged"})
		_ = req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: "e1"})
		return text(res.Action), nil
	})
	return srv
}

// fakeUser is an Elicitor's user: it records the requests and answers
// with answer (nil: waits until ctx ends).
type fakeUser struct {
	mu        sync.Mutex
	reqs      []ElicitRequest
	completed []string
	answer    *mcp.ElicitResult
	asked     chan struct{}
	done      chan struct{}
	stop      chan struct{} // closed to give up waiting for ctx (a failed test)
}

func newFakeUser(answer *mcp.ElicitResult) *fakeUser {
	return &fakeUser{answer: answer, asked: make(chan struct{}, 8), done: make(chan struct{}, 8), stop: make(chan struct{})}
}

func (u *fakeUser) elicitor(form, url bool) *Elicitor {
	return &Elicitor{Form: form, URL: url,
		Elicit: func(ctx context.Context, r ElicitRequest) (*mcp.ElicitResult, error) {
			u.mu.Lock()
			u.reqs = append(u.reqs, r)
			u.mu.Unlock()
			u.asked <- struct{}{}
			if u.answer != nil {
				return u.answer, nil
			}
			select {
			case <-ctx.Done():
				u.done <- struct{}{}
				return nil, ctx.Err()
			case <-u.stop:
				return nil, errors.New("the test gave up")
			}
		},
		Complete: func(_ context.Context, server, id string) {
			u.mu.Lock()
			u.completed = append(u.completed, server+"/"+id)
			u.mu.Unlock()
			u.done <- struct{}{}
		},
	}
}

func callText(t *testing.T, m *Manager, tool, callID string, args map[string]any) string {
	t.Helper()
	res, err := toolByName(t, m, "mcp__ask__"+tool).Execute(t.Context(), callID, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("result = %+v", res)
	}
	return res.Content[0].Text
}

func TestElicit_CapabilityFollowsModes(t *testing.T) {
	tests := []struct {
		name string
		el   *Elicitor
		want string
	}{
		{"none", nil, "null"},
		{"no handler", &Elicitor{Form: true, URL: true}, "null"},
		{"no mode", newFakeUser(nil).elicitor(false, false), "null"},
		{"form", newFakeUser(nil).elicitor(true, false), `{"form":{}}`},
		{"url", newFakeUser(nil).elicitor(false, true), `{"url":{}}`},
		{"both", newFakeUser(nil).elicitor(true, true), `{"form":{},"url":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := memManager(t, &Options{Elicitor: tt.el}, map[string]*mcp.Server{"ask": elicitServer(t, nil)}, ServerSpec{Name: "ask", Transport: TransportStdio})
			if got := callText(t, m, "caps", "c1", nil); got != tt.want {
				t.Errorf("elicitation capability = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestElicit_FormAnswers(t *testing.T) {
	for _, answer := range []*mcp.ElicitResult{
		{Action: "accept", Content: map[string]any{"name": "Grace", "color": "red"}},
		{Action: "decline"},
		{Action: "cancel"},
	} {
		t.Run(answer.Action, func(t *testing.T) {
			u := newFakeUser(answer)
			m := memManager(t, &Options{Elicitor: u.elicitor(true, false)}, map[string]*mcp.Server{"ask": elicitServer(t, nil)}, ServerSpec{Name: "ask", Transport: TransportStdio})
			got := callText(t, m, "form", "call-7", nil)
			want := answer.Action + " null"
			if answer.Content != nil {
				want = `accept {"color":"red","name":"Grace"}`
			}
			if got != want {
				t.Errorf("the server saw %q, want %q", got, want)
			}
			r := u.reqs[0]
			schema, _ := json.Marshal(r.Params.RequestedSchema)
			if r.Server != "ask" || r.CallID != "call-7" || r.Params.Mode != "form" || r.Params.Message != "Who are you?" ||
				!strings.Contains(string(schema), `"default":"Ada"`) || !strings.Contains(string(schema), `"enum":["red","green"]`) {
				t.Errorf("request = %+v, schema %s; want server ask, call call-7, mode form, the schema with defaults and enums", r, schema)
			}
		})
	}
}

func TestElicit_URLAndCompletion(t *testing.T) {
	u := newFakeUser(&mcp.ElicitResult{Action: "accept"})
	m := memManager(t, &Options{Elicitor: u.elicitor(false, true)}, map[string]*mcp.Server{"ask": elicitServer(t, nil)}, ServerSpec{Name: "ask", Transport: TransportStdio})
	if got := callText(t, m, "url", "c1", nil); got != "accept" {
		t.Fatalf("the server saw %q, want accept", got)
	}
	select {
	case <-u.done:
	case <-time.After(30 * time.Second):
		t.Fatal("no completion forwarded")
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if r := u.reqs[0]; r.Params.Mode != "url" || r.Params.URL != "https://example.test/login" || r.Params.ElicitationID != "e1" {
		t.Errorf("request = %+v", r.Params)
	}
	if fmt.Sprint(u.completed) != "[ask/e1]" {
		t.Errorf("completions = %v, want only [ask/e1] (a forged ID is dropped)", u.completed)
	}
	// Form mode was not advertised: a server asking anyway is refused
	// without asking the user.
	if got := callText(t, m, "form", "c2", nil); !strings.Contains(got, "elicit:") {
		t.Errorf("form elicitation without the form mode: server saw %q, want an error", got)
	}
	if len(u.reqs) != 1 {
		t.Errorf("the user was asked %d times, want 1", len(u.reqs))
	}
}

func TestElicit_SecretFormsRefused(t *testing.T) {
	schemas := map[string]map[string]any{
		"writeOnly":  {"type": "object", "properties": map[string]any{"pin": map[string]any{"type": "string", "writeOnly": true}}},
		"name":       {"type": "object", "properties": map[string]any{"password": map[string]any{"type": "string"}}},
		"apiKey":     {"type": "object", "properties": map[string]any{"api_key": map[string]any{"type": "string"}}},
		"title":      {"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string", "title": "GitHub access token"}}},
		"secretWord": {"type": "object", "properties": map[string]any{"clientSecret": map[string]any{"type": "string"}}},
	}
	u := newFakeUser(&mcp.ElicitResult{Action: "accept", Content: map[string]any{}})
	m := memManager(t, &Options{Elicitor: u.elicitor(true, true)}, map[string]*mcp.Server{"ask": elicitServer(t, nil)}, ServerSpec{Name: "ask", Transport: TransportStdio})
	for name, schema := range schemas {
		t.Run(name, func(t *testing.T) {
			got := callText(t, m, "form", "c", map[string]any{"schema": schema})
			if !strings.Contains(got, "looks like a secret") || !strings.Contains(got, "use URL mode") {
				t.Errorf("server saw %q, want a refusal naming the rule", got)
			}
		})
	}
	if len(u.reqs) != 0 {
		t.Errorf("the user was asked %d times for secrets, want 0", len(u.reqs))
	}
	// A form with nothing secret (max_tokens is not a token) goes through.
	ok := map[string]any{"type": "object", "properties": map[string]any{"max_tokens": map[string]any{"type": "integer"}}}
	if got := callText(t, m, "form", "c", map[string]any{"schema": ok}); !strings.HasPrefix(got, "accept") {
		t.Errorf("plain form: server saw %q", got)
	}
}

func TestElicit_CancelledCallCancelsElicitation(t *testing.T) {
	u := newFakeUser(nil) // never answers
	saw := make(chan string, 1)
	m := memManager(t, &Options{Elicitor: u.elicitor(true, false)}, map[string]*mcp.Server{"ask": elicitServer(t, saw)}, ServerSpec{Name: "ask", Transport: TransportStdio})
	t.Cleanup(func() { close(u.stop) }) // before the Manager closes
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		// detached: the server does not withdraw the question itself when
		// its call is cancelled; the bridge must end it.
		_, err := toolByName(t, m, "mcp__ask__form").Execute(ctx, "c1", map[string]any{"detached": true}, nil)
		errc <- err
	}()
	select {
	case <-u.asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the user was never asked")
	}
	cancel()
	select {
	case <-u.done: // the question was withdrawn
	case <-time.After(30 * time.Second):
		t.Fatal("cancelling the tool call did not withdraw the elicitation")
	}
	select {
	case got := <-saw:
		if got != "cancel null" {
			t.Errorf("the server saw %q, want cancel", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server got no answer")
	}
	if err := <-errc; err == nil {
		t.Error("the cancelled call returned no error")
	}
}
