package session_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// docsServer is an in-process server "docs" with a text resource, a binary
// one and a template.
func docsServer(session.InProcessEnv) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	srv.AddResource(&mcp.Resource{URI: "mem://docs/readme", Name: "readme", MIMEType: "text/markdown", Size: 12},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "mem://docs/readme", MIMEType: "text/markdown", Text: "# the readme"}}}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "mem://docs/logo", Name: "logo", MIMEType: "image/png"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "mem://docs/logo", MIMEType: "image/png", Blob: []byte("\x89PNG1234")}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://docs/page/{n}", Name: "page"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "page text"}}}, nil
		})
	return srv
}

func openDocs(t *testing.T) (*session.Session, *haikuModel) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	gw, h := haikuGateway()
	core := session.NewCore(&session.CoreOptions{Gateway: gw, InProcess: []session.InProcessServer{{Name: "docs", New: docsServer}}})
	t.Cleanup(core.Shutdown)
	s, err := core.Open(ctx, session.OpenRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.End)
	return s, h
}

func frontEnd(t *testing.T, s *session.Session, text string) string {
	t.Helper()
	in := session.Classify(text)
	if in.Kind != session.InputFrontEnd {
		t.Fatalf("%q is not a front-end command", text)
	}
	return s.Answer(t.Context(), in)
}

// A front-end command runs with the turn's context: a cancelled turn ends
// /read's resources/read at once instead of after its 2-minute timeout.
func TestCommands_ReadFollowsTheTurnsContext(t *testing.T) {
	slow := func(session.InProcessEnv) *mcp.Server {
		srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
		srv.AddResource(&mcp.Resource{URI: "mem://slow/doc", Name: "doc", MIMEType: "text/plain"},
			func(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				<-ctx.Done() // answers only when the read is cancelled
				return nil, ctx.Err()
			})
		return srv
	}
	gw, _ := haikuGateway()
	core := session.NewCore(&session.CoreOptions{Gateway: gw, InProcess: []session.InProcessServer{{Name: "slow", New: slow}}})
	t.Cleanup(core.Shutdown)
	s, err := core.Open(t.Context(), session.OpenRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.End)
	in := session.Classify("/read mem://slow/doc")
	if in.Kind != session.InputFrontEnd {
		t.Fatal("/read is not a front-end command")
	}
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan string, 1)
	go func() { got <- s.Answer(ctx, in) }()
	cancel()
	select {
	case text := <-got:
		if !strings.Contains(text, "cancel") {
			t.Errorf("/read cancelled = %q, want it to say it was cancelled", text)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("/read did not end within 30s of its turn's cancellation")
	}
}

func TestCommands_ResourcesAndRead(t *testing.T) {
	s, _ := openDocs(t)
	got := frontEnd(t, s, "/resources")
	for _, want := range []string{
		"docs: 2 resources, 1 templates",
		"- mem://docs/readme — readme, text/markdown, 12 bytes",
		"- mem://docs/logo — logo, image/png",
		"- template mem://docs/page/{n} — page",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("/resources =\n%s\nwant the line %q", got, want)
		}
	}
	for cmd, want := range map[string]string{
		"/read mem://docs/readme": "mem://docs/readme (text/markdown):\n# the readme",
		"/read mem://docs/logo":   "mem://docs/logo (image/png): 8 bytes of binary data, not shown",
		"/read mem://docs/page/3": "mem://docs/page/3 (unknown type):\npage text",
		"/read mem://else/x":      `No MCP server of this session lists "mem://else/x"`,
		"/read":                   "Usage: /read <uri>",
	} {
		if got := frontEnd(t, s, cmd); !strings.Contains(got, want) {
			t.Errorf("%s =\n%s\nwant %q", cmd, got, want)
		}
	}
}

// A prompt's resource link that a session server serves reaches the model as
// the resource's text; a link no server serves stays a link.
func TestSession_PromptResolvesResourceLinks(t *testing.T) {
	s, h := openDocs(t)
	_, err := s.Prompt(t.Context(), session.PromptRequest{Content: []gateway.Content{
		gateway.TextContent("summarize"),
		{Type: gateway.ContentResourceLink, URI: "mem://docs/readme", Name: "readme"},
		{Type: gateway.ContentResourceLink, URI: "file:///elsewhere.txt", Name: "elsewhere"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.reqs) != 1 {
		t.Fatalf("%d model requests", len(h.reqs))
	}
	msgs := h.reqs[0].Messages
	user := msgs[len(msgs)-1].Content
	if len(user) != 3 || user[1].Type != gateway.ContentResource || user[1].Resource.Text != "# the readme" ||
		user[2].Type != gateway.ContentResourceLink || user[2].URI != "file:///elsewhere.txt" {
		t.Errorf("the model got the user message %+v", user)
	}
	var tools []string
	for _, tl := range h.reqs[0].Tools {
		tools = append(tools, tl.Name)
	}
	if !strings.Contains(strings.Join(tools, " "), "mcp__docs__read_resource") {
		t.Errorf("the model's tools %v lack mcp__docs__read_resource", tools)
	}
}
