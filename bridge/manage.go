package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// ErrUnknownServer is wrapped by the errors of Remove, Reconnect and
// SetEnabled for a name that is not one of the session's servers.
var ErrUnknownServer = errors.New("no such MCP server in this session")

// ErrServerExists is wrapped by Add's error for a name already in use.
var ErrServerExists = errors.New("an MCP server of that name is already in this session")

// enabled returns the servers that are not disabled, in order. m.mu must be
// held.
func (m *Manager) enabled() []*client {
	if len(m.disabled) == 0 {
		return m.servers
	}
	out := make([]*client, 0, len(m.servers))
	for _, s := range m.servers {
		if !m.disabled[s.spec.Name] {
			out = append(out, s)
		}
	}
	return out
}

// isDisabled reports whether name is disabled (SetEnabled).
func (m *Manager) isDisabled(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.disabled[name]
}

// Add connects one more server after Connect, as Connect connects each
// (vetted by the same Options: environment, URL policy, confinement, limits,
// timeouts), and returns its status once it connected, failed or started
// waiting for the user to sign in. Its tools join the session's (Tools)
// and Options.OnToolsChanged and OnPromptsChanged are told. A server that
// fails stays in the session, failed, as at Connect. Errors: a name in use
// (ErrServerExists), an invalid spec, Add before Connect or after Close.
func (m *Manager) Add(ctx context.Context, spec ServerSpec) (ServerStatus, error) {
	if err := spec.Validate(); err != nil {
		return ServerStatus{}, err
	}
	s := m.newServer(spec)
	m.mu.Lock()
	switch {
	case m.closed || !m.connected:
		m.mu.Unlock()
		return ServerStatus{}, fmt.Errorf("bridge: Manager.Add before Connect or after Close: %w", ErrNotConnected)
	case slices.ContainsFunc(m.servers, func(o *client) bool { return o.spec.Name == spec.Name }):
		m.mu.Unlock()
		return ServerStatus{}, fmt.Errorf("%w: %q", ErrServerExists, spec.Name)
	}
	// A new slice: Servers and Prompts read the old one without the lock.
	m.servers = append(slices.Clip(m.servers), s)
	m.bg.Go(func() { s.connect(ctx, true) })
	m.mu.Unlock()
	select {
	case <-s.conn.settled:
	case <-ctx.Done():
		// The connect ends with ctx too (or goes on in the background for a
		// sign-in); the server stays, as a failed one would.
	}
	m.rebridge()
	m.promptsChanged()
	return m.status(s), nil
}

// Remove ends server name at once (its connection, and a stdio server's
// process group, as Close ends every server) and drops it and its tools
// from the session. OnToolsChanged and OnPromptsChanged are told. An
// unknown name wraps ErrUnknownServer.
func (m *Manager) Remove(name string) error {
	m.mu.Lock()
	i := slices.IndexFunc(m.servers, func(s *client) bool { return s.spec.Name == name })
	if i < 0 || m.closed {
		m.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	s := m.servers[i]
	m.servers = slices.Delete(slices.Clone(m.servers), i, i+1)
	delete(m.disabled, name)
	m.mu.Unlock()
	s.close()
	m.rebridge()
	m.promptsChanged()
	return nil
}

// Reconnect ends server name's connection (and a stdio server's process
// group) and connects it again from its spec, as a new server in the same
// place, and returns its status as Add does. Its tools keep their names.
// An unknown name wraps ErrUnknownServer.
func (m *Manager) Reconnect(ctx context.Context, name string) (ServerStatus, error) {
	return m.replace(ctx, name, nil)
}

// Replace ends server spec.Name as Reconnect does and connects spec in its
// place; an unknown name wraps ErrUnknownServer.
func (m *Manager) Replace(ctx context.Context, spec ServerSpec) (ServerStatus, error) {
	if err := spec.Validate(); err != nil {
		return ServerStatus{}, err
	}
	return m.replace(ctx, spec.Name, &spec)
}

func (m *Manager) replace(ctx context.Context, name string, spec *ServerSpec) (ServerStatus, error) {
	m.mu.Lock()
	i := slices.IndexFunc(m.servers, func(s *client) bool { return s.spec.Name == name })
	if i < 0 || m.closed {
		m.mu.Unlock()
		return ServerStatus{}, fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	old := m.servers[i]
	next := old.spec
	if spec != nil {
		next = *spec
	}
	s := m.newServer(next)
	servers := slices.Clone(m.servers)
	servers[i] = s
	m.servers = servers
	m.mu.Unlock()
	// The old one ends first: a stdio server's process is gone before its
	// successor starts, and a server that holds a lock or a port gives it
	// back.
	old.close()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ServerStatus{}, ErrNotConnected
	}
	m.bg.Go(func() { s.connect(ctx, true) })
	m.mu.Unlock()
	select {
	case <-s.conn.settled:
	case <-ctx.Done():
	}
	m.rebridge()
	m.promptsChanged()
	return m.status(s), nil
}

// SetEnabled takes server name's tools and prompts out of the session
// (enabled false) or brings them back (true); the server keeps running
// either way. OnToolsChanged and OnPromptsChanged are told when it
// changed. An unknown name wraps ErrUnknownServer.
func (m *Manager) SetEnabled(name string, enabled bool) error {
	m.mu.Lock()
	if m.closed || !slices.ContainsFunc(m.servers, func(s *client) bool { return s.spec.Name == name }) {
		m.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	if m.disabled[name] == !enabled {
		m.mu.Unlock()
		return nil
	}
	if enabled {
		delete(m.disabled, name)
	} else {
		if m.disabled == nil {
			m.disabled = make(map[string]bool)
		}
		m.disabled[name] = true
	}
	m.mu.Unlock()
	m.rebridge()
	m.promptsChanged()
	return nil
}

// Status returns the status of server name, as Servers shows it, and
// whether there is one.
func (m *Manager) Status(name string) (ServerStatus, bool) {
	if s := m.server(name); s != nil {
		return m.status(s), true
	}
	return ServerStatus{}, false
}

// Spec returns the spec of server name, and whether there is one.
func (m *Manager) Spec(name string) (ServerSpec, bool) {
	if s := m.server(name); s != nil {
		return s.spec, true
	}
	return ServerSpec{}, false
}

// newServer returns a server of spec wired to m's callbacks.
func (m *Manager) newServer(spec ServerSpec) *client {
	s := newServer(spec, &m.opts)
	s.onToolsChanged = m.rebridge
	s.onStateChanged = m.stateChanged
	s.onLinkChanged = m.linkChanged
	s.onPromptsChanged = m.promptsChanged
	return s
}

// status returns s's status with its bridged and left-out tools.
func (m *Manager) status(s *client) ServerStatus {
	m.mu.Lock()
	count, lo, disabled := m.counts[s.spec.Name], m.leftOut[s.spec.Name], m.disabled[s.spec.Name]
	m.mu.Unlock()
	st := s.status(count)
	st.LeftOutCount, st.LeftOut, st.Disabled = lo.count, lo.examples, disabled
	return st
}
