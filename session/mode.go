package session

import (
	"context"
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
