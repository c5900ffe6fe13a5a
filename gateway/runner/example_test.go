package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

// scripted is a fake model: it calls the "shout" tool once, then answers
// with the tool's result.
type scripted struct{}

func (scripted) Name() string { return "scripted" }

func (scripted) Complete(_ context.Context, req *gateway.Request, emit func(gateway.Event)) (*gateway.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == gateway.RoleUser {
		return &gateway.Response{Message: gateway.Message{ToolCalls: []gateway.ToolCall{
			{ID: "call_1", Name: "shout", Args: map[string]any{"text": gateway.PromptText(last.Content)}},
		}}}, nil
	}
	answer := "The tool said: " + last.Result.Content[0].Text // a tool message
	emit(gateway.Event{Kind: gateway.EventTextDelta, Text: answer})
	return &gateway.Response{Message: gateway.Message{Content: []gateway.Content{gateway.TextContent(answer)}}}, nil
}

// A Runner runs one turn: the model asks for a tool, the runner calls it
// (read-only, so no permission question), and the model answers. Events
// stream as they happen.
func ExampleRunner() {
	shout := &gateway.Tool{
		Name:        "shout",
		Description: "Upper-case a text.",
		InputSchema: json.RawMessage(`{"type": "object", "properties": {"text": {"type": "string"}}}`),
		Annotations: gateway.Annotations{ReadOnlyHint: true},
		Execute: func(_ context.Context, _ string, args map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
			s, _ := args["text"].(string)
			return gateway.Result{Content: []gateway.Content{gateway.TextContent(strings.ToUpper(s))}}, nil
		},
	}
	r := runner.New(&gateway.Registry{}, &runner.Options{
		Models: []gateway.Model{{ID: "fake:scripted", Label: "Scripted", Provider: scripted{}}},
		Tools:  []*gateway.Tool{shout},
	})
	stop, err := r.Run(context.Background(), gateway.SendRequest{SessionKey: "acp:example", Message: []gateway.Content{gateway.TextContent("hello")}},
		func(ev gateway.Event) {
			switch ev.Kind {
			case gateway.EventToolStart:
				fmt.Println("tool call:", ev.Call.Name, ev.Call.RawInput)
			case gateway.EventToolEnd:
				fmt.Println("tool result:", ev.Call.Status, ev.Call.Result.Content[0].Text)
			case gateway.EventTextDelta:
				fmt.Println("text:", ev.Text)
			}
		})
	fmt.Println("stop:", stop, err)
	// Output:
	// tool call: shout map[text:hello]
	// tool result: completed HELLO
	// text: The tool said: HELLO
	// stop: end_turn <nil>
}
