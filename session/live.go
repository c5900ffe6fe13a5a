package session

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/lifetime"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
)

// Session is one live session of a Core: its MCP servers (a
// [bridge.Manager]), its gateway key and model, and its turns, one at a
// time. Get one from [Core.Open] or [Core.Lookup]. Its methods are safe for
// concurrent use.
type Session struct {
	core *Core
	id   string // the session's ID (ACP sessionId)
	key  string // gateway session key
	cwd  string
	// dir is the session's private directory: its children's TMPDIR, and
	// where its stdio servers start with CoreOptions.RemoteClients. End
	// removes it.
	dir string
	// mode is the session's mode (mode.go).
	mode    *modeCell
	manager *bridge.Manager
	runs    atomic.Uint64 // numbers prompt turns for run IDs
	// base is the session's life: the values of Core.Open's context without
	// its cancellation. What runs outside any caller's request derives from
	// it: End's teardown and the bridge's callbacks (a server's state or
	// tools changed, its prompts changed).
	base context.Context

	// turn is held for the whole of a turn: one turn at a time. Lock order:
	// turn before mu.
	turn sync.Mutex
	// token is the token of the last lease of the session this instance
	// held (CoreOptions.Leases: at open, then by each prompt turn), 0 when
	// unknown; a turn whose lease is not the next one catches up first
	// (lease.go). Guarded by turn.
	token int64

	// frontEnd is the client's (OpenRequest.FrontEnd), or nil.
	frontEnd FrontEnd
	// background ends, and tasks counts, the session's own work outside
	// its turns (the model's title: title.go); End ends and waits for it.
	background lifetime.Lifetime
	tasks      sync.WaitGroup
	// titleMu orders the model's title after a client's (title.go); it
	// guards clientTitle: the client set the title (Core.SetTitle).
	titleMu     sync.Mutex
	clientTitle bool

	// srvMu orders the changes to the session's servers (servers.go) and
	// guards the fields below it. Lock order: turn before srvMu; srvMu
	// before the Manager's locks.
	srvMu sync.Mutex
	// origins are where each of its servers came from, by name.
	origins map[string]Origin
	// changes are its user's changes to its servers, as stored.
	changes serverChanges
	// pending are the project's servers waiting for the user's approval
	// (project.go), asked at the next prompt.
	pending []bridge.ServerSpec
	// notes are what the user is told once the session opened
	// (OpeningNotes).
	notes []string

	// mu guards the fields below.
	mu      sync.Mutex
	model   string          // the ID of the model the session uses
	toggles gateway.Toggles // its on/off choices (SetToggles)
	// untitled: the session had no title when it opened, so its first
	// stored turn may get one from the model (title.go).
	untitled bool
	// cancelTurn and turnDone are set together while a turn runs (nil
	// otherwise); turnDone is closed when it returns.
	cancelTurn context.CancelFunc
	turnDone   chan struct{}
	ended      bool // End has begun: no turn starts any more
	endOnce    sync.Once
	// torn is closed when End's teardown is done (Core.ended).
	torn chan struct{}
}

// ID returns the session's ID.
func (s *Session) ID() string { return s.id }

// Key returns the session's gateway session key.
func (s *Session) Key() string { return s.key }

// Cwd returns the session's working directory.
func (s *Session) Cwd() string { return s.cwd }

// Manager returns the bridge.Manager of the session's MCP servers.
func (s *Session) Manager() *bridge.Manager { return s.manager }

// OpeningNotes are what the user should be told once the session opened,
// beside its servers' failures: the project's servers waiting for
// approval, a .mcp.json that cannot be read, stored servers that could not
// be restored. The slice is the caller's.
func (s *Session) OpeningNotes() []string {
	s.srvMu.Lock()
	defer s.srvMu.Unlock()
	return slices.Clone(s.notes)
}

// Servers returns the status of each of the session's MCP servers.
func (s *Session) Servers() []bridge.ServerStatus { return s.manager.Servers() }

// Tools returns the session's bridged tools.
func (s *Session) Tools() []*gateway.Tool { return s.manager.Tools() }

// Model returns the ID of the model the session's turns use.
func (s *Session) Model() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model
}

