package bridge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// TestManager_StdioPolicy: a stdio server the policy refuses fails at once
// with the policy's error as its reason, shown by gateway.ErrorText with its
// remedy, and its process never starts; one the policy allows starts; the
// policy is not asked about other transports.
func TestManager_StdioPolicy(t *testing.T) {
	dir := t.TempDir()
	refusedMarker, allowedMarker := filepath.Join(dir, "refused-ran"), filepath.Join(dir, "allowed-ran")
	var mu sync.Mutex
	var asked []string
	policy := func(spec ServerSpec) error {
		mu.Lock()
		asked = append(asked, spec.Name)
		mu.Unlock()
		if spec.Name == "fs" {
			return &StdioRefusedError{Server: spec.Name, Command: spec.Command}
		}
		return nil
	}
	m := NewManager(&Options{Cwd: dir, StdioPolicy: policy})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	// Each command leaves a marker and exits: if it ran, the marker is
	// there by the time its initialize failed (its stdout closed).
	err := m.Connect(t.Context(), []ServerSpec{
		{Name: "fs", Transport: TransportStdio, Command: "/bin/sh", Args: []string{"-c", "echo ran > " + refusedMarker}},
		{Name: "local", Transport: TransportStdio, Command: "/bin/sh", Args: []string{"-c", "echo ran > " + allowedMarker}},
		{Name: "mem", Transport: TransportInProcess, Server: testServer(t)},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := m.Servers()
	if len(st) != 3 {
		t.Fatalf("servers = %+v", st)
	}
	fs := st[0]
	var refused *StdioRefusedError
	if fs.State != StateFailed || !errors.As(fs.Err, &refused) || refused.Server != "fs" || refused.Command != "/bin/sh" {
		t.Fatalf("fs = %+v, want failed with the policy's *StdioRefusedError", fs)
	}
	want := "stdio server \"fs\" would run \"/bin/sh\" on the gateway host, which runs only the commands its operator allows (config gateway.allowCommands); " +
		"run the editor's stdio servers on the editor's machine with `acp-agent connect URL`"
	if got := gateway.ErrorText(fs.Err); got != want {
		t.Errorf("ErrorText = %q\nwant %q", got, want)
	}
	if _, err := os.Stat(refusedMarker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused server's command ran (%v)", err)
	}
	if _, err := os.Stat(allowedMarker); err != nil {
		t.Errorf("the allowed server's command did not run: %v (status %+v)", err, st[1])
	}
	if st[1].State != StateFailed || errors.As(st[1].Err, &refused) {
		t.Errorf("local = %+v, want failed by its own doing (it is no MCP server)", st[1])
	}
	if st[2].State != StateConnected {
		t.Errorf("mem = %+v, want connected", st[2])
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(asked)
	if !slices.Equal(asked, []string{"fs", "local"}) {
		t.Errorf("the policy was asked about %v, want the two stdio servers once each", asked)
	}
}

// The remedy names the gateway's URL when it is known.
func TestStdioRefusedError_Text(t *testing.T) {
	err := &StdioRefusedError{Server: "fs", Command: "npx", GatewayURL: "wss://gw.example/acp"}
	if got, want := err.Error(), `stdio server "fs" would run "npx" on the gateway host, which runs only the commands its operator allows (config gateway.allowCommands)`; got != want {
		t.Errorf("Error = %q\nwant %q", got, want)
	}
	if got, want := gateway.ErrorText(err), err.Error()+"; run the editor's stdio servers on the editor's machine with `acp-agent connect wss://gw.example/acp`"; got != want {
		t.Errorf("ErrorText = %q\nwant %q", got, want)
	}
}
