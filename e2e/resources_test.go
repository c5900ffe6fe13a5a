package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/testfixtures/fakemodel"
)

const everythingInstructions = "demo://resource/static/document/instructions.md"

// /resources lists server-everything's resources and templates; /read shows
// a listed resource, a templated one, and summarizes a binary one.
func TestResources_Commands(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	sid := a.newSession(t.TempDir(), everythingServer("everything"))
	_, out := a.prompt(sid, "/resources")
	got := text(out)
	for _, want := range []string{
		"everything: ",
		"- " + everythingInstructions + " — instructions.md, text/markdown",
		"- template demo://resource/dynamic/text/{resourceId}",
		"- template demo://resource/dynamic/blob/{resourceId}",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("/resources =\n%s\nwant %q", got, want)
		}
	}
	for cmd, want := range map[string]string{
		"/read " + everythingInstructions:      everythingInstructions + " (text/markdown):\n# Everything Server",
		"/read demo://resource/dynamic/text/2": "Resource 2: This is a plaintext resource",
		"/read demo://resource/dynamic/blob/3": "bytes of binary data, not shown",
		"/read demo://resource/nowhere/else":   `No MCP server of this session lists "demo://resource/nowhere/else"`,
	} {
		if _, out := a.prompt(sid, cmd); !strings.Contains(text(out), want) {
			t.Errorf("%s =\n%s\nwant %q", cmd, text(out), want)
		}
	}
}

// A prompt carrying a resource link the session's server serves reaches the
// model with the resource's text. A tool's resource links stay links for the
// client and reach the model as links, which it reads with
// mcp__everything__read_resource; the contents reach it.
func TestResources_ModelGetsLinkedTextAndReads(t *testing.T) {
	t.Parallel()
	for _, be := range modelBackends {
		t.Run(be.name, func(t *testing.T) {
			fake := be.fake(t,
				fakemodel.Turn{Text: "Finding links.", ToolCalls: []fakemodel.ToolCall{
					{ID: "call_links", Name: "mcp__everything__get-resource-links", Args: `{"count":2}`},
				}},
				fakemodel.Turn{Text: "Reading one.", ToolCalls: []fakemodel.ToolCall{
					{ID: "call_read", Name: "mcp__everything__read_resource", Args: `{"uri":"demo://resource/dynamic/text/2"}`},
				}},
				fakemodel.Turn{Text: "Both read."},
			)
			a := be.start(t, fake.URL)
			perms := &permissionAnswers{}
			perms.queue("allow_once")
			a.Client.SetPermission(perms.answer)
			sid := a.newSession(t.TempDir(), everythingServer("everything"))

			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			from := len(a.Client.Updates())
			res, err := a.Conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: acpsdk.SessionId(sid), Prompt: []acpsdk.ContentBlock{
				acpsdk.TextBlock("summarize these"),
				acpsdk.ResourceLinkBlock("instructions.md", everythingInstructions),
				acpsdk.ResourceLinkBlock("elsewhere", "https://example.com/not-served"),
			}})
			out := a.Client.Updates()[from:]
			if err != nil || res.StopReason != acpsdk.StopReasonEndTurn {
				t.Fatalf("prompt: %v %v\n%s", res.StopReason, err, dump(out))
			}
			reqs := fake.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d model requests, want 3", len(reqs))
			}
			first := string(reqs[0].Body)
			for _, want := range []string{"summarize these", "Server Instructions", `resource link: https://example.com/not-served`, "mcp__everything__read_resource", "mcp__everything__list_resources"} {
				if !strings.Contains(first, want) {
					t.Errorf("the first model request lacks %q:\n%.2000s", want, first)
				}
			}
			if !strings.Contains(string(reqs[1].Body), "resource link: demo://resource/dynamic/text/2") {
				t.Errorf("the tool's resource link did not reach the model as a link:\n%.3000s", reqs[1].Body)
			}
			if !strings.Contains(string(reqs[2].Body), "Resource 2: This is a plaintext resource") {
				t.Errorf("read_resource's result did not reach the model:\n%.3000s", reqs[2].Body)
			}
			link := false
			for _, n := range out {
				if u := n.Update.ToolCallUpdate; u != nil && u.ToolCallId == "call_links" {
					for _, c := range u.Content {
						if c.Content != nil && c.Content.Content.ResourceLink != nil && c.Content.Content.ResourceLink.Uri == "demo://resource/dynamic/text/2" {
							link = true
						}
					}
				}
			}
			if !link {
				t.Errorf("the client did not get get-resource-links' link as a resource_link:\n%s", dump(out))
			}
			if u := finalToolUpdate(t, out); *u.Status != acpsdk.ToolCallStatusCompleted || u.ToolCallId != "call_read" {
				t.Errorf("read_resource ended %s:\n%s", *u.Status, dump(out))
			}
		})
	}
}
