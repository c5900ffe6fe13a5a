package main

import (
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
