package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/testutil"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
)

var (
	tinyPNG = []byte("\x89PNG\r\n\x1a\nfake")
	tinyWAV = []byte("RIFF....WAVEfmt ")
)

// testServer returns an in-process MCP server with one tool per content kind
// and the error paths.
func testServer(t *testing.T) *mcp.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1.0.0"}, nil)
	add := func(name string, ro bool, h mcp.ToolHandler) {
		tool := &mcp.Tool{Name: name, Description: name + " tool\nsecond line", InputSchema: json.RawMessage(`{"type":"object"}`)}
		if ro {
			tool.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
		}
		srv.AddTool(tool, h)
	}
	result := func(c ...mcp.Content) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: c}, nil
		}
	}
	size := int64(1234)
	add("text", true, result(&mcp.TextContent{Text: "hello"}))
	add("image", false, result(&mcp.ImageContent{Data: tinyPNG, MIMEType: "image/png"}))
	add("audio", false, result(&mcp.AudioContent{Data: tinyWAV, MIMEType: "audio/wav"}))
	add("link", false, result(&mcp.ResourceLink{URI: "file:///r.pdf", Name: "r.pdf", Title: "R", Description: "d", MIMEType: "application/pdf", Size: &size}))
	add("embedded_text", false, result(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://a.txt", MIMEType: "text/plain", Text: "abc"}}))
	add("embedded_blob", false, result(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://b.bin", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2}}}))
	add("is_error", false, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it broke"}}}, nil
	})
	add("structured", false, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"n":1}`}}, StructuredContent: map[string]any{"n": 1}}, nil
	})
	add("args", false, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	})
	add("progress", false, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := 1; i <= 3; i++ {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 3})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	add("block", false, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return srv
}

// memManager connects a Manager whose servers are in-process MCP servers,
// one per entry of servers, named by key.
func memManager(t *testing.T, opts *Options, servers map[string]*mcp.Server, specs ...ServerSpec) *Manager {
	t.Helper()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	var mu sync.Mutex
	var sessions []*mcp.ServerSession
	o.Dial = func(ctx context.Context, spec ServerSpec) (mcp.Transport, error) {
		srv, ok := servers[spec.Name]
		if !ok {
			return nil, nil
		}
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		sessions = append(sessions, ss)
		mu.Unlock()
		return ct, nil
	}
	m := NewManager(&o)
	if err := m.Connect(t.Context(), specs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = m.Close(context.Background())
		mu.Lock()
		defer mu.Unlock()
		for _, ss := range sessions {
			_ = ss.Close()
		}
	})
	return m
}

func toolByName(t *testing.T, m *Manager, name string) *gateway.Tool {
	t.Helper()
	for _, tool := range m.Tools() {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("no tool %q among %d tools", name, len(m.Tools()))
	return nil
}

func TestManager_BridgesEveryContentKind(t *testing.T) {
	m := memManager(t, nil, map[string]*mcp.Server{"mem": testServer(t)}, ServerSpec{Name: "mem", Transport: TransportStdio})
	size := int64(1234)
	tests := []struct {
		tool string
		want gateway.Content
	}{
		{"text", gateway.Content{Type: gateway.ContentText, Text: "hello"}},
		{"image", gateway.Content{Type: gateway.ContentImage, Data: tinyPNG, MIMEType: "image/png"}},
		{"audio", gateway.Content{Type: gateway.ContentAudio, Data: tinyWAV, MIMEType: "audio/wav"}},
		{"link", gateway.Content{Type: gateway.ContentResourceLink, URI: "file:///r.pdf", Name: "r.pdf", Title: "R", Description: "d", MIMEType: "application/pdf", Size: &size}},
		{"embedded_text", gateway.Content{Type: gateway.ContentResource, Resource: &gateway.EmbeddedResource{URI: "mem://a.txt", MIMEType: "text/plain", Text: "abc"}}},
		{"embedded_blob", gateway.Content{Type: gateway.ContentResource, Resource: &gateway.EmbeddedResource{URI: "mem://b.bin", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2}}}},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			res, err := toolByName(t, m, "mcp__mem__"+tt.tool).Execute(t.Context(), "c1", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || len(res.Content) != 1 {
				t.Fatalf("result = %+v, want one block, no error", res)
			}
			got, _ := json.Marshal(res.Content[0])
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Errorf("content\n got %s\nwant %s", got, want)
			}
			if _, ok := res.Raw.(*mcp.CallToolResult); !ok {
				t.Errorf("Raw = %T, want *mcp.CallToolResult", res.Raw)
			}
		})
	}
}

func TestManager_ToolMetadata(t *testing.T) {
	m := memManager(t, nil, map[string]*mcp.Server{"mem": testServer(t)}, ServerSpec{Name: "mem", Transport: TransportStdio})
	tool := toolByName(t, m, "mcp__mem__text")
	if tool.Label != "mem/text" || tool.Group != "mem" || !tool.Annotations.ReadOnlyHint {
		t.Errorf("tool = %+v, want label mem/text, group mem, readOnlyHint", tool)
	}
	if !strings.HasPrefix(tool.Description, "text tool") || string(tool.InputSchema) != `{"type":"object"}` {
		t.Errorf("description %q, schema %s", tool.Description, tool.InputSchema)
	}
	st := m.Servers()
	if len(st) != 1 || st[0].State != StateConnected || st[0].Tools != len(m.Tools()) || st[0].ServerName != "mem" {
		t.Errorf("Servers() = %+v", st)
	}
}

func TestManager_ErrorPaths(t *testing.T) {
	m := memManager(t, nil, map[string]*mcp.Server{"mem": testServer(t)}, ServerSpec{Name: "mem", Transport: TransportStdio})

	t.Run("isError", func(t *testing.T) {
		res, err := toolByName(t, m, "mcp__mem__is_error").Execute(t.Context(), "c", nil, nil)
		if err != nil || !res.IsError || res.Content[0].Text != "it broke" {
			t.Errorf("got %+v, %v; want isError with the server's text", res, err)
		}
	})
	t.Run("structured", func(t *testing.T) {
		res, err := toolByName(t, m, "mcp__mem__structured").Execute(t.Context(), "c", nil, nil)
		if err != nil || res.Structured == nil {
			t.Errorf("got %+v, %v; want structured content", res, err)
		}
	})
	t.Run("nil args go out as {}", func(t *testing.T) {
		res, err := toolByName(t, m, "mcp__mem__args").Execute(t.Context(), "c", nil, nil)
		if err != nil || res.Content[0].Text != "{}" {
			t.Errorf("got %+v, %v; want arguments {}", res, err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err := toolByName(t, m, "mcp__mem__block").Execute(ctx, "c", nil, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the caller's deadline", err)
		}
	})
}

func TestManager_CallTimeoutNamed(t *testing.T) {
	m := memManager(t, &Options{Timeouts: Timeouts{ToolCall: 100 * time.Millisecond}}, map[string]*mcp.Server{"mem": testServer(t)}, ServerSpec{Name: "mem", Transport: TransportStdio})
	_, err := toolByName(t, m, "mcp__mem__block").Execute(t.Context(), "c", nil, nil)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "tools/call took longer than 100ms") || !strings.Contains(err.Error(), `"mem"`) {
		t.Errorf("err = %v, want a timeout naming tools/call, the limit and the server", err)
	}
}

func TestManager_Progress(t *testing.T) {
	m := memManager(t, nil, map[string]*mcp.Server{"mem": testServer(t)}, ServerSpec{Name: "mem", Transport: TransportStdio})
	var mu sync.Mutex
	var got []float64
	res, err := toolByName(t, m, "mcp__mem__progress").Execute(t.Context(), "c", nil, func(u gateway.ToolUpdate) {
		mu.Lock()
		got = append(got, u.Progress)
		mu.Unlock()
	})
	if err != nil || res.Content[0].Text != "done" {
		t.Fatalf("got %+v, %v", res, err)
	}
	// Progress is delivered asynchronously and may trail the result; any
	// update delivered must belong to this call and be in range.
	mu.Lock()
	defer mu.Unlock()
	for _, p := range got {
		if p < 1 || p > 3 {
			t.Errorf("progress %v out of range", p)
		}
	}
}

func TestManager_OneFailingServerKeepsTheRest(t *testing.T) {
	m := memManager(t, nil, map[string]*mcp.Server{"good": testServer(t)},
		ServerSpec{Name: "good", Transport: TransportStdio},
		ServerSpec{Name: "web", Transport: TransportHTTP, URL: "http://169.254.169.254/mcp"},
		ServerSpec{Name: "odd", Transport: "carrier-pigeon"},
		ServerSpec{Name: "missing", Transport: TransportStdio, Command: "acp-agent-test-no-such-command"},
	)
	st := m.Servers()
	want := map[string]string{
		"good":    "",
		"web":     `URL "http://169.254.169.254/mcp" refused`,
		"odd":     `unsupported transport: unknown type "carrier-pigeon"`,
		"missing": `cannot start command "acp-agent-test-no-such-command"`,
	}
	for _, s := range st {
		w := want[s.Name]
		if w == "" {
			if s.State != StateConnected {
				t.Errorf("%s: %v %v, want connected", s.Name, s.State, s.Err)
			}
			continue
		}
		if s.State != StateFailed || s.Err == nil || !strings.Contains(s.Err.Error(), w) {
			t.Errorf("%s: %v %v, want failed with %q", s.Name, s.State, s.Err, w)
		}
	}
	if len(m.Tools()) == 0 {
		t.Error("the good server's tools are missing")
	}
}

func TestManager_NotConnectedAfterServerCloses(t *testing.T) {
	srv := testServer(t)
	// The server's end of the pipe, closed under it: ServerSession.Close
	// waits for its handlers, and go-sdk v1.8.0 can miss a
	// subscriptions/listen that arrives as it closes and wait forever.
	server := &connRecorder{}
	links := make(chan ServerStatus, 4)
	m := NewManager(&Options{Dial: func(ctx context.Context, spec ServerSpec) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		server.Transport = st
		_, err := srv.Connect(ctx, server, nil)
		return ct, err
	}, OnLinkChanged: func(st ServerStatus) { links <- st }})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	if err := m.Connect(t.Context(), []ServerSpec{{Name: "mem", Transport: TransportStdio}}); err != nil {
		t.Fatal(err)
	}
	_ = server.conn.Close()
	select { // the server is marked failed before OnLinkChanged is told
	case <-links:
	case <-time.After(10 * time.Second):
	}
	_, err := toolByName(t, m, "mcp__mem__text").Execute(t.Context(), "c", nil, nil)
	if !errors.Is(err, ErrNotConnected) {
		t.Errorf("err = %v, want ErrNotConnected", err)
	}
}

func TestManager_StdioProcessExitsDuringInitialize(t *testing.T) {
	m := NewManager(&Options{Cwd: t.TempDir()})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	_ = m.Connect(t.Context(), []ServerSpec{{Name: "dies", Transport: TransportStdio, Command: "sh", Args: []string{"-c", "echo boom >&2; exit 3"}}})
	st := m.Servers()[0]
	if st.State != StateFailed || !strings.Contains(st.Err.Error(), "boom") {
		t.Errorf("status = %v %v, want failed with the stderr tail", st.State, st.Err)
	}
}

func TestManager_StdioInitializeTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// The server never answers; its child (a grandchild of the agent) must
	// die with it.
	script := fmt.Sprintf("sleep 300 & echo $! > %s; wait", pidFile)
	m := NewManager(&Options{Cwd: dir, Timeouts: Timeouts{Connect: 300 * time.Millisecond}})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	start := time.Now()
	_ = m.Connect(t.Context(), []ServerSpec{{Name: "hang", Transport: TransportStdio, Command: "sh", Args: []string{"-c", script}}})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Connect took %v; a hanging server must cost about its timeout", d)
	}
	st := m.Servers()[0]
	if st.State != StateFailed || !errors.Is(st.Err, ErrTimeout) {
		t.Fatalf("status = %v %v, want failed with a timeout", st.State, st.Err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(data), &pid)
	if !testutil.WaitGone(pid, 15*time.Second) {
		t.Errorf("process %d still alive", pid)
	}
}

func TestManager_ChildEnvIsSanitized(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "env")
	lookup := func(k string) (string, bool) {
		switch k {
		case "PATH":
			return os.Getenv("PATH"), true
		case "ANTHROPIC_API_KEY":
			return "secret", true
		}
		return "", false
	}
	m := NewManager(&Options{Cwd: dir, Env: &environ.Policy{Lookup: lookup}, Timeouts: Timeouts{Connect: 5 * time.Second}})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	_ = m.Connect(t.Context(), []ServerSpec{{Name: "env", Transport: TransportStdio, Command: "sh",
		Args: []string{"-c", "env > " + out + "; pwd >> " + out},
		Env:  nil}})
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	if strings.Contains(got, "secret") || !strings.Contains(got, "PATH=") || !strings.Contains(got, dir) {
		t.Errorf("child env/cwd:\n%s\nwant PATH, no agent secrets, cwd %s", got, dir)
	}
}

func TestManager_ToolListChangedRefreshes(t *testing.T) {
	srv := testServer(t)
	changed := make(chan []*gateway.Tool, 10)
	m := memManager(t, &Options{OnToolsChanged: func(tools []*gateway.Tool) { changed <- tools }},
		map[string]*mcp.Server{"mem": srv}, ServerSpec{Name: "mem", Transport: TransportStdio})
	before := len(m.Tools())
	srv.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late ok"}}}, nil
	})
	deadline := time.After(10 * time.Second)
	for {
		select {
		case tools := <-changed:
			if len(tools) != before+1 {
				continue
			}
			res, err := toolByName(t, m, "mcp__mem__late").Execute(t.Context(), "c", nil, nil)
			if err != nil || res.Content[0].Text != "late ok" {
				t.Errorf("the new tool: %+v %v", res, err)
			}
			if st := m.Servers()[0]; st.Tools != before+1 {
				t.Errorf("status counts %d tools", st.Tools)
			}
			return
		case <-deadline:
			t.Fatalf("no refresh after a tool was added (had %d tools)", before)
		}
	}
}

// StdioDir is where stdio children start (a session whose cwd is on its
// client's machine); Cwd stays the root the servers are told of.
func TestManager_StdioDirIsApartFromTheRoot(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "pwd")
	m := NewManager(&Options{Cwd: "/client/project", StdioDir: dir, Timeouts: Timeouts{Connect: 60 * time.Second}})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	_ = m.Connect(t.Context(), []ServerSpec{{Name: "pwd", Transport: TransportStdio, Command: "sh", Args: []string{"-c", "pwd > " + out}}})
	data, err := os.ReadFile(out)
	real, _ := filepath.EvalSymlinks(dir)
	if got := strings.TrimSpace(string(data)); err != nil || got != dir && got != real {
		t.Errorf("the child ran in %q (%v), want StdioDir %q", got, err, dir)
	}

	user := newFakeUser(&mcp.ElicitResult{Action: "decline"})
	var sampler fakeSampler
	mm := memManager(t, &Options{Cwd: "/client/project", StdioDir: dir, Elicitor: user.elicitor(true, false), Sampler: sampler.sampler()},
		map[string]*mcp.Server{"ask": inputServer()}, ServerSpec{Name: "ask", Transport: TransportStdio})
	if got := callText(t, mm, "ask", "c1", nil); !strings.Contains(got, "root: file:///client/project\n") {
		t.Errorf("the server got %q, want the root of Cwd", got)
	}
}

// connRecorder is a Transport that keeps the Connection it made.
type connRecorder struct {
	mcp.Transport
	conn mcp.Connection
}

func (c *connRecorder) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := c.Transport.Connect(ctx)
	c.conn = conn
	return conn, err
}
