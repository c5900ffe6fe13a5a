package mcppolicy

import (
	"errors"
	"fmt"
)

var (
	// ErrRefused is wrapped by every *RefusedError: errors.Is(err,
	// ErrRefused) tells a server the managed policy refused.
	ErrRefused = errors.New("refused by the managed MCP server policy")
	// ErrInvalid is wrapped by every *InvalidError: the policy file is
	// malformed.
	ErrInvalid = errors.New("invalid managed MCP server policy")
)

// RefusedError is a server the managed policy refuses. Its text names the
// server, the policy file and what refused it:
//
//	server "github" is refused by the managed policy /etc/acp-agent/managed.json: deniedMcpServers[1] {serverCommand: ["npx", "*"]}
//	server "github" is not in allowedMcpServers of the managed policy /etc/acp-agent/managed.json: no serverName entry names it
//
// It never shows the server's command or URL, which may carry secrets,
// only the policy's own entries.
type RefusedError struct {
	// Server is the refused server's name.
	Server string
	// Source is the policy file (Policy.Source).
	Source string
	// Denied is the deniedMcpServers entry that matched the server, or nil
	// when the server is refused because the allowlist does not list it.
	Denied *Rule
	// List is the key of the allowlist that does not list the server
	// ("allowedMcpServers", or "tenants.<tenant>.allowedMcpServers"),
	// empty when Denied is set.
	List string
	// Why says why no entry of List allowed the server.
	Why string
}

// Error states the refusal (see RefusedError).
func (e *RefusedError) Error() string {
	if e.Denied != nil {
		return fmt.Sprintf("server %q is refused by the managed policy %s: %s", e.Server, e.Source, e.Denied.Describe())
	}
	return fmt.Sprintf("server %q is not in %s of the managed policy %s: %s", e.Server, e.List, e.Source, e.Why)
}

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// InvalidError is a malformed policy file: its text names the file, where
// in it (a key path such as "deniedMcpServers[2]", or a line and column
// for broken JSON) and the rule broken:
//
//	managed policy /etc/acp-agent/managed.json: deniedMcpServers[2]: an entry has exactly one of serverName, serverCommand, serverUrl; this one has serverName and serverUrl
type InvalidError struct {
	// File is the policy file.
	File string
	// Key is where in the file: a key path, or "line L, column C".
	Key string
	// Rule is the rule broken.
	Rule string
}

// Error names the file, the key and the rule.
func (e *InvalidError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("managed policy %s: %s", e.File, e.Rule)
	}
	return fmt.Sprintf("managed policy %s: %s: %s", e.File, e.Key, e.Rule)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Unwrap() error { return ErrInvalid }
