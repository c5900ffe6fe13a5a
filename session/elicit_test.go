package session

import (
	"context"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/editor"
)

// askingEditor is an editor.Elicitor with the given modes that records the
// question and answers with res.
type askingEditor struct {
	editor.Editor
	caps editor.Capabilities
	got  editor.ElicitRequest
	res  editor.ElicitResult
}

func (e *askingEditor) Capabilities() editor.Capabilities { return e.caps }

func (e *askingEditor) Elicit(_ context.Context, r editor.ElicitRequest) (editor.ElicitResult, error) {
	e.got = r
	return e.res, nil
}

func (e *askingEditor) CompleteElicitation(context.Context, string) error { return nil }

// The session's servers may ask its user exactly in the editor's modes,
// with the server named in the message and the schema passed through.
func TestElicitor_FromEditor(t *testing.T) {
	type plain struct{ editor.Editor }
	for _, ed := range []editor.Editor{nil, plain{}, &askingEditor{}} {
		if el := elicitor(ed); el != nil {
			t.Errorf("elicitor(%T with no modes) = %+v, want nil", ed, el)
		}
	}
	ed := &askingEditor{caps: editor.Capabilities{ElicitForm: true}, res: editor.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}}
	el := elicitor(ed)
	if el == nil || !el.Form || el.URL {
		t.Fatalf("elicitor = %+v, want form only", el)
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string", "default": "Ada"}}}
	res, err := el.Elicit(t.Context(), bridge.ElicitRequest{Server: "db", CallID: "call_1", Params: &mcp.ElicitParams{Mode: "form", Message: "Name?", RequestedSchema: schema}})
	if err != nil || res.Action != "accept" || res.Content["name"] != "Grace" {
		t.Fatalf("Elicit = %+v, %v", res, err)
	}
	want := editor.ElicitRequest{Mode: "form", Message: `MCP server "db" asks: Name?`, ToolCallID: "call_1", Schema: schema}
	if !reflect.DeepEqual(ed.got, want) {
		t.Errorf("the editor got %+v, want %+v", ed.got, want)
	}
}

// signInEditor answers a URL elicitation only when its context ends (as the
// ACP request does when the sign-in finishes before the editor answers) and
// records the completions it is sent.
type signInEditor struct {
	editor.Editor
	asked     chan string
	completed chan string
}

func (e *signInEditor) Capabilities() editor.Capabilities {
	return editor.Capabilities{ElicitURL: true}
}

func (e *signInEditor) Elicit(ctx context.Context, r editor.ElicitRequest) (editor.ElicitResult, error) {
	e.asked <- r.ID
	<-ctx.Done()
	return editor.ElicitResult{}, ctx.Err()
}

func (e *signInEditor) CompleteElicitation(_ context.Context, id string) error {
	e.completed <- id
	return nil
}

// A sign-in that finishes before the editor has answered the URL
// elicitation still withdraws it with elicitation/complete.
func TestSignInPrompt_CompletesWhenSignedInBeforeTheAnswer(t *testing.T) {
	ed := &signInEditor{asked: make(chan string, 1), completed: make(chan string, 1)}
	ctx, signedIn := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- signInPrompt(slog.New(slog.DiscardHandler), ed, nil)(ctx, "remote", "https://example.invalid/authorize")
	}()
	var id string
	select {
	case id = <-ed.asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the editor was never asked")
	}
	signedIn()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("signInPrompt = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("signInPrompt did not return")
	}
	select {
	case got := <-ed.completed:
		if got != id {
			t.Errorf("elicitation/complete for %q, want %q", got, id)
		}
	default:
		t.Error("no elicitation/complete after a sign-in that ended before the editor answered")
	}
}
