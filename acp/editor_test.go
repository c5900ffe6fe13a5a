package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/editor"
)

// elicitClient is the client end of an agent connection, read and written as
// raw JSON-RPC frames.
type elicitClient struct {
	t  *testing.T
	rd *bufio.Reader
	w  io.Writer
}

// elicitPipe returns a clientEditor of session "sess_1" over a connection
// whose client is a elicitClient.
func elicitPipe(t *testing.T, caps editor.Capabilities) (*clientEditor, *elicitClient) {
	t.Helper()
	agentIn, clientOut := io.Pipe()
	clientIn, agentOut := io.Pipe()
	t.Cleanup(func() { clientOut.Close(); agentOut.Close() })
	conn := acpsdk.NewConnection(nil, agentOut, agentIn)
	return &clientEditor{rpc: conn, sid: "sess_1", caps: caps}, &elicitClient{t: t, rd: bufio.NewReader(clientIn), w: clientOut}
}

// next reads the next frame the agent sent.
func (c *elicitClient) next() (msg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params map[string]any  `json:"params"`
}) {
	c.t.Helper()
	line, err := c.rd.ReadBytes('\n')
	if err != nil {
		c.t.Fatal(err)
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		c.t.Fatalf("frame %s: %v", line, err)
	}
	return msg
}

func TestClientEditor_ElicitMapsToACP(t *testing.T) {
	schema := map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{
		"name":  map[string]any{"type": "string", "default": "Ada"},
		"color": map[string]any{"type": "string", "enum": []any{"red", "green"}},
	}}
	tests := []struct {
		name   string
		req    editor.ElicitRequest
		wire   string // the params the client must see
		answer string
		want   editor.ElicitResult
	}{
		{"form accept", editor.ElicitRequest{Mode: "form", Message: "Who?", ToolCallID: "call_1", Schema: schema},
			`{"mode":"form","message":"Who?","sessionId":"sess_1","toolCallId":"call_1","requestedSchema":{"type":"object","required":["name"],"properties":{"name":{"type":"string","default":"Ada"},"color":{"type":"string","enum":["red","green"]}}}}`,
			`{"action":"accept","content":{"name":"Grace","color":"red"}}`, editor.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace", "color": "red"}}},
		{"form decline, no call", editor.ElicitRequest{Mode: "form", Message: "Who?", Schema: schema},
			`{"mode":"form","message":"Who?","sessionId":"sess_1","requestedSchema":{"type":"object","required":["name"],"properties":{"name":{"type":"string","default":"Ada"},"color":{"type":"string","enum":["red","green"]}}}}`,
			`{"action":"decline"}`, editor.ElicitResult{Action: "decline"}},
		{"url cancel", editor.ElicitRequest{Mode: "url", Message: "Sign in", ToolCallID: "call_2", URL: "https://example.test/a", ID: "el_1"},
			`{"mode":"url","message":"Sign in","sessionId":"sess_1","toolCallId":"call_2","url":"https://example.test/a","elicitationId":"el_1"}`,
			`{"action":"cancel"}`, editor.ElicitResult{Action: "cancel"}},
	}
	e, c := elicitPipe(t, editor.Capabilities{ElicitForm: true, ElicitURL: true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type out struct {
				res editor.ElicitResult
				err error
			}
			done := make(chan out, 1)
			go func() {
				res, err := e.Elicit(t.Context(), tt.req)
				done <- out{res, err}
			}()
			msg := c.next()
			var want map[string]any
			_ = json.Unmarshal([]byte(tt.wire), &want)
			if msg.Method != "elicitation/create" || !reflect.DeepEqual(msg.Params, want) {
				got, _ := json.Marshal(msg.Params)
				t.Fatalf("%s params\n got %s\nwant %s", msg.Method, got, tt.wire)
			}
			fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", msg.ID, tt.answer)
			got := <-done
			if got.err != nil || !reflect.DeepEqual(got.res, tt.want) {
				t.Errorf("Elicit = %+v, %v; want %+v", got.res, got.err, tt.want)
			}
		})
	}
}

func TestClientEditor_ElicitCancelAndModes(t *testing.T) {
	e, c := elicitPipe(t, editor.Capabilities{ElicitForm: true})
	// A mode the client did not advertise fails without a request.
	if _, err := e.Elicit(t.Context(), editor.ElicitRequest{Mode: "url", URL: "https://x.test", ID: "1"}); err == nil || !strings.Contains(err.Error(), "does not offer") {
		t.Errorf("url mode not offered: err = %v", err)
	}
	if err := e.CompleteElicitation(t.Context(), "1"); err == nil {
		t.Error("elicitation/complete without url mode: no error")
	}
	// Ending ctx withdraws the question with $/cancel_request.
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := e.Elicit(ctx, editor.ElicitRequest{Mode: "form", Message: "?"})
		errc <- err
	}()
	req := c.next()
	if req.Method != "elicitation/create" {
		t.Fatalf("first frame %s, want elicitation/create", req.Method)
	}
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Elicit did not return after ctx ended")
	}
	msg := c.next()
	id, _ := json.Marshal(msg.Params["requestId"])
	if msg.Method != "$/cancel_request" || string(id) != string(req.ID) {
		t.Errorf("after cancel: %s %v, want $/cancel_request of %s", msg.Method, msg.Params, req.ID)
	}
}
