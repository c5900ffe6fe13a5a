package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// promptServer is an MCP server with three prompts (pages of two): "greet"
// (argument name, required; style, optional; its title and descriptions
// carry escape sequences, a line break and a bidirectional override, which
// the editor must not get), "p.q" and "p_q" (whose
// command names collide once sanitized). gets counts prompts/get calls.
func promptServer(gets *atomic.Int32) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "prompts", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Title: "Greeting\x1b]0;pwned\x07", Description: "Greets\n\u202esomeone", Arguments: []*mcp.PromptArgument{
		{Name: "name", Description: "\x1b[2Jwho", Required: true}, {Name: "style"},
	}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		gets.Add(1)
		return &mcp.GetPromptResult{Description: "a greeting", Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("Greet %s, %s", req.Params.Arguments["name"], req.Params.Arguments["style"])}},
			{Role: "user", Content: &mcp.ImageContent{Data: tinyPNG, MIMEType: "image/png"}},
			{Role: "assistant", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://a.txt", MIMEType: "text/plain", Text: "abc"}}},
		}}, nil
	})
	for _, name := range []string{"p.q", "p_q"} {
		srv.AddPrompt(&mcp.Prompt{Name: name}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			gets.Add(1)
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: name}}}}, nil
		})
	}
	return srv
}

func TestManager_PromptsListedAcrossPages(t *testing.T) {
	var gets atomic.Int32
	m := memManager(t, nil, map[string]*mcp.Server{"my srv": promptServer(&gets)}, ServerSpec{Name: "my srv", Transport: TransportStdio})
	got := m.Prompts()
	if len(got) != 3 {
		t.Fatalf("Prompts() = %+v, want the 3 prompts of two pages", got)
	}
	greet := got[slices.IndexFunc(got, func(p PromptCommand) bool { return p.Prompt == "greet" })]
	want := PromptCommand{Name: "my_srv:greet", Server: "my srv", Prompt: "greet", Title: "Greeting", Description: "Greets someone",
		Arguments: []PromptArgument{{Name: "name", Description: "who", Required: true}, {Name: "style"}}}
	if fmt.Sprint(greet) != fmt.Sprint(want) {
		t.Errorf("greet = %+v, want %+v", greet, want)
	}
	names := map[string]bool{}
	for _, p := range got {
		names[p.Name] = true
		if p.Prompt != "greet" && (!strings.HasPrefix(p.Name, "my_srv:p_q_") || len(p.Name) != len("my_srv:p_q_")+hashLen) {
			t.Errorf("colliding prompt %q is named %q, want my_srv:p_q_<hash>", p.Prompt, p.Name)
		}
	}
	if len(names) != 3 {
		t.Errorf("names are not unique: %v", names)
	}
	if gets.Load() != 0 {
		t.Errorf("listing ran prompts/get %d times", gets.Load())
	}
}

func TestManager_GetPrompt(t *testing.T) {
	var gets atomic.Int32
	m := memManager(t, nil, map[string]*mcp.Server{"s": promptServer(&gets)}, ServerSpec{Name: "s", Transport: TransportStdio})
	res, err := m.GetPrompt(t.Context(), "s:greet", map[string]string{"name": "Ada", "style": "warmly"})
	if err != nil {
		t.Fatal(err)
	}
	want := []PromptMessage{
		{Role: "user", Content: gateway.TextContent("Greet Ada, warmly")},
		{Role: "user", Content: gateway.Content{Type: gateway.ContentImage, Data: tinyPNG, MIMEType: "image/png"}},
		{Role: "assistant", Content: gateway.Content{Type: gateway.ContentResource, Resource: &gateway.EmbeddedResource{URI: "mem://a.txt", MIMEType: "text/plain", Text: "abc"}}},
	}
	if res.Description != "a greeting" || !reflect.DeepEqual(res.Messages, want) {
		t.Errorf("GetPrompt = %q %+v, want %+v", res.Description, res.Messages, want)
	}
}

