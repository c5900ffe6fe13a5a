package session

// A running session's servers changed by its user (/mcp, and a front end's
// set_mcp_servers), those changes kept with the session and applied again
// when it is reopened.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
	"github.com/seed02d3eb6b/acp-agent/sandbox/mcppolicy"
)

// Origin says where one of a session's servers came from.
type Origin string

// The origins of a session's servers, in the order a name clash is
// settled: a later one replaces an earlier one of the same name.
const (
	// OriginAgent: the agent's own in-process servers (CoreOptions.InProcess).
	OriginAgent Origin = "agent"
	// OriginConfig: the user's config (CoreOptions.DefaultServers).
	OriginConfig Origin = "config"
	// OriginProject: the project's .mcp.json in the session's cwd
	// (CoreOptions.ProjectApprovals), once the user approved it.
	OriginProject Origin = "project"
	// OriginClient: the client's own list (ACP mcpServers).
	OriginClient Origin = "client"
	// OriginAdded: added in the session by its user (/mcp add).
	OriginAdded Origin = "added"
)

// serverChanges are what a session's user changed of its servers, kept as
// store.Record.ServerChanges (this JSON) and applied on every reopen after
// the servers of the other origins are merged: Removed names leave,
// Added servers join (replacing one of the same name), Disabled names keep
// running with their tools out of the session.
type serverChanges struct {
	Added    []storedServer `json:"added,omitempty"`
	Removed  []string       `json:"removed,omitempty"`
	Disabled []string       `json:"disabled,omitempty"`
}

// storedServer is a server added in a session, as the user gave it:
// ${VAR} references unexpanded, and literal env and header values
// withheld (never stored).
type storedServer struct {
	Name      string       `json:"name"`
	Transport string       `json:"transport"`
	Command   string       `json:"command,omitempty"`
	Args      []string     `json:"args,omitempty"`
	Env       []storedPair `json:"env,omitempty"`
	URL       string       `json:"url,omitempty"`
	Headers   []storedPair `json:"headers,omitempty"`
	// Withheld names what was given with a literal value that is not
	// stored: "env NAME", "header NAME".
	Withheld []string `json:"withheld,omitempty"`
}

type storedPair struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// varRef matches ${NAME} and ${NAME:-default}.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// storable returns spec as stored: env and header values kept only where
// they hold a ${VAR} reference.
func storable(spec bridge.ServerSpec) storedServer {
	out := storedServer{Name: spec.Name, Transport: string(spec.Transport), Command: spec.Command, Args: slices.Clone(spec.Args), URL: spec.URL}
	for _, v := range spec.Env {
		if varRef.MatchString(v.Value) {
			out.Env = append(out.Env, storedPair{v.Name, v.Value})
		} else {
			out.Withheld = append(out.Withheld, "env "+v.Name)
		}
	}
	for _, h := range spec.Headers {
		if varRef.MatchString(h.Value) {
			out.Headers = append(out.Headers, storedPair{h.Name, h.Value})
		} else {
			out.Withheld = append(out.Withheld, "header "+h.Name)
		}
	}
	return out
}

// spec returns the stored server as a spec with its references unexpanded.
func (s storedServer) spec() bridge.ServerSpec {
	spec := bridge.ServerSpec{Name: s.Name, Transport: bridge.Transport(s.Transport), Command: s.Command, Args: slices.Clone(s.Args), URL: s.URL}
	for _, v := range s.Env {
		spec.Env = append(spec.Env, environ.Var{Name: v.Name, Value: v.Value})
	}
	for _, h := range s.Headers {
		spec.Headers = append(spec.Headers, bridge.Header{Name: h.Name, Value: h.Value})
	}
	return spec
}

// readChanges decodes stored changes; damaged ones are logged and dropped.
func (c *Core) readChanges(id string, b []byte) serverChanges {
	var ch serverChanges
	if len(b) == 0 {
		return ch
	}
	if err := json.Unmarshal(b, &ch); err != nil {
		c.log.Warn("the session's stored server changes cannot be read: dropped", "session", id, "err", err)
		return serverChanges{}
	}
	return ch
}

