//lint:file-ignore SA1019 sampling is deprecated only from protocol 2026-07-28; the bridge negotiates 2025-11-25.

package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// sampleShown bounds the text of one sampling message shown to the user
// in the permission request, in bytes.
const sampleShown = 1000

// sampler returns the bridge.Sampler of session s: its servers'
// sampling/createMessage is answered by the session's current model, once
// the user has allowed it through ask (ACP session/request_permission:
// allow once, allow always for that server for the rest of the live
// session, reject). It returns nil (no sampling advertised) when the
// gateway cannot sample (it is no gateway.Sampler), ask is nil (a front end with
// no user to ask: the MCP server mode) or the session's model cannot
// sample (direct mode). A session that switches to direct mode later
// refuses the requests with an error saying so.
func (c *Core) sampler(s *Session, ask gateway.AskFunc) *bridge.Sampler {
	gs, ok := c.gw.(gateway.Sampler)
	if !ok || ask == nil || !gs.CanSample(s.Model()) {
		return nil
	}
	var mu sync.Mutex
	always := make(map[string]bool) // server names the user allowed always
	return &bridge.Sampler{Sample: func(ctx context.Context, r bridge.SampleRequest) (*mcp.CreateMessageResult, error) {
		model := s.Model()
		if !gs.CanSample(model) {
			return nil, fmt.Errorf("acp-agent: sampling is not available: the session now uses %q, which is no model (direct mode)", model)
		}
		msgs, err := samplingMessages(r)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		allowed := always[r.Server]
		mu.Unlock()
		if !allowed {
			out, err := ask(ctx, samplingPermission(r, model))
			if err != nil {
				return nil, fmt.Errorf("acp-agent: asking the user to allow sampling for MCP server %q: %w", r.Server, err)
			}
			switch out {
			case gateway.PermissionAllowOnce:
			case gateway.PermissionAllowAlways:
				mu.Lock()
				always[r.Server] = true
				mu.Unlock()
			case gateway.PermissionReject:
				c.log.Info("the user refused a sampling request", "session", s.id, "server", r.Server)
				return nil, fmt.Errorf("acp-agent: the user refused the sampling request of MCP server %q", r.Server)
			case gateway.PermissionUnavailable:
				return nil, fmt.Errorf("acp-agent: the sampling request of MCP server %q was not allowed: the client cannot ask its user", r.Server)
			default:
				return nil, fmt.Errorf("acp-agent: the sampling request of MCP server %q was not allowed: the user did not answer (cancelled)", r.Server)
			}
		}
		res, err := gs.Sample(ctx, gateway.SampleRequest{Model: model, System: r.Params.SystemPrompt, Messages: msgs, MaxTokens: r.Params.MaxTokens})
		if err != nil {
			return nil, fmt.Errorf("acp-agent: sampling for MCP server %q: %w", r.Server, err)
		}
		var text strings.Builder
		for _, ct := range res.Message.Content {
			if ct.Type == gateway.ContentText {
				text.WriteString(ct.Text)
			}
		}
		return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: text.String()}, Model: model, StopReason: samplingStop(res.StopReason)}, nil
	}}
}

// samplingMessages converts a request's messages (text and image content;
// user and assistant roles) to the gateway's.
func samplingMessages(r bridge.SampleRequest) ([]gateway.Message, error) {
	msgs := make([]gateway.Message, 0, len(r.Params.Messages))
	for i, m := range r.Params.Messages {
		if m == nil {
			return nil, fmt.Errorf("MCP server %q: sampling messages[%d] is null", r.Server, i)
		}
		var role gateway.Role
		switch m.Role {
		case "user":
			role = gateway.RoleUser
		case "assistant":
			role = gateway.RoleAssistant
		default:
			return nil, fmt.Errorf("MCP server %q: sampling messages[%d] has role %q; want user or assistant", r.Server, i, m.Role)
		}
		var ct gateway.Content
		switch c := m.Content.(type) {
		case *mcp.TextContent:
			ct = gateway.TextContent(c.Text)
		case *mcp.ImageContent:
			ct = gateway.Content{Type: gateway.ContentImage, Data: c.Data, MIMEType: c.MIMEType}
		default:
			return nil, fmt.Errorf("MCP server %q: sampling messages[%d] has %T content; only text and image content are supported", r.Server, i, m.Content)
		}
		msgs = append(msgs, gateway.Message{Role: role, Content: []gateway.Content{ct}})
	}
	return msgs, nil
}

// samplingPermission is the question the user is asked about a sampling
// request. It is asked on the server's tool call in flight, keeping that
// call's title, kind and input, else on a call of its own titled after the
// server. Its content shows the request: the server, the model, the system
// prompt and each message's text (cut at sampleShown bytes), maxTokens.
func samplingPermission(r bridge.SampleRequest, model string) gateway.PermissionRequest {
	var b strings.Builder
	fmt.Fprintf(&b, "MCP server %q asks the model %s to answer (sampling, at most %d tokens):", r.Server, model, r.Params.MaxTokens)
	if r.Params.SystemPrompt != "" {
		fmt.Fprintf(&b, "\n\nsystem: %s", cut(r.Params.SystemPrompt, sampleShown))
	}
	for _, m := range r.Params.Messages {
		if m == nil {
			continue
		}
		var text string
		switch c := m.Content.(type) {
		case *mcp.TextContent:
			text = cut(c.Text, sampleShown)
		case *mcp.ImageContent:
			text = fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data))
		default:
			text = fmt.Sprintf("[%T]", m.Content)
		}
		fmt.Fprintf(&b, "\n\n%s: %s", m.Role, text)
	}
	call := gateway.ToolCallEvent{ID: r.CallID, Name: r.Server, Title: r.CallTitle, Kind: r.CallKind, Status: gateway.ToolPending}
	if call.ID == "" {
		var id [8]byte
		_, _ = rand.Read(id[:])
		call.ID = "sampling_" + hex.EncodeToString(id[:])
		call.Title = fmt.Sprintf("Model request from MCP server %q", r.Server)
		call.Kind = gateway.ToolKindThink
		call.RawInput = map[string]any{"server": r.Server, "model": model, "maxTokens": r.Params.MaxTokens}
	}
	return gateway.PermissionRequest{
		Call:    call,
		Content: []gateway.Content{gateway.TextContent(b.String())},
		Always:  fmt.Sprintf("Always allow MCP server %q to use the model in this session", r.Server),
	}
}

// cut returns s cut to at most n bytes at a rune boundary, with "…" when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// samplingStop is MCP's stopReason for the gateway's.
func samplingStop(r gateway.StopReason) string {
	switch r {
	case "", gateway.StopEndTurn:
		return "endTurn"
	case gateway.StopMaxTokens:
		return "maxTokens"
	}
	return string(r)
}
