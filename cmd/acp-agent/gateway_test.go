package main

import (
	"io"
	"net"
	"strings"
	"testing"
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
