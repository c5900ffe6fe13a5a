package bridge_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// A server's resources and templates are listed at connect; ReadResource
// routes a URI to the server that lists it or whose template matches it,
// and ResolveLinks turns a prompt's resource links into the resources. The
// model gets mcp__<server>__list_resources and mcp__<server>__read_resource.
func ExampleManager_ReadResource() {
	ctx := context.Background()
	notes := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	read := func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "text of " + req.Params.URI}}}, nil
	}
	notes.AddResource(&mcp.Resource{URI: "notes://today", Name: "today", MIMEType: "text/plain"}, read)
	notes.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "notes://day/{date}", Name: "by date"}, read)

	var sessions []*mcp.ServerSession
	m := bridge.NewManager(&bridge.Options{
		Dial: func(ctx context.Context, spec bridge.ServerSpec) (mcp.Transport, error) {
			client, server := mcp.NewInMemoryTransports()
			ss, err := notes.Connect(ctx, server, nil)
			sessions = append(sessions, ss)
			return client, err
		},
	})
	if err := m.Connect(ctx, []bridge.ServerSpec{{Name: "notes", Transport: bridge.TransportStdio, Command: "notes-mcp"}}); err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		_ = m.Close(ctx)
		for _, ss := range sessions {
			_ = ss.Close()
		}
	}()

	for _, r := range m.Resources() {
		for _, x := range r.Resources {
			fmt.Println(r.Server, bridge.ResourceLine(x))
		}
		for _, t := range r.Templates {
			fmt.Println(r.Server, "template", bridge.TemplateLine(t))
		}
	}
	res, err := m.ReadResource(ctx, "notes://day/2026-11-23")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Resource.Text)
	prompt := m.ResolveLinks(ctx, []gateway.Content{{Type: gateway.ContentResourceLink, URI: "notes://today"}})
	fmt.Println(prompt[0].Type, prompt[0].Resource.Text)
	for _, tool := range m.Tools() {
		fmt.Println(tool.Name)
	}
	// Output:
	// notes notes://today — today, text/plain
	// notes template notes://day/{date} — by date
	// text of notes://day/2026-11-23
	// resource text of notes://today
	// mcp__notes__list_resources
	// mcp__notes__read_resource
}