// SetModel switches the session's model: the next turn uses it, with the
// same history. The choice is stored first (Store.SetModel), so a reopened
// session continues with it. A model the gateway does not list is an error
// wrapping ErrInvalid.
func (s *Session) SetModel(ctx context.Context, model string) error {
	ids := s.core.ModelIDs()
	if !slices.Contains(ids, model) {
		return Invalidf("unknown model %q (the models are: %s)", model, strings.Join(ids, ", "))
	}
	if err := s.core.store.SetModel(ctx, s.id, model); err != nil {
		return fmt.Errorf("storing the session's model: %w", err)
	}
	s.mu.Lock()
	s.model = model
	s.mu.Unlock()
	s.core.log.Info("model switched", "session", s.id, "model", model)
	return nil
}

// Toggles returns the session's on/off choices (gateway.Toggles).
func (s *Session) Toggles() gateway.Toggles {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.toggles
}

// SetToggles sets the session's on/off choices: the next turn uses them.
// They live as long as the session: a reopened session starts with the
// configuration's.
func (s *Session) SetToggles(t gateway.Toggles) {
	s.mu.Lock()
	s.toggles = t
	s.mu.Unlock()
	s.core.log.Info("toggles set", "session", s.id, "thinking", boolText(t.Thinking), "toolSearch", boolText(t.ToolSearch))
}

// boolText is "on", "off" or "default" (nil), for logs.
func boolText(b *bool) string {
	switch {
	case b == nil:
		return "default"
	case *b:
		return "on"
	}
	return "off"
}

// PromptRequest is one turn's input.
type PromptRequest struct {
	// Content is the user's message.
	Content []gateway.Content
	// System is the system prompt.
	System string
	// Ask asks the user to permit a tool call; see gateway.SendRequest.
	Ask gateway.AskFunc
	// Emit receives the turn's events, in order, from the turn's goroutine.
	Emit func(gateway.Event)
	// Input is Content's text as the front end classified it ([Classify]),
	// so that Prompt does not read it again; nil: Prompt classifies it.
	Input *Input
}

// Prompt runs one turn through the gateway (see [Session.Turn]); with
// CoreOptions.Leases, under the session's lease (see "Leases" in the
// package doc: another holder's lease fails it at once with a *BusyError,
// a lease lost meanwhile stops it with a *LeaseLostError). It goes as the
// prompt's [Input] says (p.Input, else [Classify] of Content's text): a
// prompt command ("/<server>:<prompt> ...", see [Session.Commands]) is run
// first: its messages are the user's message, or, in direct mode or when it
// fails, the answer shown (an agent message) and the turn ends; a runner
// command or an unknown one reaches the gateway typed
// (gateway.SendRequest.Command, [Input.Gateway]); anything else, a
// front-end command included (the front end answers those, [Session.Answer]),
// is a message for the model. A turn
// whose context was cancelled (by the caller, Cancel or End) ends with
// gateway.StopCancelled. An error is ErrEnded or the gateway's (a provider
// failure, logged): the session stays usable.
func (s *Session) Prompt(ctx context.Context, p PromptRequest) (gateway.StopReason, error) {
	return s.run(ctx, true, func(ctx context.Context) (gateway.StopReason, error) {
		runID := fmt.Sprintf("%s-%d", s.id, s.runs.Add(1))
		emit := p.Emit
		if emit == nil {
			emit = func(gateway.Event) {}
		}
		if !s.askProject(ctx, p.Ask, emit) { // the project's servers, before their first use (project.go)
			return gateway.StopCancelled, nil
		}
		in := p.Input
		if in == nil {
			c := Classify(gateway.PromptText(p.Content))
			in = &c
		}
		msg := p.Content
		if in.Kind == InputPrompt { // "/<server>:<prompt> ..." (prompts.go)
			var done bool
			if msg, done = s.runPrompt(ctx, *in, emit); done {
				return gateway.StopEndTurn, nil
			}
		}
		// Resource links the session's servers serve (the user's, or a
		// prompt's) reach the model as the resources themselves
		// (bridge.Manager.ResolveLinks).
		msg = s.manager.ResolveLinks(ctx, msg)
		req := gateway.SendRequest{
			SessionKey: s.key, RunID: runID, Message: msg, Command: in.Gateway(),
			Model: s.Model(), Toggles: s.Toggles(), System: p.System, Ask: p.Ask,
			ReadOnly: s.Mode() == confine.ReadOnly,
			Tenant:   s.core.opts.Tenant, SessionID: s.id,
		}
		stop, err := s.core.gw.Send(ctx, req, emit)
		if err != nil {
			s.core.log.Warn("turn failed", "session", s.id, "run", runID, "err", err)
			return "", err
		}
		s.afterFirstTurn(gateway.PromptText(p.Content)) // title.go
		if ctx.Err() != nil {
			stop = gateway.StopCancelled
		}
		return stop, nil
	})
}

