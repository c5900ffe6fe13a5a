package acp

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
)

func TestParseMCPServers(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		want    []bridge.ServerSpec
		wantErr string // substring of the error; "" means success
	}{
		{"null", `null`, nil, ""},
		{"empty", `[]`, []bridge.ServerSpec{}, ""},
		{"stdio full", `[{"name":"fs","command":"node","args":["a","b"],"env":[{"name":"K","value":"v"}]}]`,
			[]bridge.ServerSpec{{Name: "fs", Transport: "stdio", Command: "node", Args: []string{"a", "b"}, Env: []environ.Var{{Name: "K", Value: "v"}}}}, ""},
		{"stdio without args and env", `[{"name":"fs","command":"node"}]`,
			[]bridge.ServerSpec{{Name: "fs", Transport: "stdio", Command: "node", Env: []environ.Var{}}}, ""},
		{"explicit stdio type", `[{"type":"stdio","name":"fs","command":"node","args":null,"env":null}]`,
			[]bridge.ServerSpec{{Name: "fs", Transport: "stdio", Command: "node", Env: []environ.Var{}}}, ""},
		{"env as object", `[{"name":"fs","command":"x","env":{"B":"2","A":"1"}}]`,
			[]bridge.ServerSpec{{Name: "fs", Transport: "stdio", Command: "x", Env: []environ.Var{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}}}, ""},
		{"http", `[{"type":"http","name":"web","url":"https://x/mcp","headers":[{"name":"Authorization","value":"Bearer t"}]}]`,
			[]bridge.ServerSpec{{Name: "web", Transport: "http", URL: "https://x/mcp", Headers: []bridge.Header{{Name: "Authorization", Value: "Bearer t"}}}}, ""},
		{"sse without headers", `[{"type":"sse","name":"old","url":"http://127.0.0.1:1/sse"}]`,
			[]bridge.ServerSpec{{Name: "old", Transport: "sse", URL: "http://127.0.0.1:1/sse"}}, ""},
		{"unknown type is well-formed", `[{"type":"websocket","name":"ws","url":"ws://x"}]`,
			[]bridge.ServerSpec{{Name: "ws", Transport: "websocket"}}, ""},

		{"reserved name acp", `[{"name":"fs","command":"a"},{"name":"acp","command":"x"}]`, nil, `mcpServers[1] ("acp") name: "acp" is reserved for the agent's built-in tools`},
		{"reserved name acp, http", `[{"type":"http","name":"acp","url":"https://x"}]`, nil, `mcpServers[0] ("acp") name: "acp" is reserved`},
		{"reserved name acp, unknown type", `[{"type":"websocket","name":"acp","url":"ws://x"}]`, nil, `mcpServers[0] ("acp") name: "acp" is reserved`},
		{"inprocess type from a client", `[{"type":"inprocess","name":"mine"}]`, nil, `mcpServers[0] ("mine") type: "inprocess" is only for servers of the agent's own process`},
		{"not an array", `{"name":"x"}`, nil, "mcpServers: must be an array"},
		{"entry not an object", `["fs"]`, nil, "mcpServers[0]: must be an object"},
		{"empty name", `[{"name":"","command":"x"}]`, nil, "mcpServers[0] name: must be a non-empty string"},
		{"missing name", `[{"command":"x"}]`, nil, "mcpServers[0] name: must be a non-empty string"},
		{"control character in name", `[{"name":"fs","command":"a"},{"name":"ev\u001b[2Jil","command":"x"}]`, nil, `mcpServers[1] name: name "ev\x1b[2Jil" has the control or invisible formatting character U+001B`},
		{"newline in name", `[{"name":"a\nb","command":"x"}]`, nil, `mcpServers[0] name: name "a\nb" has the control`},
		{"bidi override in name", `[{"name":"gith\u202eub","command":"x"}]`, nil, `mcpServers[0] name: name "gith\u202eub" has the control or invisible formatting character U+202E`},
		{"whitespace-only name", `[{"name":" \t","command":"x"}]`, nil, "mcpServers[0] name: must be a non-empty string"},
		{"name not a string", `[{"name":7,"command":"x"}]`, nil, "mcpServers[0] name: must be a string"},
		{"empty command", `[{"name":"fs","command":"  "}]`, nil, `mcpServers[0] ("fs") command: must be a non-empty string`},
		{"missing command", `[{"name":"fs"}]`, nil, `mcpServers[0] ("fs") command: must be a non-empty string`},
		{"duplicate name", `[{"name":"fs","command":"a"},{"name":"fs","command":"b"}]`, nil, `mcpServers[1] ("fs") name: duplicate name "fs" (also mcpServers[0])`},
		{"args not strings", `[{"name":"fs","command":"a","args":[1]}]`, nil, `("fs") args: must be an array of strings`},
		{"env bad shape", `[{"name":"fs","command":"a","env":"K=v"}]`, nil, `("fs") env: must be an array`},
		{"env bad name", `[{"name":"fs","command":"a","env":[{"name":"A=B","value":"v"}]}]`, nil, `("fs") env: variable name "A=B"`},
		{"env empty name", `[{"name":"fs","command":"a","env":[{"name":"","value":"v"}]}]`, nil, `("fs") env: [0].name must be a non-empty string`},
		{"type not a string", `[{"name":"fs","type":1}]`, nil, `("fs") type: must be a string`},
		{"http without url", `[{"type":"http","name":"web"}]`, nil, `("web") url: must be a non-empty string`},
		{"Host header", `[{"type":"http","name":"web","url":"https://x","headers":[{"name":"host","value":"evil"}]}]`, nil, `mcpServers[0] ("web") headers: header "host" is set by the transport`},
		{"Content-Length header", `[{"type":"sse","name":"s","url":"https://x","headers":[{"name":"Content-Length","value":"1"}]}]`, nil, `("s") headers: header "Content-Length"`},
		{"Transfer-Encoding header", `[{"type":"http","name":"w","url":"https://x","headers":[{"name":"Transfer-Encoding","value":"chunked"}]}]`, nil, `header "Transfer-Encoding"`},
		{"Connection header", `[{"type":"http","name":"w","url":"https://x","headers":[{"name":"Connection","value":"close"}]}]`, nil, `header "Connection"`},
		{"Upgrade header", `[{"type":"http","name":"w","url":"https://x","headers":[{"name":"Upgrade","value":"h2c"}]}]`, nil, `header "Upgrade"`},
		{"CR in a value", `[{"type":"http","name":"w","url":"https://x","headers":[{"name":"X-A","value":"a\r\nHost: evil"}]}]`, nil, `header "X-A": name and value must not contain CR or LF`},
		{"LF in a name", `[{"type":"http","name":"w","url":"https://x","headers":[{"name":"X-A\nB","value":"a"}]}]`, nil, `must not contain CR or LF`},
		{"meta timeouts", `[{"name":"fs","command":"x","_meta":{"acp-agent/timeouts":{"connect":"5s","toolsList":10,"toolCall":"2m"},"other":1}}]`,
			[]bridge.ServerSpec{{Name: "fs", Transport: "stdio", Command: "x", Env: []environ.Var{}, Timeouts: bridge.Timeouts{Connect: 5 * time.Second, ToolsList: 10 * time.Second, ToolCall: 2 * time.Minute}}}, ""},
		{"meta timeouts bad value", `[{"name":"fs","command":"x","_meta":{"acp-agent/timeouts":{"connect":"soon"}}}]`, nil, `("fs") _meta.acp-agent/timeouts: connect: "soon" is not a positive duration`},
		{"meta timeouts unknown key", `[{"name":"fs","command":"x","_meta":{"acp-agent/timeouts":{"call":"5s"}}}]`, nil, `unknown key "call"`},
		{"headers bad shape", `[{"type":"http","name":"web","url":"https://x","headers":{"A":"b"}}]`, nil, `("web") headers: must be an array`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMCPServers(json.RawMessage(tt.raw))
			if tt.wantErr != "" {
				var mse *MCPServersError
				if !errors.As(err, &mse) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want *MCPServersError containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func FuzzParseMCPServers(f *testing.F) {
	for _, s := range []string{
		`[]`, `null`, `[{"name":"fs","command":"node"}]`,
		`[{"type":"http","name":"w","url":"https://x","headers":[{"name":"a","value":"b"}]}]`,
		`[{"name":"a","command":"x","env":{"K":"v"}},{"name":"a","command":"y"}]`,
		`[{"name":"a","command":"x","args":["1"],"env":[{"name":"K","value":"v"}]}]`,
		`[{"name":"a\u0000\u202e","command":"x"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		specs, err := ParseMCPServers(raw)
		if err != nil {
			var mse *MCPServersError
			if !errors.As(err, &mse) || !strings.HasPrefix(err.Error(), "mcpServers") {
				t.Fatalf("error %v is not an MCPServersError naming mcpServers", err)
			}
			return
		}
		names := map[string]bool{}
		for _, s := range specs {
			if strings.TrimSpace(s.Name) == "" || names[s.Name] {
				t.Fatalf("empty or duplicate name accepted: %q", s.Name)
			}
			if err := bridge.ValidateServerName(s.Name); err != nil {
				t.Fatalf("invalid name accepted: %v", err)
			}
			names[s.Name] = true
			if s.Transport == bridge.TransportStdio && strings.TrimSpace(s.Command) == "" {
				t.Fatalf("stdio entry %q without command accepted", s.Name)
			}
			if (s.Transport == bridge.TransportHTTP || s.Transport == bridge.TransportSSE) && s.URL == "" {
				t.Fatalf("%s entry %q without url accepted", s.Transport, s.Name)
			}
			for _, e := range s.Env {
				if !environ.ValidName(e.Name) {
					t.Fatalf("invalid env name %q accepted", e.Name)
				}
			}
		}
	})
}
