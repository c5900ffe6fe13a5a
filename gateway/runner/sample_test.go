package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

func TestLocal_SampleIsOneCompletionWithoutTools(t *testing.T) {
	var got *gateway.Request
	fake := &fakeProvider{complete: func(_ context.Context, req *gateway.Request, emit func(gateway.Event)) (*gateway.Response, error) {
		got = req
		emit(gateway.Event{Kind: gateway.EventTextDelta, Text: "ignored"})
		return &gateway.Response{Message: gateway.Message{Role: gateway.RoleAssistant, Content: []gateway.Content{gateway.TextContent("a haiku")}}}, nil
	}}
	g := NewLocal(&Options{Models: []gateway.Model{{ID: "fake:m", Provider: fake}}, Tools: []*gateway.Tool{echoTool("builtin")}})
	if !g.CanSample("") || !g.CanSample("fake:m") || g.CanSample(DirectModelID) || g.CanSample("nope") {
		t.Fatalf("CanSample: default %v, fake %v, direct %v, unknown %v", g.CanSample(""), g.CanSample("fake:m"), g.CanSample(DirectModelID), g.CanSample("nope"))
	}
	msgs := []gateway.Message{{Role: gateway.RoleUser, Content: []gateway.Content{gateway.TextContent("write a haiku")}}}
	res, err := g.Sample(t.Context(), gateway.SampleRequest{Model: "fake:m", System: "be brief", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Content[0].Text != "a haiku" {
		t.Errorf("response = %+v", res.Message)
	}
	if got == nil || got.System != "be brief" || len(got.Tools) != 0 || len(got.Messages) != 1 || got.Messages[0].Content[0].Text != "write a haiku" {
		t.Errorf("provider request = %+v", got)
	}
}

func TestLocal_SampleRefusesTheDirectProvider(t *testing.T) {
	g := NewLocal(nil)
	if g.CanSample("") {
		t.Error("CanSample(\"\") with only the direct provider = true")
	}
	_, err := g.Sample(t.Context(), gateway.SampleRequest{})
	if err == nil || !strings.Contains(err.Error(), "direct provider") {
		t.Errorf("Sample = %v, want an error naming the direct provider", err)
	}
}
