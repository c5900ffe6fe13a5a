package main

import (
	"errors"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
)

func TestCheckListen(t *testing.T) {
	tests := []struct{ addr, token, want string }{
		{"127.0.0.1:7777", "", ""},
		{"localhost:7777", "", ""},
		{"[::1]:7777", "", ""},
		{":7777", "t", "has no host and would bind every interface"},
		{"0.0.0.0:7777", "", "not a loopback address: set a token"},
		{"192.168.1.5:7777", "", "not a loopback address"},
		{"0.0.0.0:7777", "t", ""},
		{"7777", "", "missing port"},
	}
	for _, tt := range tests {
		err := checkListen(tt.addr, tt.token, tokenEnv)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("checkListen(%q, %q) = %v, want %q", tt.addr, tt.token, err, tt.want)
		}
	}
}

func TestRunGateway_RefusesANonOrigin(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	// A port in use: were the entry accepted, the gateway would fail to
	// listen rather than serve forever.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = runGateway([]string{"--listen", ln.Addr().String(), "--allowed-origins", "ide.example"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `--allowed-origins: "ide.example" is not an origin`) {
		t.Errorf("error %v, want the entry refused", err)
	}
}

// A gateway runs a stdio server only when it is one of the config's own
// servers (command and args), or its command is allowed (as written, or
// as the path it resolves to); anything else is refused before it starts,
// saying what to do.
func TestGatewayStdioPolicy(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh in PATH")
	}
	l := &commandAllowList{
		commands: []string{"sh"},
		servers:  []bridge.ServerSpec{{Name: "ops", Transport: bridge.TransportStdio, Command: "/opt/ops-server", Args: []string{"--serve"}}},
	}
	for _, c := range []struct {
		spec bridge.ServerSpec
		ok   bool
	}{
		{bridge.ServerSpec{Name: "a", Command: "sh", Args: []string{"-c", "x"}}, true},
		{bridge.ServerSpec{Name: "b", Command: sh}, true}, // the path "sh" resolves to
		{bridge.ServerSpec{Name: "ops", Command: "/opt/ops-server", Args: []string{"--serve"}}, true},
		{bridge.ServerSpec{Name: "ops", Command: "/opt/ops-server", Args: []string{"--evil"}}, false},
		{bridge.ServerSpec{Name: "fs", Command: "npx", Args: []string{"-y", "x"}}, false},
	} {
		err := l.check(c.spec)
		var refused *bridge.StdioRefusedError
		if c.ok != (err == nil) || !c.ok && (!errors.As(err, &refused) || refused.Server != c.spec.Name) {
			t.Errorf("%+v: %v, want allowed %v", c.spec, err, c.ok)
		}
	}
	text := gateway.ErrorText(l.check(bridge.ServerSpec{Name: "fs", Command: "npx"}))
	if !strings.Contains(text, `"fs"`) || !strings.Contains(text, "gateway.allowCommands") || !strings.Contains(text, "acp-agent connect") {
		t.Errorf("the refusal says %q", text)
	}
}
