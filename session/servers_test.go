package session_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
	"github.com/seed02d3eb6b/acp-agent/sandbox/mcppolicy"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// echoServer is an MCP server with one tool, <name>_echo.
func echoServer(name string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
	})
	return s
}

// memCore is a Core whose servers, of any transport, are in-memory echo
// servers named as the spec; dialed records the specs it was asked for.
func memCore(t *testing.T, o *session.CoreOptions, dialed *[]bridge.ServerSpec) *session.Core {
	t.Helper()
	if o == nil {
		o = &session.CoreOptions{}
	}
	var mu sync.Mutex
	o.Bridge.Dial = func(ctx context.Context, spec bridge.ServerSpec) (mcp.Transport, error) {
		if dialed != nil {
			mu.Lock()
			*dialed = append(*dialed, spec)
			mu.Unlock()
		}
		ct, st := mcp.NewInMemoryTransports()
		if _, err := echoServer(spec.Name).Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
	c := session.NewCore(o)
	t.Cleanup(c.Shutdown)
	return c
}

func names(s *session.Session) []string {
	var out []string
	for _, st := range s.Servers() {
		out = append(out, st.Name)
	}
	return out
}

func toolNamesOf(s *session.Session) []string {
	var out []string
	for _, t := range s.Tools() {
		out = append(out, t.Name)
	}
	return out
}

func mcpCmd(t *testing.T, s *session.Session, line string) string {
	t.Helper()
	in := session.Classify("/mcp " + line)
	if in.Kind != session.InputFrontEnd {
		t.Fatalf("/mcp %s is not a front-end command", line)
	}
	return s.Answer(t.Context(), in)
}

// /mcp add, disable, remove change a running session's servers; a reopen
// restores what its user changed over what the client gives again; a
// literal secret is not stored, a ${VAR} reference is, and is expanded at
// connect.
func TestSession_ServerChangesPersist(t *testing.T) {
	st := memory.New()
	var dialed []bridge.ServerSpec
	lookup := func(name string) (string, bool) {
		if name == "DB_TOKEN" {
			return "tok-from-env", true
		}
		return "", false
	}
	c := memCore(t, &session.CoreOptions{Store: st, LookupEnv: lookup}, &dialed)
	dir := t.TempDir()
	client := []bridge.ServerSpec{{Name: "fs", Transport: bridge.TransportStdio, Command: "fs-mcp"}, {Name: "web", Transport: bridge.TransportHTTP, URL: "https://example.test/mcp"}}
	s, err := c.Open(t.Context(), session.OpenRequest{Cwd: dir, Servers: client})
	if err != nil {
		t.Fatal(err)
	}
	if out := mcpCmd(t, s, `add --env DB_TOKEN=${DB_TOKEN} --env PLAIN=secret-literal db db-mcp --flag "two words"`); !strings.Contains(out, `Added MCP server "db" (stdio): connected, 1 tools`) || !strings.Contains(out, "env PLAIN") {
		t.Fatalf("/mcp add = %q", out)
	}
	last := dialed[len(dialed)-1]
	if last.Name != "db" || !slices.Equal(last.Args, []string{"--flag", "two words"}) || !slices.Contains(last.Env, environ.Var{Name: "DB_TOKEN", Value: "tok-from-env"}) {
		t.Errorf("the added server was dialed as %+v", last)
	}
	if !slices.Contains(toolNamesOf(s), "mcp__db__echo") {
		t.Errorf("tools after add: %v", toolNamesOf(s))
	}
	if out := mcpCmd(t, s, "add db other"); !strings.Contains(out, "already in this session") {
		t.Errorf("adding a name in use: %q", out)
	}
	if out := mcpCmd(t, s, "disable web"); !strings.Contains(out, "Disabled") || slices.Contains(toolNamesOf(s), "mcp__web__echo") {
		t.Errorf("/mcp disable web = %q, tools %v", out, toolNamesOf(s))
	}
	if out := mcpCmd(t, s, "remove fs"); !strings.Contains(out, "Removed") || slices.Contains(names(s), "fs") {
		t.Errorf("/mcp remove fs = %q, servers %v", out, names(s))
	}
	if out := mcpCmd(t, s, "reconnect db"); !strings.Contains(out, "Reconnected") {
		t.Errorf("/mcp reconnect db = %q", out)
	}
	list := mcpCmd(t, s, "")
	for _, want := range []string{"- web: connected, disabled (http, 0 tools, from the editor)", "- db: connected (stdio, 1 tools, from /mcp add)"} {
		if !strings.Contains(list, want) {
			t.Errorf("/mcp list lacks %q:\n%s", want, list)
		}
	}
	rec, err := st.Get(t.Context(), s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rec.ServerChanges), "secret-literal") || strings.Contains(string(rec.ServerChanges), "tok-from-env") {
		t.Errorf("a secret value was stored: %s", rec.ServerChanges)
	}
	s.End()

	// The client gives its two servers again: fs stays removed, web
	// disabled, db is not restored (a value was withheld) and says so.
	s2, err := c.Open(t.Context(), session.OpenRequest{ID: s.ID(), Cwd: dir, Servers: client})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(s2); !slices.Equal(got, []string{"web"}) {
		t.Errorf("servers after reopen: %v, want [web]", got)
	}
	if slices.Contains(toolNamesOf(s2), "mcp__web__echo") {
		t.Error("web is enabled again after reopen")
	}
	if notes := strings.Join(s2.OpeningNotes(), "\n"); !strings.Contains(notes, `"db"`) || !strings.Contains(notes, "env PLAIN") {
		t.Errorf("opening notes: %q", notes)
	}
	// Added with references only, it comes back.
	if out := mcpCmd(t, s2, `add --env DB_TOKEN=${DB_TOKEN} db db-mcp`); !strings.Contains(out, "connected") || strings.Contains(out, "Not stored") {
		t.Errorf("/mcp add = %q", out)
	}
	s2.End()
	s3, err := c.Open(t.Context(), session.OpenRequest{ID: s.ID(), Cwd: dir, Servers: client})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(s3); !slices.Equal(got, []string{"web", "db"}) {
		t.Errorf("servers after the second reopen: %v, want [web db]", got)
	}
}

