package bridge

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
)

func TestServerSpecValidate(t *testing.T) {
	stdio := ServerSpec{Name: "fs", Transport: TransportStdio, Command: "node", Env: []environ.Var{{Name: "K", Value: "v"}}}
	web := ServerSpec{Name: "web", Transport: TransportHTTP, URL: "https://x/mcp", Headers: []Header{{Name: "Authorization", Value: "Bearer t"}}}
	for _, ok := range []ServerSpec{stdio, web, {Name: "old", Transport: TransportSSE, URL: "http://127.0.0.1:1/sse"}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	with := func(s ServerSpec, f func(*ServerSpec)) ServerSpec { f(&s); return s }
	tests := []struct {
		name        string
		spec        ServerSpec
		field, rule string
	}{
		{"empty name", with(stdio, func(s *ServerSpec) { s.Name = " " }), "name", "must be a non-empty string"},
		{"bidi name", with(stdio, func(s *ServerSpec) { s.Name = "gith\u202eub" }), "name", "U+202E"},
		{"no transport", with(stdio, func(s *ServerSpec) { s.Transport = "" }), "type", `"" is not a transport (want stdio, http, sse or acp)`},
		{"unknown transport", with(stdio, func(s *ServerSpec) { s.Transport = "websocket" }), "type", `"websocket" is not a transport`},
		{"blank command", with(stdio, func(s *ServerSpec) { s.Command = " \t" }), "command", "must be a non-empty string"},
		{"env name with =", with(stdio, func(s *ServerSpec) { s.Env = []environ.Var{{Name: "A=B"}} }), "env", `variable name "A=B" must be non-empty and contain no '=' or NUL`},
		{"empty env name", with(stdio, func(s *ServerSpec) { s.Env = []environ.Var{{Name: ""}} }), "env", `variable name ""`},
		{"NUL in env value", with(stdio, func(s *ServerSpec) { s.Env = []environ.Var{{Name: "A", Value: "a\x00b"}} }), "env", "value of A contains NUL"},
		{"no url", with(web, func(s *ServerSpec) { s.URL = "" }), "url", "must be a non-empty string"},
		{"Host header", with(web, func(s *ServerSpec) { s.Headers = []Header{{Name: "host", Value: "evil"}} }), "headers", `header "host" is set by the transport`},
		{"CRLF in header", with(web, func(s *ServerSpec) { s.Headers = []Header{{Name: "X-A", Value: "a\r\nHost: evil"}} }), "headers", "must not contain CR or LF"},
		{"negative timeout", with(web, func(s *ServerSpec) { s.Timeouts.ToolCall = -time.Second }), "timeouts", "toolCall: -1s is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			var se *SpecError
			if !errors.As(err, &se) || se.Field != tt.field || !strings.Contains(se.Rule, tt.rule) {
				t.Fatalf("Validate() = %#v, want a *SpecError for field %q containing %q", err, tt.field, tt.rule)
			}
			want := "server " + strconv.Quote(tt.spec.Name) + " " + tt.field + ": "
			if tt.field == "name" {
				want = "server name: "
			}
			if got := err.Error(); !strings.HasPrefix(got, want) {
				t.Errorf("Error() = %q, want it to start with %q", got, want)
			}
			if unsupported := errors.Is(err, ErrUnsupportedTransport); unsupported != (tt.field == "type") {
				t.Errorf("errors.Is(err, ErrUnsupportedTransport) = %v", unsupported)
			}
		})
	}
}

func TestValidateServerName(t *testing.T) {
	for _, ok := range []string{"github", "my server", "files-2", "données", "工具"} {
		if err := ValidateServerName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, tt := range []struct{ name, want string }{
		{"", "non-empty"},
		{" \t ", "non-empty"},
		{"a\x00b", "U+0000"},
		{"evil\x1b[2J", "U+001B"},
		{"line\nbreak", "U+000A"},
		{"del\x7f", "U+007F"},
		{"c1\u0085", "U+0085"},
		{"gith\u202eub", "U+202E"},
		{"zero\u200bwidth", "U+200B"},
		{"sep\u2028x", "U+2028"},
		{"bad\xffutf8", "UTF-8"},
	} {
		err := ValidateServerName(tt.name)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want one naming %s", tt.name, err, tt.want)
			continue
		}
		if strings.ContainsAny(err.Error(), "\x00\x1b\n\x7f\u0085\u202e\u200b\u2028") {
			t.Errorf("%q: the error carries the raw character: %q", tt.name, err)
		}
	}
}
