package session

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
	"github.com/seed02d3eb6b/acp-agent/session/store"
)

// modeCell holds a session's mode, read by its processes as they start
// (bridge.Confine.Mode) and set by Session.SetMode. Safe for concurrent use.
type modeCell struct{ v atomic.Value }

func (c *modeCell) load() confine.Mode {
	m, _ := c.v.Load().(confine.Mode)
	if m == "" {
		return confine.FullAccess
	}
	return m
}

func (c *modeCell) store(m confine.Mode) { c.v.Store(m) }

// modeOf returns the mode of the stored session rec: its own choice, else
// the default.
func (c *Core) modeOf(rec store.Record) confine.Mode {
	if m, err := confine.ParseMode(rec.Mode); err == nil {
		return m
	}
	if c.opts.DefaultMode != "" {
		return c.opts.DefaultMode
	}
	return confine.FullAccess
}

// Mode returns the session's mode.
func (s *Session) Mode() confine.Mode { return s.mode.load() }

// SetMode switches the session's mode: the processes it starts from now on
// (stdio servers started again, run_command) run under m, and read-only
// refuses the tools that may change things from the next tool call on. The
// choice is stored first (Store.SetMode), so a reopened session keeps it.
// It returns the stdio servers still running under another mode, which
// keep it until they are started again (a reconnect, or the session's next
// load). An unknown mode wraps ErrInvalid.
func (s *Session) SetMode(ctx context.Context, m confine.Mode) (stale []string, err error) {
	if _, err := confine.ParseMode(string(m)); err != nil {
		return nil, Invalidf("%v", err)
	}
	if err := s.core.store.SetMode(ctx, s.id, string(m)); err != nil {
		return nil, err
	}
	s.mode.store(m)
	s.core.log.Info("mode set", "session", s.id, "mode", m)
	return s.StaleServers(), nil
}

// support returns what the kernel enforces for the core's sessions.
func (c *Core) support() confine.Support {
	if cf := c.opts.Bridge.Confine; cf != nil && cf.Support != nil {
		return *cf.Support
	}
	return confine.Supported()
}

// Support returns what the kernel enforces for the session's processes.
func (s *Session) Support() confine.Support { return s.core.support() }

// require reports whether config sandbox.require is on.
func (c *Core) require() bool {
	cf := c.opts.Bridge.Confine
	return cf != nil && cf.Require
}

// Enforcement says what the kernel enforces of the session's mode
// (confine.Support.Describe), and whether it enforces all of it (true for
// full access, which confines nothing).
func (s *Session) Enforcement() (text string, full bool) {
	m, sup := s.Mode(), s.core.support()
	text = sup.Describe(m)
	if m == confine.FullAccess {
		return text, true
	}
	if s.core.require() && sup.ABI < 1 {
		text = fmt.Sprintf("%s is not enforced: %s. sandbox.require is on: no command or MCP server process starts.", m.Name(), sup.Kernel())
	}
	r, _ := confine.For(m, confine.Workspace{Cwd: s.cwd}, confine.Server{}, "")
	return text, len(sup.Gaps(r)) == 0
}

// StatusText renders /status: the session's mode and what the kernel
// enforces of it, sandbox.require, and each stdio server with the mode its
// process runs under.
func (s *Session) StatusText() string {
	var b strings.Builder
	m := s.Mode()
	text, _ := s.Enforcement()
	fmt.Fprintf(&b, "Mode: %s (%s). %s\n%s\n", m.Name(), m, m.Description(), text)
	if s.core.require() {
		b.WriteString("sandbox.require is on: a process the kernel cannot confine in full does not start.\n")
	}
	var lines []string
	for _, st := range s.manager.Servers() {
		if st.Transport != bridge.TransportStdio {
			continue
		}
		switch {
		case st.Mode == "":
			lines = append(lines, fmt.Sprintf("- %s: no process (%s)", st.Name, st.State))
		case st.Mode != m:
			lines = append(lines, fmt.Sprintf("- %s: runs under %s; it keeps it until it is started again (the session's next load)", st.Name, st.Mode))
		default:
			lines = append(lines, fmt.Sprintf("- %s: runs under %s", st.Name, st.Mode))
		}
	}
	if len(lines) > 0 {
		b.WriteString("Stdio MCP servers:\n" + strings.Join(lines, "\n") + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ModeChangedText is what the user is told after the session's mode became
// m: what it means when it is full access, and the stdio servers (stale)
// that keep the mode they started under until they are started again.
func ModeChangedText(m confine.Mode, sup confine.Support, stale []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Mode: %s.", m.Name())
	if m == confine.FullAccess {
		b.WriteString(" " + sup.Describe(m))
	}
	if len(stale) > 0 {
		fmt.Fprintf(&b, " These MCP servers keep the mode they started under until they are started again (the session's next load): %s.", strings.Join(stale, ", "))
	}
	return b.String()
}

// StaleServers returns the names of the session's stdio servers whose
// process started under a mode other than the session's current one.
func (s *Session) StaleServers() []string {
	cur := s.Mode()
	var out []string
	for _, st := range s.manager.Servers() {
		if st.Transport == bridge.TransportStdio && st.Mode != "" && st.Mode != cur && st.State != bridge.StateFailed {
			out = append(out, st.Name)
		}
	}
	return out
}