// SetServers replaces the client's servers: new ones added, changed ones
// replaced, missing ones removed, unchanged ones left running.
func TestSession_SetServers(t *testing.T) {
	var dialed []bridge.ServerSpec
	c := memCore(t, nil, &dialed)
	s, err := c.Open(t.Context(), session.OpenRequest{Cwd: t.TempDir(), Servers: []bridge.ServerSpec{
		{Name: "a", Transport: bridge.TransportStdio, Command: "a"},
		{Name: "b", Transport: bridge.TransportStdio, Command: "b"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	before := len(dialed)
	changes, err := s.SetServers(t.Context(), []bridge.ServerSpec{
		{Name: "a", Transport: bridge.TransportStdio, Command: "a"},
		{Name: "b", Transport: bridge.TransportStdio, Command: "b2"},
		{Name: "c", Transport: bridge.TransportHTTP, URL: "https://c.test/mcp"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ch := range changes {
		if ch.Err != nil {
			t.Errorf("%s: %v", ch.Name, ch.Err)
		}
		got = append(got, ch.Name+":"+ch.Action)
	}
	if want := []string{"a:unchanged", "b:replaced", "c:added"}; !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	if len(dialed)-before != 2 {
		t.Errorf("%d connects for the change, want 2 (b again, c)", len(dialed)-before)
	}
	changes, err = s.SetServers(t.Context(), nil)
	if err != nil || len(changes) != 3 || len(s.Servers()) != 0 {
		t.Errorf("SetServers(nil) = %+v, %v; servers %v", changes, err, names(s))
	}
	if _, err := s.SetServers(t.Context(), []bridge.ServerSpec{{Name: "x", Transport: bridge.TransportStdio, Command: "x"}, {Name: "x", Transport: bridge.TransportStdio, Command: "y"}}); err == nil {
		t.Error("a list naming a server twice was taken")
	}
}

// The project's .mcp.json servers wait for approval: asked at the first
// prompt, connected when allowed, remembered for the project when always,
// so the next session connects them at open; /mcp revoke forgets it.
func TestSession_ProjectServersAskOnceThenRemembered(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers": {"proj": {"command": "proj-mcp", "args": ["--root", "${ROOT:-.}"], "env": {"KEY": "${PROJ_KEY}", "MODE": "literal"}}, "bad": {"command": ""}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	approvals := session.NewApprovals(filepath.Join(t.TempDir(), "acp-agent", "projects.json"))
	var dialed []bridge.ServerSpec
	c := memCore(t, &session.CoreOptions{ProjectApprovals: approvals, LookupEnv: func(name string) (string, bool) { return "k", name == "PROJ_KEY" }}, &dialed)
	s, err := c.Open(t.Context(), session.OpenRequest{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Servers()) != 0 {
		t.Fatalf("an unapproved project server connected: %v", names(s))
	}
	notes := strings.Join(s.OpeningNotes(), "\n")
	for _, want := range []string{"proj: runs `proj-mcp --root ${ROOT:-.}` with env KEY=${PROJ_KEY}, MODE", `mcpServers.bad`} {
		if !strings.Contains(notes, want) {
			t.Errorf("opening notes lack %q:\n%s", want, notes)
		}
	}
	asked := 0
	var events []gateway.Event
	ask := func(_ context.Context, req gateway.PermissionRequest) (gateway.PermissionOutcome, error) {
		asked++
		if !strings.Contains(gateway.PromptText(req.Content), "proj-mcp") {
			t.Errorf("the question does not name the command: %q", gateway.PromptText(req.Content))
		}
		return gateway.PermissionAllowAlways, nil
	}
	prompt := func(s *session.Session) {
		t.Helper()
		if _, err := s.Prompt(t.Context(), session.PromptRequest{Content: []gateway.Content{gateway.TextContent("/tools")}, Ask: ask,
			Emit: func(e gateway.Event) { events = append(events, e) }}); err != nil {
			t.Fatal(err)
		}
	}
	prompt(s)
	prompt(s)
	if asked != 1 || !slices.Contains(names(s), "proj") {
		t.Fatalf("asked %d times, servers %v; want once, proj connected", asked, names(s))
	}
	if last := dialed[len(dialed)-1]; !slices.Equal(last.Args, []string{"--root", "."}) {
		t.Errorf("proj dialed with args %v, want the default expanded", last.Args)
	}
	if events[0].Kind != gateway.EventToolStart || !strings.Contains(events[0].Call.Title, ".mcp.json") {
		t.Errorf("the question is not shown as a tool call first: %+v", events[0])
	}
	s.End()

	s2, err := c.Open(t.Context(), session.OpenRequest{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	prompt(s2)
	if asked != 1 || !slices.Contains(names(s2), "proj") {
		t.Errorf("second session: asked %d times, servers %v; want not asked, proj connected at open", asked, names(s2))
	}
	if out := mcpCmd(t, s2, "revoke"); !strings.Contains(out, "stopped proj") || len(s2.Servers()) != 0 {
		t.Errorf("/mcp revoke = %q, servers %v", out, names(s2))
	}
	// A changed entry asks again.
	if out := mcpCmd(t, s2, "approve"); !strings.Contains(out, `"proj"`) {
		t.Errorf("/mcp approve = %q", out)
	}
	os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers": {"proj": {"command": "other-mcp"}}}`), 0o644)
	s2.End()
	s3, err := c.Open(t.Context(), session.OpenRequest{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(s3.Servers()) != 0 {
		t.Errorf("a changed project entry ran without asking: %v", names(s3))
	}
}

// A server the managed policy refuses is named with the policy, without
// the advice to try again that would change nothing.
func TestChangeText_RefusedByPolicyOffersNoRetry(t *testing.T) {
	refused := &mcppolicy.RefusedError{Server: "x", Source: "/etc/acp-agent/managed.json", List: "allowedMcpServers"}
	out := session.ChangeText(session.ServerChange{Name: "x", Action: "added", Status: bridge.ServerStatus{Name: "x", Transport: bridge.TransportStdio, State: bridge.StateFailed, Err: refused}})
	if !strings.Contains(out, "managed.json") || strings.Contains(out, "reconnect") {
		t.Errorf("ChangeText = %q", out)
	}
	if out := session.ServerStateText(bridge.ServerStatus{Name: "x", State: bridge.StateFailed, Err: refused}); strings.Contains(out, "/login") {
		t.Errorf("ServerStateText = %q", out)
	}
}

// A hostile .mcp.json (a FIFO no one writes, a link to an endless device)
// neither holds the session's open nor is read: the open goes on, and a
// note says why the project's servers are not offered.
func TestSession_ProjectFileThatIsNoFile(t *testing.T) {
	approvals := session.NewApprovals(filepath.Join(t.TempDir(), "projects.json"))
	c := memCore(t, &session.CoreOptions{ProjectApprovals: approvals}, nil)
	for name, mk := range map[string]func(path string) error{
		"fifo":     func(path string) error { return syscall.Mkfifo(path, 0o644) },
		"dev-zero": func(path string) error { return os.Symlink("/dev/zero", path) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := mk(filepath.Join(dir, ".mcp.json")); err != nil {
				t.Fatal(err)
			}
			s, err := c.Open(t.Context(), session.OpenRequest{Cwd: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer s.End()
			if notes := strings.Join(s.OpeningNotes(), "\n"); !strings.Contains(notes, "not a regular file") || len(s.Servers()) != 0 {
				t.Errorf("notes %q, servers %v", notes, names(s))
			}
		})
	}
}