// UnsetVarError is a ${VAR} reference to a variable the agent's
// environment does not have (or may not give: CoreOptions.LookupEnv),
// without a default.
type UnsetVarError struct {
	Server, Field, Var string
}

func (e *UnsetVarError) Error() string {
	return fmt.Sprintf("server %q %s: ${%s} is not set in the agent's environment (write ${%s:-default} for a default)", e.Server, e.Field, e.Var, e.Var)
}

// expand returns spec with its ${VAR} and ${VAR:-default} references
// replaced from lookup, in command, args, env and header values and url;
// a reference to an unset variable without a default is an
// *UnsetVarError naming the field.
func expand(spec bridge.ServerSpec, lookup func(string) (string, bool)) (bridge.ServerSpec, error) {
	var err error
	sub := func(field, s string) string {
		if err != nil || !strings.Contains(s, "${") {
			return s
		}
		return varRef.ReplaceAllStringFunc(s, func(ref string) string {
			m := varRef.FindStringSubmatch(ref)
			if v, ok := lookup(m[1]); ok {
				return v
			}
			if m[2] != "" {
				return m[3]
			}
			if err == nil {
				err = &UnsetVarError{Server: spec.Name, Field: field, Var: m[1]}
			}
			return ""
		})
	}
	spec.Command = sub("command", spec.Command)
	spec.Args = slices.Clone(spec.Args)
	for i := range spec.Args {
		spec.Args[i] = sub(fmt.Sprintf("args[%d]", i), spec.Args[i])
	}
	spec.Env = slices.Clone(spec.Env)
	for i := range spec.Env {
		spec.Env[i].Value = sub("env "+spec.Env[i].Name, spec.Env[i].Value)
	}
	spec.URL = sub("url", spec.URL)
	spec.Headers = slices.Clone(spec.Headers)
	for i := range spec.Headers {
		spec.Headers[i].Value = sub("header "+spec.Headers[i].Name, spec.Headers[i].Value)
	}
	return spec, err
}

// lookupEnv is CoreOptions.LookupEnv, else os.LookupEnv.
func (c *Core) lookupEnv(name string) (string, bool) {
	if c.opts.LookupEnv != nil {
		return c.opts.LookupEnv(name)
	}
	return os.LookupEnv(name)
}

// ServerChange is the outcome of one change of a session's servers.
type ServerChange struct {
	// Name is the server's name.
	Name string
	// Action is "added", "removed", "reconnected", "replaced", "enabled",
	// "disabled" or "unchanged".
	Action string
	// Status is the server's status after the change (zero for removed).
	Status bridge.ServerStatus
	// Note, if set, is what the user should know of the change (values not
	// stored with the session).
	Note string
	// Err is why the change was refused; the session's servers are then
	// as they were.
	Err error
}

// AddServer adds spec to the session (OriginAdded), vetted as a server
// given at open (name, per-server settings, quota, and the bridge's
// environment, URL policy, confinement and limits when it connects, its
// ${VAR} references expanded), connects it and returns once it has
// connected or failed; its tools are in the session's next turn. The
// change is stored with the session. A refusal (invalid spec, a name in
// use or reserved, the quota) is ServerChange.Err and changes nothing; a
// server that fails to connect stays, failed, as at open.
func (s *Session) AddServer(ctx context.Context, spec bridge.ServerSpec) ServerChange {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	return s.add(ctx, spec, OriginAdded)
}

