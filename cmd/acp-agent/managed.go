package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/sandbox/mcppolicy"
)

// defaultManagedPath is the managed policy's file when --managed-config
// is not given: used when it exists.
const defaultManagedPath = "/etc/acp-agent/managed.json"

// loadManaged loads the managed policy of MCP servers (package mcppolicy):
// the file flag names (--managed-config), else def when it exists. No flag
// and no file at def is no policy (nil). It fails closed: a missing or
// unreadable file the flag names, an unreadable def, and a malformed file
// are errors naming the file.
func loadManaged(flag, def string) (*mcppolicy.Policy, error) {
	if flag != "" {
		p, err := mcppolicy.Load(flag)
		if err != nil {
			return nil, fmt.Errorf("--managed-config: %w", err)
		}
		return p, nil
	}
	if def == "" {
		return nil, nil
	}
	p, err := mcppolicy.Load(def)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return p, err
}

// logManaged logs, once at startup, the managed policy in force, if any.
func logManaged(p *mcppolicy.Policy, log *slog.Logger) {
	if p == nil {
		return
	}
	allowed := "any"
	if p.AllowedDefined {
		allowed = fmt.Sprint(len(p.Allowed))
	}
	log.Info("managed MCP server policy", "file", p.Source, "allowed", allowed, "denied", len(p.Denied), "tenants", len(p.Tenants))
}

// admit is the bridge.Options.Admit of policy p (nil for a nil p): the
// server's spec as the policy sees it, checked. A refusal is p's
// *mcppolicy.RefusedError, which names the server and the policy file.
func admit(p *mcppolicy.Policy) func(bridge.ServerSpec) error {
	if p == nil {
		return nil
	}
	return func(spec bridge.ServerSpec) error {
		return p.Check(policyServer(spec))
	}
}

// policyServer is what the managed policy sees of spec: its name and
// transport, a stdio server's command and arguments, an http or sse
// server's URL.
func policyServer(spec bridge.ServerSpec) mcppolicy.Server {
	s := mcppolicy.Server{Name: spec.Name, Transport: mcppolicy.Transport(spec.Transport)}
	switch spec.Transport {
	case bridge.TransportStdio:
		s.Command = append([]string{spec.Command}, spec.Args...)
	case bridge.TransportHTTP, bridge.TransportSSE:
		s.URL = spec.URL
	}
	return s
}
