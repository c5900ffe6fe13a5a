package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/internal/telemetry"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// announceWait bounds how long a prompt waits for its session's opening
// notifications (Agent.open).
const announceWait = 15 * time.Second

// promptEntry is session/prompt's entry in the dispatch table: typed, and a
// prompt whose params do not decode still spends its place in the input
// (conn.claimPrompt), so the next prompt of its session gets its own.
func (a *Agent) promptEntry(ctx context.Context, raw json.RawMessage) (any, error) {
	var p acpsdk.PromptRequest
	if err := decodeParams(raw, &p); err != nil {
		var id struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(raw, &id)
		a.conn.claimPrompt(id.SessionID)
		return nil, err
	}
	return a.prompt(ctx, p)
}

// prompt serves session/prompt, traced: the turn is a span
// (telemetry.StartTurn), a child of the trace context in the request's
// _meta (traceparent, tracestate) when the client sends one; the model
// requests and tool calls of the turn are its children.
func (a *Agent) prompt(ctx context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	ctx, span := telemetry.StartTurn(telemetry.Extract(ctx, p.Meta), string(p.SessionId))
	resp, err := a.promptTurn(ctx, p)
	telemetry.EndTurn(span, string(resp.StopReason), err)
	return resp, err
}

// promptTurn serves session/prompt
// (https://agentclientprotocol.com/protocol/prompt-turn). The turn runs in
// the gateway through the session core (session.Session.Prompt, one turn at
// a time) once the client has the session's opening notifications; its
// events stream back as session/update notifications. Its context is
// cancelled by session/cancel, by a newer prompt of the session (as
// acp-go-sdk's agent side does), and by session/close.
func (a *Agent) promptTurn(ctx context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	ordinal := a.conn.claimPrompt(string(p.SessionId))
	s, err := a.lookup(p.SessionId)
	if err != nil {
		return acpsdk.PromptResponse{}, toRequestError(err)
	}
	// The session's announcements (announce.go): the prompt counts as
	// answered until ctx ends, once the response is written (conn.go).
	n := a.announcer(s.ID())
	turn := n.answer(ctx)
	ctx, end := a.conn.startPrompt(ctx, s.ID(), ordinal)
	defer end()
	n.waitAnnounced(ctx)
	if err := checkPromptMedia(p.Prompt, a.core.Limits().MaxMedia); err != nil {
		return acpsdk.PromptResponse{}, toRequestError(err)
	}
	content := make([]gateway.Content, 0, len(p.Prompt))
	for _, b := range p.Prompt {
		content = append(content, fromACPContent(b))
	}
	// Updates are sent even after cancellation (turnUpdates.ctx).
	send := turn.send

	var stop gateway.StopReason
	var usage *gateway.UsageReport // the turn's, if it asked a model
	stored := false                // the turn went to the store: its session_info_update follows
	// The prompt is classified once (session.Classify); the session core and
	// the runner route on the result, never reading the text again.
	in := session.Classify(gateway.PromptText(content))
	if in.Kind == session.InputFrontEnd {
		stop, err = s.Turn(ctx, func(ctx context.Context) (gateway.StopReason, error) {
			send(sdkUpdate(acpsdk.UpdateAgentMessageText(s.Answer(ctx, in)))) // after any running turn
			if ctx.Err() != nil {
				return gateway.StopCancelled, nil
			}
			return gateway.StopEndTurn, nil
		})
	} else {
		stored = true
		stop, err = s.Prompt(ctx, session.PromptRequest{
			Content: content, Input: &in, System: systemPrompt(s.Cwd()), Ask: a.askFunc(s.ID()),
			Emit: func(ev gateway.Event) {
				if ev.Kind == gateway.EventSubagent {
					for _, u := range subagentUpdates(s.ID(), ev.Subagent, a.subagentsOn()) {
						send(u)
					}
					return
				}
				if ev.Kind == gateway.EventUsage {
					usage = ev.Usage
					turn.hold(sessionUpdates(ev)...) // the last update of the turn: flush
					return
				}
				for _, u := range a.eventUpdates(ev) {
					send(u)
				}
			},
		})
	}
	switch {
	case errors.Is(err, session.ErrEnded):
		return acpsdk.PromptResponse{}, toRequestError(unknownSession(p.SessionId, "the session was closed"))
	case errors.Is(err, gateway.ErrTurnNotStored):
		// The turn ran but is not part of the conversation: the prompt
		// fails, saying why.
		turn.flush()
		return acpsdk.PromptResponse{}, toRequestError(err)
	case err != nil:
		// The provider failed: say so in the conversation and end the turn;
		// the session stays usable.
		send(sdkUpdate(acpsdk.UpdateAgentMessageText(fmt.Sprintf("\nThe turn failed: %s\n", gateway.ErrorText(err)))))
		stop = gateway.StopEndTurn
	}
	if stored {
		if u, ok := a.sessionInfo(turn.ctx, n); ok {
			send(sdkUpdate(u))
		}
	}
	turn.flush()
	resp := acpsdk.PromptResponse{StopReason: acpsdk.StopReason(stop)}
	if usage != nil { // a failed turn's requests count too
		resp.Usage = turnUsage(usage.Turn)
	}
	return resp, nil
}

// systemPrompt tells the model who it is and where it works.
func systemPrompt(cwd string) string {
	return "You are acp-agent, a coding assistant working inside the user's editor through the Agent Client Protocol. " +
		"The session's working directory is " + cwd + ". " +
		"Use the tools you are given (MCP servers the editor connected) when they help; say briefly what you are doing. " +
		"If a tool call fails or the user declines it, explain and adapt instead of retrying the same call."
}