func (s *Session) add(ctx context.Context, spec bridge.ServerSpec, origin Origin) ServerChange {
	ch := ServerChange{Name: spec.Name, Action: "added"}
	if err := spec.Validate(); err != nil {
		ch.Err = err
		return ch
	}
	if slices.ContainsFunc(s.core.opts.InProcess, func(p InProcessServer) bool { return p.Name == spec.Name }) {
		ch.Err = &NameTakenError{Name: spec.Name}
		return ch
	}
	if _, ok := s.manager.Spec(spec.Name); ok {
		ch.Err = fmt.Errorf("server %q is already in this session: /mcp remove %s first, or /mcp reconnect %s", spec.Name, spec.Name, spec.Name)
		return ch
	}
	if limit := s.core.opts.Bridge.Limits.WithDefaults().ServersPerSession; s.userServers() >= limit {
		ch.Err = Invalidf("server %q: the session has %d servers, the limit per session (config limits.serversPerSession)", spec.Name, limit)
		return ch
	}
	run, err := expand(s.core.settle(spec), s.core.lookupEnv)
	if err != nil {
		ch.Err = err
		return ch
	}
	st, err := s.manager.Add(ctx, run)
	if err != nil {
		ch.Err = err
		return ch
	}
	if st.State == bridge.StateFailed && errors.Is(st.Err, mcppolicy.ErrRefused) {
		// The managed policy's answer does not change: a refusal, not a
		// failed server kept in the session.
		_ = s.manager.Remove(spec.Name)
		ch.Err = st.Err
		return ch
	}
	ch.Status = st
	s.origins[spec.Name] = origin
	if origin == OriginAdded {
		stored := storable(spec)
		if len(stored.Withheld) > 0 {
			ch.Note = fmt.Sprintf("Not stored with the session: the value of %s. After the session is loaded again, add the server again, or write the value as ${VAR} to read it from the agent's environment.", strings.Join(stored.Withheld, ", "))
		}
		s.changes.Added = append(slices.DeleteFunc(s.changes.Added, func(a storedServer) bool { return a.Name == spec.Name }), stored)
		s.changes.Removed = slices.DeleteFunc(s.changes.Removed, func(n string) bool { return n == spec.Name })
		s.saveChanges(ctx)
	}
	return ch
}

// userServers counts the session's servers other than the agent's own.
func (s *Session) userServers() int {
	n := 0
	for _, st := range s.manager.Servers() {
		if s.origins[st.Name] != OriginAgent {
			n++
		}
	}
	return n
}

// RemoveServer ends server name at once (its connection and, for a stdio
// server, its process group) and takes it and its tools out of the
// session; the change is stored, so a reopen leaves it out even when the
// client or the config gives it again. The agent's own servers cannot be
// removed (disable them instead). An unknown name wraps bridge.ErrUnknownServer.
func (s *Session) RemoveServer(ctx context.Context, name string) error {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if s.origins[name] == OriginAgent {
		return fmt.Errorf("server %q is the agent's own: /mcp disable %s takes its tools out of the session", name, name)
	}
	origin := s.origins[name]
	if err := s.drop(name); err != nil {
		return err
	}
	if origin != OriginAdded && !slices.Contains(s.changes.Removed, name) {
		s.changes.Removed = append(s.changes.Removed, name)
	}
	s.saveChanges(ctx)
	return nil
}

// drop ends server name and forgets it: its origin, and its place among
// the added and the disabled servers. s.srvMu must be held.
func (s *Session) drop(name string) error {
	if err := s.manager.Remove(name); err != nil {
		return err
	}
	delete(s.origins, name)
	s.changes.Added = slices.DeleteFunc(s.changes.Added, func(a storedServer) bool { return a.Name == name })
	s.changes.Disabled = slices.DeleteFunc(s.changes.Disabled, func(n string) bool { return n == name })
	return nil
}

// ReconnectServer ends server name's connection (and process) and
// connects it again, for a server that hung or lost its state; it returns
// the server's status once connected or failed. An unknown name wraps
// bridge.ErrUnknownServer.
func (s *Session) ReconnectServer(ctx context.Context, name string) (bridge.ServerStatus, error) {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	return s.manager.Reconnect(ctx, name)
}

// SetServerEnabled takes server name's tools and prompts out of the
// session (false) or brings them back (true); the server keeps running.
// The change is stored. An unknown name wraps bridge.ErrUnknownServer.
func (s *Session) SetServerEnabled(ctx context.Context, name string, enabled bool) error {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	if err := s.manager.SetEnabled(name, enabled); err != nil {
		return err
	}
	s.changes.Disabled = slices.DeleteFunc(s.changes.Disabled, func(n string) bool { return n == name })
	if !enabled {
		s.changes.Disabled = append(s.changes.Disabled, name)
	}
	s.saveChanges(ctx)
	return nil
}