// Turn runs f as the session's turn: one turn at a time, with a context that Cancel
// and End cancel. It returns f's results, or ErrEnded when the session has
// ended. Front ends run commands they answer themselves (acp: /servers)
// through it, so those too wait for a running turn. It takes no lease
// (CoreOptions.Leases): such a command reads only this process's state of
// the session and writes nothing to the store, so it runs while another
// replica runs a turn of the session.
func (s *Session) Turn(ctx context.Context, f func(ctx context.Context) (gateway.StopReason, error)) (gateway.StopReason, error) {
	return s.run(ctx, false, f)
}

// run runs f as the session's turn (Turn); a leased one under the
// session's lease, when the Core has Leases (lease.go).
func (s *Session) run(ctx context.Context, leased bool, f func(ctx context.Context) (gateway.StopReason, error)) (gateway.StopReason, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.turn.Lock()
	defer s.turn.Unlock()
	if !s.begin(cancel) {
		return "", ErrEnded
	}
	defer s.finish()
	if leased && s.core.opts.Leases != nil {
		return s.underLease(ctx, f)
	}
	return f(ctx)
}

// begin registers the cancel func of a starting turn; it reports false when
// the session has ended.
func (s *Session) begin(cancel context.CancelFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.cancelTurn = cancel
	s.turnDone = make(chan struct{})
	return true
}

func (s *Session) finish() {
	s.mu.Lock()
	close(s.turnDone)
	s.cancelTurn, s.turnDone = nil, nil
	s.mu.Unlock()
}

// Cancel cancels the running turn, if any; the session goes on.
func (s *Session) Cancel() {
	s.mu.Lock()
	if s.cancelTurn != nil {
		s.cancelTurn()
	}
	s.mu.Unlock()
}

// End ends the session: it leaves the Core's live sessions, its running
// turn is cancelled (its tool calls get notifications/cancelled) and waited
// for, at most 5 seconds (its lease, if any, released), then its servers
// are closed (child process groups stopped), its private directory
// removed (CoreOptions.RemoteClients), its tools unregistered and its
// history cache dropped. The
// stored session stays. End is idempotent; concurrent calls wait for the
// first.
func (s *Session) End() {
	s.core.remove(s)
	s.mu.Lock()
	s.ended = true
	if s.cancelTurn != nil {
		s.cancelTurn()
	}
	done := s.turnDone
	s.mu.Unlock()
	s.endOnce.Do(func() {
		start := time.Now()
		if done != nil {
			timer := time.NewTimer(turnWait)
			select {
			case <-done:
			case <-timer.C:
			}
			timer.Stop()
		}
		s.background.End()
		s.tasks.Wait()
		ctx := s.base // End takes no context: teardown is not abandoned
		_ = s.manager.Close(ctx)
		s.removeDir()
		_ = s.core.gw.ClearExtraTools(ctx, s.key)
		s.core.history.Forget(ctx, s.key)
		s.core.log.Info("session ended", "session", s.id, "elapsed", time.Since(start))
		s.core.ended(s)
	})
}

// removeDir removes s's private directory with whatever its processes
// left in it.
func (s *Session) removeDir() {
	if s.dir == "" {
		return
	}
	if err := os.RemoveAll(s.dir); err != nil {
		s.core.log.Warn("removing the session's private directory failed", "session", s.id, "dir", s.dir, "err", err)
	}
}