// TestManager_GetPromptChecksArguments: missing required arguments and
// undeclared ones are refused by name before any request; so is an
// unknown command.
func TestManager_GetPromptChecksArguments(t *testing.T) {
	var gets atomic.Int32
	m := memManager(t, nil, map[string]*mcp.Server{"s": promptServer(&gets)}, ServerSpec{Name: "s", Transport: TransportStdio})
	for _, tt := range []struct {
		cmd  string
		args map[string]string
		is   error
		want []string
	}{
		{"s:greet", nil, ErrPromptArguments, []string{"/s:greet", "missing required arguments: name"}},
		{"s:greet", map[string]string{"style": "x"}, ErrPromptArguments, []string{"missing required arguments: name"}},
		{"s:greet", map[string]string{"name": "a", "nmae": "b"}, ErrPromptArguments, []string{"unknown arguments: nmae", "it takes: name, style"}},
		{"s:nope", nil, ErrUnknownPrompt, []string{"/s:nope"}},
	} {
		_, err := m.GetPrompt(t.Context(), tt.cmd, tt.args)
		if !errors.Is(err, tt.is) {
			t.Errorf("GetPrompt(%s, %v) = %v, want %v", tt.cmd, tt.args, err, tt.is)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("GetPrompt(%s, %v) = %q, want it to say %q", tt.cmd, tt.args, err, w)
			}
		}
	}
	if n := gets.Load(); n != 0 {
		t.Errorf("%d prompts/get requests were sent for refused calls", n)
	}
}

// TestManager_GetPromptRateLimited: prompts/get counts against the
// server's calls per minute, like tools/call.
func TestManager_GetPromptRateLimited(t *testing.T) {
	var gets atomic.Int32
	srv := promptServer(&gets)
	srv.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	now := time.Unix(1000, 0)
	m := memManager(t, &Options{CallsPerMinute: 2, Clock: func() time.Time { return now }}, map[string]*mcp.Server{"s": srv}, ServerSpec{Name: "s", Transport: TransportStdio})
	if _, err := m.GetPrompt(t.Context(), "s:greet", map[string]string{"name": "a"}); err != nil {
		t.Fatal(err)
	}
	if res, err := toolByName(t, m, "mcp__s__t").Execute(t.Context(), "c", nil, nil); err != nil || res.IsError {
		t.Fatalf("the tool call within the limit: %+v %v", res, err)
	}
	_, err := m.GetPrompt(t.Context(), "s:greet", map[string]string{"name": "a"})
	if err == nil || !strings.Contains(err.Error(), "s") || gets.Load() != 1 {
		t.Fatalf("a third request in the minute: err %v, %d prompts/get sent; want a rate-limit error and 1", err, gets.Load())
	}
	t.Logf("refused with: %v", err)
}

func TestManager_PromptListChangedRefreshes(t *testing.T) {
	var gets atomic.Int32
	srv := promptServer(&gets)
	changed := make(chan struct{}, 10)
	m := memManager(t, &Options{OnPromptsChanged: func() { changed <- struct{}{} }},
		map[string]*mcp.Server{"s": srv}, ServerSpec{Name: "s", Transport: TransportStdio})
	srv.AddPrompt(&mcp.Prompt{Name: "late"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "late ok"}}}}, nil
	})
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-changed:
			if !slices.ContainsFunc(m.Prompts(), func(p PromptCommand) bool { return p.Name == "s:late" }) {
				continue
			}
			res, err := m.GetPrompt(t.Context(), "s:late", nil)
			if err != nil || res.Messages[0].Content.Text != "late ok" {
				t.Errorf("the new prompt: %+v %v", res, err)
			}
			srv.RemovePrompts("late")
			for {
				select {
				case <-changed:
					if !slices.ContainsFunc(m.Prompts(), func(p PromptCommand) bool { return p.Name == "s:late" }) {
						return
					}
				case <-deadline:
					t.Fatal("no refresh after the prompt was removed")
				}
			}
		case <-deadline:
			t.Fatalf("no refresh after a prompt was added; prompts: %+v", m.Prompts())
		}
	}
}

// TestManager_PromptsListFailureKeepsTheServer: a server whose
// prompts/list fails still connects, with its tools and no prompts.
func TestManager_PromptsListFailureKeepsTheServer(t *testing.T) {
	var gets atomic.Int32
	srv := promptServer(&gets)
	srv.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "prompts/list" {
				return nil, errors.New("prompts are broken")
			}
			return next(ctx, method, req)
		}
	})
	m := memManager(t, nil, map[string]*mcp.Server{"s": srv}, ServerSpec{Name: "s", Transport: TransportStdio})
	if st := m.Servers()[0]; st.State != StateConnected || st.Tools != 1 {
		t.Errorf("status = %+v, want connected with its tool", st)
	}
	if p := m.Prompts(); len(p) != 0 {
		t.Errorf("Prompts() = %+v, want none", p)
	}
}

