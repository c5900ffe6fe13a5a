package acp

import (
	"encoding/json"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

// thinkingScript is a scriptProvider that can think (gateway.Thinker),
// off by default.
type thinkingScript struct{ *scriptProvider }

func (thinkingScript) ThinksByDefault() bool { return false }

// initialize's session capabilities are read from the client's JSON; a
// malformed one counts as absent, as the schema says.
func TestInitializeRequest_SessionCapabilities(t *testing.T) {
	for _, c := range []struct {
		json                         string
		notices, boolean, compaction bool
	}{
		{`{"protocolVersion":1,"clientCapabilities":{"session":{"notices":{},"configOptions":{"boolean":{}},"compaction":{}}}}`, true, true, true},
		{`{"protocolVersion":1,"clientCapabilities":{"session":{"notices":true,"configOptions":{"boolean":null},"compaction":null}}}`, false, false, false},
		{`{"protocolVersion":1,"clientCapabilities":{"session":{"notices":{},"configOptions":"x","compaction":true}}}`, true, false, false},
		{`{"protocolVersion":1,"clientCapabilities":{"session":{"compaction":{"_meta":{}}}}}`, false, false, true},
		{`{"protocolVersion":1,"clientCapabilities":{}}`, false, false, false},
		{`{"protocolVersion":1}`, false, false, false},
	} {
		var r initializeRequest
		if err := decodeParams(json.RawMessage(c.json), &r); err != nil {
			t.Fatalf("%s: %v", c.json, err)
		}
		if r.Notices != c.notices || r.BooleanOptions != c.boolean || r.Compaction != c.compaction || r.ProtocolVersion != 1 {
			t.Errorf("%s: notices %v, boolean %v, compaction %v, protocol %d", c.json, r.Notices, r.BooleanOptions, r.Compaction, r.ProtocolVersion)
		}
	}
	var r initializeRequest
	if err := decodeParams(json.RawMessage(`{"protocolVersion":"one"}`), &r); err == nil || !strings.Contains(err.Error(), "params.protocolVersion must be") {
		t.Errorf("a bad protocolVersion: %v", err)
	}
}

// To a client that takes boolean config options, a session offers its
// model's on/off choices: thinking (a model that can think) and tool
// search (any model but direct); setting one reaches the next turn's model
// requests; the direct model offers neither. Without the capability, only
// the model selector is offered.
func TestAgent_BooleanConfigOptions(t *testing.T) {
	p := &scriptProvider{responses: []gateway.Response{say("ok")}}
	gw := runner.NewLocal(&runner.Options{Models: []gateway.Model{{ID: "a", Label: "A", Provider: thinkingScript{p}}}}) // a + direct
	h := startAgentWith(t, testOptions{Gateway: gw})
	ids := func(opts []acpsdk.SessionConfigOption) string {
		var out []string
		for _, o := range opts {
			switch {
			case o.Select != nil:
				out = append(out, string(o.Select.Id)+"="+string(o.Select.CurrentValue))
			case o.Boolean != nil:
				b := "false"
				if o.Boolean.CurrentValue {
					b = "true"
				}
				out = append(out, string(o.Boolean.Id)+"="+b)
			}
		}
		return strings.Join(out, " ")
	}
	res, err := h.conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}})
	if err != nil || ids(res.ConfigOptions) != "mode=full-access model=a" {
		t.Fatalf("without the capability: %s, %v; want the mode and model selectors only", ids(res.ConfigOptions), err)
	}

	h.agent.client.booleanOptions.Store(true) // as initialize with session.configOptions.boolean does
	res, err = h.conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}})
	if err != nil || ids(res.ConfigOptions) != "mode=full-access model=a thinking=false tool_search=true" {
		t.Fatalf("with the capability: %s, %v", ids(res.ConfigOptions), err)
	}
	raw, _ := json.Marshal(res.ConfigOptions[2])
	for _, want := range []string{`"type":"boolean"`, `"category":"thought_level"`, `"name":"Extended thinking"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("thinking option %s lacks %s", raw, want)
		}
	}
	sid := res.SessionId
	set, err := h.conn.SetSessionConfigOption(t.Context(), acpsdk.SetSessionConfigOptionRequest{Boolean: &acpsdk.SetSessionConfigOptionBoolean{SessionId: sid, ConfigId: thinkingConfigID, Type: "boolean", Value: true}})
	if err != nil || ids(set.ConfigOptions) != "mode=full-access model=a thinking=true tool_search=true" {
		t.Fatalf("set thinking: %s, %v", ids(set.ConfigOptions), err)
	}
	if _, err := h.conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("think")}}); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	got := p.requests[len(p.requests)-1].Thinking
	p.mu.Unlock()
	if got == nil || !*got {
		t.Errorf("the model request has thinking %v, want on", got)
	}
	_, err = h.conn.SetSessionConfigOption(t.Context(), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: toolSearchConfigID, Value: "off"}})
	if re := requestError(t, err); re.Code != -32602 || !strings.Contains(re.Message, `config option "tool_search" is a boolean`) {
		t.Errorf("a value id for a boolean: %d %q", re.Code, re.Message)
	}
	set, err = h.conn.SetSessionConfigOption(t.Context(), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: modelConfigID, Value: runner.DirectModelID}})
	if err != nil || ids(set.ConfigOptions) != "mode=full-access model=direct" {
		t.Errorf("the direct model: %s, %v; want no boolean options", ids(set.ConfigOptions), err)
	}
}
