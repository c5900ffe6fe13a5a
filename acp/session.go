package acp

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// liveSession is one live ACP session.
type liveSession struct {
	id      string // ACP sessionId
	key     string // gateway session key
	cwd     string
	manager *bridge.Manager
	runs    atomic.Uint64 // numbers prompt turns for run IDs
	// announced is closed once the notifications that follow the session's
	// opening (failed servers, available commands) have been sent: a prompt
	// waits for it, so they reach the client before any turn's updates.
	announced chan struct{}

	turn sync.Mutex // held for the whole of a prompt turn: one turn at a time

	mu           sync.Mutex
	model        string             // the ID of the model the session uses
	cancelPrompt context.CancelFunc // cancels the running turn, or nil
	turnDone     chan struct{}      // closed when the running turn returns, or nil
	ended        bool
	endOnce      sync.Once
}

// announceWait bounds how long a prompt waits for its session's opening
// notifications (see liveSession.announced).
const announceWait = postSessionTimeout + 5*time.Second

// turnWait bounds how long ending a session waits for its cancelled turn.
const turnWait = 5 * time.Second

func (s *liveSession) setModel(id string) {
	s.mu.Lock()
	s.model = id
	s.mu.Unlock()
}

func (s *liveSession) currentModel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model
}

// begin registers the cancel func of a starting turn; it reports false when
// the session has ended.
func (s *liveSession) begin(cancel context.CancelFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.cancelPrompt = cancel
	s.turnDone = make(chan struct{})
	return true
}

func (s *liveSession) finish() {
	s.mu.Lock()
	close(s.turnDone)
	s.cancelPrompt, s.turnDone = nil, nil
	s.mu.Unlock()
}

// end marks the session ended, cancels its running turn, and runs teardown
// once. The turn goes first: its tool calls are cancelled (each server gets
// notifications/cancelled) and it returns, so the prompt is answered
// cancelled before the servers are stopped; end waits at most turnWait for
// it, then tears down whatever the turn does. Concurrent calls wait for the
// first.
func (s *liveSession) end(teardown func()) {
	s.mu.Lock()
	s.ended = true
	if s.cancelPrompt != nil {
		s.cancelPrompt()
	}
	done := s.turnDone
	s.mu.Unlock()
	s.endOnce.Do(func() {
		if done != nil {
			timer := time.NewTimer(turnWait)
			select {
			case <-done:
			case <-timer.C:
			}
			timer.Stop()
		}
		teardown()
	})
}

// Prompt implements acpsdk.Agent
// (https://agentclientprotocol.com/protocol/prompt-turn). The turn runs in
// the gateway; its events stream back as session/update notifications. ctx
// is cancelled by acp-go-sdk on session/cancel, and by session/close.
func (a *Agent) Prompt(ctx context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	s, err := a.lookup(p.SessionId)
	if err != nil {
		return acpsdk.PromptResponse{}, toRequestError(err)
	}
	if err := checkPromptMedia(p.Prompt, a.opts.Bridge.Limits.MaxMedia); err != nil {
		return acpsdk.PromptResponse{}, toRequestError(err)
	}
	select {
	case <-s.announced:
	case <-ctx.Done(): // the turn below ends at once, cancelled
	case <-time.After(announceWait):
		a.log.Warn("prompt: the session's opening notifications are still not sent; going on", "session", s.id)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.turn.Lock()
	defer s.turn.Unlock()
	if !s.begin(cancel) {
		return acpsdk.PromptResponse{}, toRequestError(unknownSession(p.SessionId, "the session was closed"))
	}
	defer s.finish()

	content := make([]gateway.Content, 0, len(p.Prompt))
	for _, b := range p.Prompt {
		content = append(content, fromACPContent(b))
	}
	// Updates are sent even after cancellation: the final tool_call_update of
	// a cancelled call must still reach the client.
	notifyCtx := context.WithoutCancel(ctx)
	send := func(u acpsdk.SessionUpdate) { a.notify(notifyCtx, s.id, u) }

	if answer, ok := frontEndCommand(s, gateway.PromptText(content)); ok {
		send(acpsdk.UpdateAgentMessageText(answer))
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
	}

	runID := fmt.Sprintf("%s-%d", s.id, s.runs.Add(1))
	req := gateway.SendRequest{
		SessionKey: s.key, RunID: runID, Message: content,
		Model: s.currentModel(), System: systemPrompt(s.cwd), Ask: a.askFunc(s.id),
	}
	stop, err := a.gw.Send(ctx, req, func(ev gateway.Event) {
		if u, ok := sessionUpdate(ev); ok {
			send(u)
		}
	})
	if err != nil {
		// The provider failed: say so in the conversation and end the turn;
		// the session stays usable.
		a.log.Warn("turn failed", "session", s.id, "run", runID, "err", err)
		send(acpsdk.UpdateAgentMessageText(fmt.Sprintf("\nThe turn failed: %v\n", err)))
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
	}
	if ctx.Err() != nil {
		stop = gateway.StopCancelled
	}
	return acpsdk.PromptResponse{StopReason: acpsdk.StopReason(stop)}, nil
}

// systemPrompt tells the model who it is and where it works.
func systemPrompt(cwd string) string {
	return "You are acp-agent, a coding assistant working inside the user's editor through the Agent Client Protocol. " +
		"The session's working directory is " + cwd + ". " +
		"Use the tools you are given (MCP servers the editor connected) when they help; say briefly what you are doing. " +
		"If a tool call fails or the user declines it, explain and adapt instead of retrying the same call."
}