// TestManager_ToolPresentation: the title of a tool's calls is its title,
// else its annotations' title, else server/tool; the kind comes from
// _meta, else from the hints the tool states and the words of its name
// (bridge.toolKind): destructiveHint alone is an edit, not a delete.
func TestManager_ToolPresentation(t *testing.T) {
	yes, no := true, false
	srv := mcp.NewServer(&mcp.Implementation{Name: "p", Version: "1"}, nil)
	add := func(tool *mcp.Tool) {
		tool.InputSchema = json.RawMessage(`{"type":"object"}`)
		srv.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	add(&mcp.Tool{Name: "titled", Title: "Tool Title", Annotations: &mcp.ToolAnnotations{Title: "Annotation Title"}})
	add(&mcp.Tool{Name: "annotated", Annotations: &mcp.ToolAnnotations{Title: "Annotation Title"}})
	add(&mcp.Tool{Name: "plain"})
	add(&mcp.Tool{Name: "reader", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}})
	add(&mcp.Tool{Name: "searcher", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &yes}})
	add(&mcp.Tool{Name: "wiper", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}})
	add(&mcp.Tool{Name: "poster", Annotations: &mcp.ToolAnnotations{DestructiveHint: &no, OpenWorldHint: &yes}})
	add(&mcp.Tool{Name: "adder", Annotations: &mcp.ToolAnnotations{DestructiveHint: &no, OpenWorldHint: &no}})
	add(&mcp.Tool{Name: "write_file", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &no}})
	add(&mcp.Tool{Name: "delete_entities", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}})
	add(&mcp.Tool{Name: "purge", Title: "Remove cache"})
	add(&mcp.Tool{Name: "keep_entities", Annotations: &mcp.ToolAnnotations{Title: "Delete nothing", DestructiveHint: &no}})
	add(&mcp.Tool{Name: "moveFile", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}})
	add(&mcp.Tool{Name: "run-query", Annotations: &mcp.ToolAnnotations{OpenWorldHint: &yes}})
	add(&mcp.Tool{Name: "list_removed", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}})
	add(&mcp.Tool{Name: "undelete", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}})
	add(&mcp.Tool{Name: "meta", Meta: mcp.Meta{MetaToolKind: "execute"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}})
	m := memManager(t, nil, map[string]*mcp.Server{"p": srv}, ServerSpec{Name: "p", Transport: TransportStdio})
	for _, tt := range []struct {
		tool, title string
		kind        gateway.ToolKind
	}{
		{"titled", "Tool Title (p)", ""}, // the server named beside the title
		{"annotated", "Annotation Title (p)", ""},
		{"plain", "p/plain", ""},
		{"reader", "p/reader", gateway.ToolKindRead},
		{"searcher", "p/searcher", gateway.ToolKindFetch},
		{"wiper", "p/wiper", gateway.ToolKindEdit}, // destructiveHint alone: an edit
		{"write_file", "p/write_file", gateway.ToolKindEdit},
		{"delete_entities", "p/delete_entities", gateway.ToolKindDelete},
		{"purge", "Remove cache (p)", gateway.ToolKindDelete},         // by name and title, no hints
		{"keep_entities", "Delete nothing (p)", gateway.ToolKindEdit}, // destructiveHint false: never a delete
		{"moveFile", "p/moveFile", gateway.ToolKindMove},
		{"run-query", "p/run-query", gateway.ToolKindExecute},
		{"list_removed", "p/list_removed", gateway.ToolKindRead}, // readOnlyHint first
		{"undelete", "p/undelete", gateway.ToolKindEdit},         // a word, not a substring
		{"poster", "p/poster", gateway.ToolKindFetch},
		{"adder", "p/adder", gateway.ToolKindEdit},
		{"meta", "p/meta", gateway.ToolKindExecute},
	} {
		tool := toolByName(t, m, "mcp__p__"+tt.tool)
		if tool.Title() != tt.title || tool.Kind != tt.kind {
			t.Errorf("%s: title %q kind %q, want %q %q", tt.tool, tool.Title(), tool.Kind, tt.title, tt.kind)
		}
	}
}

// TestHTTP_GetPromptAfterLostSession: prompts/get on an http server that
// lost the MCP session initializes a new one and asks again.
func TestHTTP_GetPromptAfterLostSession(t *testing.T) {
	r := newRestartable(t)
	m := connectHTTP(t, ServerSpec{Name: "web", Transport: TransportHTTP, URL: r.url()}, nil)
	if _, err := m.GetPrompt(t.Context(), "web:hello", nil); err != nil {
		t.Fatal(err)
	}
	r.once(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "session not found", http.StatusNotFound) })
	res, err := m.GetPrompt(t.Context(), "web:hello", nil)
	if err != nil || len(res.Messages) != 1 || res.Messages[0].Content.Text != "hello" {
		t.Fatalf("GetPrompt after the loss = %+v, %v; want it to work on a fresh session", res, err)
	}
	if n := r.inits.Load(); n != 2 {
		t.Errorf("initialize count = %d, want 2", n)
	}
}
