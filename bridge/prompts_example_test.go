package bridge_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
)

// The prompts of a session's servers are commands named <server>:<prompt>;
// GetPrompt checks the arguments and runs prompts/get.
func ExampleManager_GetPrompt() {
	ctx := context.Background()
	docs := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1.0.0"}, nil)
	docs.AddPrompt(&mcp.Prompt{Name: "explain", Description: "Explain a topic", Arguments: []*mcp.PromptArgument{{Name: "topic", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.TextContent{Text: "Explain " + req.Params.Arguments["topic"]}},
			}}, nil
		})
	m := bridge.NewManager(&bridge.Options{
		Dial: func(ctx context.Context, spec bridge.ServerSpec) (mcp.Transport, error) {
			client, server := mcp.NewInMemoryTransports()
			if _, err := docs.Connect(ctx, server, nil); err != nil {
				return nil, err
			}
			return client, nil
		},
	})
	if err := m.Connect(ctx, []bridge.ServerSpec{{Name: "docs", Transport: bridge.TransportStdio, Command: "docs-mcp"}}); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = m.Close(ctx) }()

	for _, p := range m.Prompts() {
		fmt.Printf("/%s: %s (%d argument)\n", p.Name, p.Description, len(p.Arguments))
	}
	if _, err := m.GetPrompt(ctx, "docs:explain", nil); err != nil {
		fmt.Println(err)
	}
	res, err := m.GetPrompt(ctx, "docs:explain", map[string]string{"topic": "channels"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, msg := range res.Messages {
		fmt.Printf("%s: %s\n", msg.Role, msg.Content.Text)
	}
	// Output:
	// /docs:explain: Explain a topic (1 argument)
	// bad prompt arguments: /docs:explain: missing required arguments: topic
	// user: Explain channels
}
