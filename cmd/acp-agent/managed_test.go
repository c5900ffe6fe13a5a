package main

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/metrics"
	"github.com/seed02d3eb6b/acp-agent/sandbox/mcppolicy"
	"github.com/seed02d3eb6b/acp-agent/session"
	"github.com/seed02d3eb6b/acp-agent/session/store/memory"
)

// writeManaged writes a managed policy file in a temporary directory.
func writeManaged(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "managed.json")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadManaged: --managed-config names a file that must be there and well
// formed; without it the default file is the policy when it exists, and
// no policy when it does not; a malformed default file fails closed.
func TestLoadManaged(t *testing.T) {
	good := writeManaged(t, `{"deniedMcpServers": [{"serverName": "evil"}]}`)
	bad := writeManaged(t, `{"deniedMcpServers": [{"serverName": "evil", "serverUrl": "*"}]}`)
	missing := filepath.Join(t.TempDir(), "managed.json")
	for _, tt := range []struct {
		name, flag, def string
		source          string // the policy's file, "" for none
		err             string // a part of the error, "" for none
	}{
		{"no flag, no default file", "", missing, "", ""},
		{"no flag, no default path", "", "", "", ""},
		{"no flag, the default file", "", good, good, ""},
		{"the flag wins", good, bad, good, ""},
		{"a missing flag file", missing, good, "", "--managed-config: managed policy: open " + missing},
		{"a malformed flag file", bad, "", "", "--managed-config: managed policy " + bad + ": deniedMcpServers[0]: an entry has exactly one of"},
		{"a malformed default file", "", bad, "", "managed policy " + bad + ": deniedMcpServers[0]"},
		{"an unreadable default", "", t.TempDir(), "", "managed policy"}, // a directory: read fails, not "missing"
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := loadManaged(tt.flag, tt.def)
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) || p != nil {
					t.Fatalf("loadManaged = %v, %v; want an error with %q", p, err, tt.err)
				}
			case err != nil:
				t.Fatal(err)
			case tt.source == "" && p != nil, tt.source != "" && (p == nil || p.Source != tt.source):
				t.Fatalf("loadManaged = %+v, want the policy of %q", p, tt.source)
			}
		})
	}
}