// SetServers replaces the servers the client gave the session (and those
// its user added) with specs, as a client's settings changed (ACP's
// proposed session/update_servers): a server not in specs is removed, a
// new one added, one whose spec changed replaced, one unchanged left
// running. The agent's own and the config's servers stay. It returns one
// ServerChange per server touched or kept, in specs order, then the
// removed ones. Names must be unique in specs (else ErrInvalid, and
// nothing changes). The client's servers are not stored (it gives them
// again on load); servers added by /mcp that it leaves out are forgotten.
func (s *Session) SetServers(ctx context.Context, specs []bridge.ServerSpec) ([]ServerChange, error) {
	seen := make(map[string]bool, len(specs))
	for _, sp := range specs {
		if seen[sp.Name] {
			return nil, Invalidf("mcpServers: server %q is given twice", sp.Name)
		}
		seen[sp.Name] = true
	}
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	var out, removed []ServerChange
	for _, st := range s.manager.Servers() {
		if o := s.origins[st.Name]; o == OriginAgent || o == OriginConfig || seen[st.Name] {
			continue
		}
		removed = append(removed, ServerChange{Name: st.Name, Action: "removed", Err: s.drop(st.Name)})
	}
	for _, sp := range specs {
		old, ok := s.manager.Spec(sp.Name)
		if !ok {
			out = append(out, s.add(ctx, sp, OriginClient))
			continue
		}
		ch := ServerChange{Name: sp.Name, Action: "unchanged"}
		run, err := expand(s.core.settle(sp), s.core.lookupEnv)
		switch {
		case err != nil:
			ch.Err = err
		case s.origins[sp.Name] == OriginAgent:
			ch.Err = &NameTakenError{Name: sp.Name}
		case sameSpec(old, run):
			ch.Status, _ = s.manager.Status(sp.Name)
		default:
			ch.Action = "replaced"
			if ch.Status, ch.Err = s.manager.Replace(ctx, run); ch.Err == nil {
				s.origins[sp.Name] = OriginClient
				s.changes.Added = slices.DeleteFunc(s.changes.Added, func(a storedServer) bool { return a.Name == sp.Name })
			}
		}
		out = append(out, ch)
	}
	s.saveChanges(ctx)
	return append(out, removed...), nil
}

// sameSpec reports whether a and b would start the same server.
func sameSpec(a, b bridge.ServerSpec) bool {
	return a.Transport == b.Transport && a.Command == b.Command && slices.Equal(a.Args, b.Args) &&
		slices.Equal(a.Env, b.Env) && a.URL == b.URL && slices.Equal(a.Headers, b.Headers) && a.ServerID == b.ServerID
}

// saveChanges stores the session's server changes; a failure is logged
// (the live session has them; a reopen would not).
func (s *Session) saveChanges(ctx context.Context) {
	var b []byte
	if len(s.changes.Added)+len(s.changes.Removed)+len(s.changes.Disabled) > 0 {
		var err error
		if b, err = json.Marshal(s.changes); err != nil {
			s.core.log.Warn("encoding the session's server changes failed", "session", s.id, "err", err)
			return
		}
	}
	if err := s.core.store.SetServerChanges(context.WithoutCancel(ctx), s.id, b); err != nil {
		s.core.log.Warn("storing the session's server changes failed", "session", s.id, "err", err)
	}
}

// settle applies the per-server settings of spec's name (CoreOptions.ServerSettings).
func (c *Core) settle(spec bridge.ServerSpec) bridge.ServerSpec {
	if set, ok := c.opts.ServerSettings[spec.Name]; ok {
		spec.Timeouts = spec.Timeouts.Or(set.Timeouts)
		if spec.CallsPerMinute == 0 {
			spec.CallsPerMinute = set.CallsPerMinute
		}
		if spec.OAuth.ID == "" {
			spec.OAuth = set.OAuth
		}
		spec.Sandbox = set.Sandbox
	}
	return spec
}
