package runner

import (
	"fmt"
	"path"
	"sync"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// PermissionMode is the default answer of the permissions policy for a tool
// no glob names.
type PermissionMode string

// The permission modes (config permissions.mode).
const (
	// PermissionAsk asks the user before running a tool whose annotations do
	// not say readOnlyHint (the default).
	PermissionAsk PermissionMode = "ask"
	// PermissionAllow runs every tool without asking.
	PermissionAllow PermissionMode = "allow"
	// PermissionDeny runs only the tools the Allow globs name.
	PermissionDeny PermissionMode = "deny"
)

// Permissions is the tool permissions policy (config "permissions"). Globs
// match tool names with path.Match syntax, such as "mcp__github__*". Deny
// wins over Allow; a denied tool is not offered to the model at all. The zero
// value asks for every tool that is not read-only.
type Permissions struct {
	Mode  PermissionMode
	Allow []string
	Deny  []string
}

// Validate reports a mode or glob the policy cannot use.
func (p Permissions) Validate() error {
	switch p.Mode {
	case "", PermissionAsk, PermissionAllow, PermissionDeny:
	default:
		return fmt.Errorf("permissions.mode %q: want ask, allow or deny", p.Mode)
	}
	for _, g := range append(append([]string(nil), p.Allow...), p.Deny...) {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("permissions glob %q: %v", g, err)
		}
	}
	return nil
}

// Decision is the policy's verdict on a tool.
type Decision int

// The decisions of the policy.
const (
	DecisionAllow Decision = iota
	DecisionAsk
	DecisionDeny
)

// Decide returns the policy's decision for tool t.
func (p Permissions) Decide(t *gateway.Tool) Decision {
	if matchAny(p.Deny, t.Name) {
		return DecisionDeny
	}
	if matchAny(p.Allow, t.Name) {
		return DecisionAllow
	}
	switch p.Mode {
	case PermissionAllow:
		return DecisionAllow
	case PermissionDeny:
		return DecisionDeny
	}
	if t.Annotations.ReadOnlyHint {
		return DecisionAllow
	}
	return DecisionAsk
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// grants remembers "allow always" answers: tool names by session key.
type grants struct {
	mu sync.Mutex
	m  map[string]map[string]bool
}

func (g *grants) allowed(sessionKey, tool string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[sessionKey][tool]
}

func (g *grants) grant(sessionKey, tool string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = make(map[string]map[string]bool)
	}
	if g.m[sessionKey] == nil {
		g.m[sessionKey] = make(map[string]bool)
	}
	g.m[sessionKey][tool] = true
}

func (g *grants) forget(sessionKey string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, sessionKey)
}

// declinedText is the tool result the model gets when the user rejects a call.
func declinedText(name string) string {
	return fmt.Sprintf("The user declined to run %s. Do not retry it unless the user asks; continue without it or ask them how to proceed.", name)
}

// unaskedText is the tool result the model gets when the call needs the
// user's permission and no one can be asked.
func unaskedText(name string) string {
	return fmt.Sprintf("%s was refused: it needs the user's permission (permissions policy \"ask\"), and the client cannot be asked for it. Do not retry it; continue without it, and say in your answer that it was refused and that the permissions config (permissions.allow) can allow it.", name)
}

// readOnlyText is the result of a call read-only mode refuses.
func readOnlyText(name string) string {
	return fmt.Sprintf("%s was refused: the session is in read-only mode, where tools that may change things do not run. Do not retry it; tell the user, who can switch the session to workspace-write or full-access in the editor's mode picker.", name)
}

// deniedText is the result of a call the policy denies (a /call, or a model
// naming a tool it was not offered).
func deniedText(name string) string {
	return fmt.Sprintf("tool %s is denied by the permissions policy (config permissions)", name)
}