// The flag reaches the session core: --managed-config on every mode that
// serves sessions, a bad file is a startup error naming it, and the
// policy is the bridge's Admit, which maps a server's spec (a stdio
// command with its arguments, an http URL) and refuses with the policy's
// error; with no policy there is no Admit.
func TestManagedConfig_Wiring(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	bad := writeManaged(t, `{"allowedMcpServers": {}}`)
	for _, args := range [][]string{{}, {"mcp-server"}, {"gateway"}} {
		err := run(append(args, "--managed-config", bad), strings.NewReader(""), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--managed-config: managed policy "+bad+": allowedMcpServers: must be an array") {
			t.Errorf("%v: error %v, want the malformed file named", args, err)
		}
	}

	p, err := mcppolicy.Load(writeManaged(t, `{"deniedMcpServers": [{"serverCommand": ["npx", "*"]}, {"serverUrl": "https://*.evil.example/*"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{managed: p}
	opts, err := cfg.coreOptions()
	if err != nil {
		t.Fatal(err)
	}
	adm := opts.Bridge.Admit
	if adm == nil {
		t.Fatal("no Admit with a managed policy")
	}
	for _, tt := range []struct {
		spec    bridge.ServerSpec
		refused string
	}{
		{bridge.ServerSpec{Name: "gh", Transport: bridge.TransportStdio, Command: "npx", Args: []string{"@x/gh"}}, `deniedMcpServers[0] {serverCommand: ["npx", "*"]}`},
		{bridge.ServerSpec{Name: "fs", Transport: bridge.TransportStdio, Command: "npx", Args: []string{"-y", "@x/fs"}}, ""},
		{bridge.ServerSpec{Name: "web", Transport: bridge.TransportHTTP, URL: "https://mcp.evil.example/mcp"}, `deniedMcpServers[1]`},
		{bridge.ServerSpec{Name: "old", Transport: bridge.TransportSSE, URL: "https://mcp.evil.example/sse"}, `deniedMcpServers[1]`},
		{bridge.ServerSpec{Name: "npx", Transport: bridge.TransportACP}, ""},
	} {
		err := adm(tt.spec)
		if tt.refused == "" && err != nil || tt.refused != "" && (!errors.Is(err, mcppolicy.ErrRefused) || !strings.Contains(err.Error(), p.Source) || !strings.Contains(err.Error(), tt.refused)) {
			t.Errorf("Admit(%s) = %v, want refused %q", tt.spec.Name, err, tt.refused)
		}
	}
	if opts, err := (&Config{}).coreOptions(); err != nil || opts.Bridge.Admit != nil {
		t.Errorf("no policy: Admit %v, %v; want none", opts.Bridge.Admit != nil, err)
	}
}

// A gateway applies each tenant's effective policy (ForTenant) to its
// sessions, before its own rule for stdio servers: a server the base
// denies is refused for every tenant, one a tenant's own list denies only
// for that tenant; the others go on to the gateway's allowCommands check.
// No server's process starts.
func TestTenantCores_ManagedPolicyPerTenant(t *testing.T) {
	p, err := mcppolicy.Parse("/etc/acp-agent/managed.json", []byte(`{
		"deniedMcpServers": [{"serverName": "evil"}],
		"tenants": {"alice": {"deniedMcpServers": [{"serverCommand": ["sh", "**"]}]}}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Config{managed: p}
	base, err := cfg.gatewayCoreOptions()
	if err != nil {
		t.Fatal(err)
	}
	base.RemoteClients = true
	cores := &tenantCores{base: base, store: memory.New(), cfg: cfg, met: metrics.New(&metrics.Options{Tenants: true}),
		log: slog.New(slog.DiscardHandler), cores: map[string]*tenantCore{}}
	t.Cleanup(cores.shutdown)
	marker := filepath.Join(t.TempDir(), "ran")
	specs := []bridge.ServerSpec{
		{Name: "evil", Transport: bridge.TransportStdio, Command: "sh", Args: []string{"-c", "echo > " + marker}},
		{Name: "tool", Transport: bridge.TransportStdio, Command: "sh", Args: []string{"-c", "echo > " + marker}},
	}
	for _, tt := range []struct {
		tenant   string
		toolDeny string // the tool server's refusal by the policy, "" when the gateway's rule refuses it
	}{
		{"alice", `server "tool" is refused by the managed policy /etc/acp-agent/managed.json: tenants.alice.deniedMcpServers[0] {serverCommand: ["sh", "**"]}`},
		{"bob", ""},
	} {
		s, err := cores.get(tt.tenant).Open(t.Context(), session.OpenRequest{Cwd: "/home/" + tt.tenant, Servers: specs})
		if err != nil {
			t.Fatalf("%s: %v", tt.tenant, err)
		}
		var evil, tool bridge.ServerStatus
		for _, st := range s.Servers() {
			switch st.Name {
			case "evil":
				evil = st
			case "tool":
				tool = st
			}
		}
		if want := `server "evil" is refused by the managed policy /etc/acp-agent/managed.json: deniedMcpServers[0] {serverName: "evil"}`; evil.State != bridge.StateFailed || gateway.ErrorText(evil.Err) != want {
			t.Errorf("%s: evil = %+v, want %s", tt.tenant, evil, want)
		}
		var stdioRefused *bridge.StdioRefusedError
		switch {
		case tt.toolDeny != "" && (tool.State != bridge.StateFailed || gateway.ErrorText(tool.Err) != tt.toolDeny):
			t.Errorf("%s: tool = %+v, want %s", tt.tenant, tool, tt.toolDeny)
		case tt.toolDeny == "" && !errors.As(tool.Err, &stdioRefused):
			t.Errorf("%s: tool = %+v, want it admitted by the policy and refused by gateway.allowCommands", tt.tenant, tool)
		}
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a server's command ran (%v)", err)
	}
}
