package acp

import (
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/session"
)

// The session core's errors state the fact; toRequestError adds what to do
// where the error leaves it to the front end.
func TestToRequestError_AddsWhatToDo(t *testing.T) {
	err := toRequestError(&session.NameTakenError{Name: "acp"})
	re, ok := err.(*acpsdk.RequestError)
	const cause = `mcpServers: server name "acp" is taken by an in-process server of the agent; choose another name`
	if !ok || re.Code != -32602 || re.Message != "Invalid params: "+cause || re.Data.(map[string]any)["error"] != cause {
		t.Errorf("toRequestError = %#v, want invalid params %q", err, cause)
	}
}
