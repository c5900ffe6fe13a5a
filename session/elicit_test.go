package session

import (
	"context"
	"reflect"
	"testing"

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
