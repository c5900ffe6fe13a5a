package anthropic

import (
	"encoding/json"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Context management on the API's side (gateway.Request.Context), both in
// beta:
//
//   - context editing, clear_tool_uses_20250919 (beta
//     context-management-2025-06-27,
//     https://docs.anthropic.com/en/docs/build-with-claude/context-editing):
//     past the trigger, the API replaces the oldest tool results by a
//     placeholder, keeping the newest Keep tool uses, if it frees at least
//     ClearAtLeast tokens. The history sent stays whole.
//   - compaction, compact_20260112 (beta compact-2026-01-12,
//     https://docs.anthropic.com/en/docs/build-with-claude/compaction):
//     past the trigger, the API summarizes the conversation and answers
//     with a compaction block before the message. The block goes back
//     verbatim at the head of that assistant message; the API drops
//     everything before it. Usage then lists the iterations (compaction,
//     message), and the top-level counts leave the compaction out: the
//     request's usage is their sum.
//
// The SDK's Beta types describe the edits; they ride on the Messages
// request as its context_management member.

// The beta headers of context management.
const (
	betaContextManagement = string(anthropic.AnthropicBetaContextManagement2025_06_27)
	betaCompaction        = string(anthropic.AnthropicBetaCompact2026_01_12)
)

// ManagesContext implements [gateway.ContextManager]: both
// ContextClearToolUses and ContextServerCompaction.
func (a *Provider) ManagesContext(s gateway.ContextStrategy) bool {
	return s == gateway.ContextClearToolUses || s == gateway.ContextServerCompaction
}

// contextOptions are the request options that ask for c: the beta header
// and context_management; none for a nil c or another strategy.
func contextOptions(c *gateway.ContextManagement) []option.RequestOption {
	if c == nil {
		return nil
	}
	var edit anthropic.BetaContextManagementConfigEditUnionParam
	beta := betaContextManagement
	switch c.Strategy {
	case gateway.ContextClearToolUses:
		e := &anthropic.BetaClearToolUses20250919EditParam{}
		if c.Trigger > 0 {
			e.Trigger.OfInputTokens = &anthropic.BetaInputTokensTriggerParam{Value: c.Trigger}
		}
		if c.Keep > 0 {
			e.Keep = anthropic.BetaToolUsesKeepParam{Value: c.Keep}
		}
		if c.ClearAtLeast > 0 {
			e.ClearAtLeast = anthropic.BetaInputTokensClearAtLeastParam{Value: c.ClearAtLeast}
		}
		edit.OfClearToolUses20250919 = e
	case gateway.ContextServerCompaction:
		e := &anthropic.BetaCompact20260112EditParam{}
		if c.Trigger > 0 {
			e.Trigger = anthropic.BetaInputTokensTriggerParam{Value: c.Trigger}
		}
		edit.OfCompact20260112 = e
		beta = betaCompaction
	default:
		return nil
	}
	return []option.RequestOption{
		option.WithHeaderAdd("anthropic-beta", beta),
		option.WithJSONSet("context_management", anthropic.BetaContextManagementConfigParam{
			Edits: []anthropic.BetaContextManagementConfigEditUnionParam{edit},
		}),
	}
}

// compactionParam is the block of c as sent back: verbatim.
func compactionParam(c *gateway.ServerCompaction) anthropic.ContentBlockParamUnion {
	return param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(c.Block))
}

// streamExtras collects what the SDK's Message does not: a compaction
// block and the usage's iterations.
type streamExtras struct {
	compaction map[string]any // the compaction block so far; nil if none
	iterations []iterationUsage
	edits      []json.RawMessage // context_management.applied_edits
}

// iterationUsage is one entry of usage.iterations.
type iterationUsage struct {
	Type                     string `json:"type"`
	InputTokens              int64  `json:"input_tokens"`
	CacheCreationInputTokens int64  `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64  `json:"cache_read_input_tokens"`
	OutputTokens             int64  `json:"output_tokens"`
}

// observe reads ev for the extras.
func (x *streamExtras) observe(ev *anthropic.MessageStreamEventUnion) {
	switch ev.Type {
	case "content_block_start":
		if ev.ContentBlock.Type == "compaction" {
			x.compaction = map[string]any{}
			_ = json.Unmarshal([]byte(ev.ContentBlock.RawJSON()), &x.compaction)
		}
	case "content_block_delta":
		if ev.Delta.Type != "compaction_delta" || x.compaction == nil {
			return
		}
		var d struct {
			Delta map[string]any `json:"delta"`
		}
		if json.Unmarshal([]byte(ev.RawJSON()), &d) != nil {
			return
		}
		for k, v := range d.Delta {
			if k != "type" {
				x.compaction[k] = v
			}
		}
	case "message_delta":
		var d struct {
			Usage struct {
				Iterations []iterationUsage `json:"iterations"`
			} `json:"usage"`
			ContextManagement struct {
				AppliedEdits []json.RawMessage `json:"applied_edits"`
			} `json:"context_management"`
		}
		if json.Unmarshal([]byte(ev.RawJSON()), &d) == nil {
			if len(d.Usage.Iterations) > 0 {
				x.iterations = d.Usage.Iterations
			}
			x.edits = append(x.edits, d.ContextManagement.AppliedEdits...)
		}
	}
}

// serverCompaction is the compaction block received, or nil.
func (x *streamExtras) serverCompaction() *gateway.ServerCompaction {
	if x.compaction == nil {
		return nil
	}
	summary, _ := x.compaction["content"].(string)
	if summary == "" {
		return nil // a failed compaction: the API treats it as a no-op
	}
	block, err := json.Marshal(x.compaction)
	if err != nil {
		return nil
	}
	return &gateway.ServerCompaction{Summary: summary, Block: block}
}

// usage is the request's usage: the sum of the iterations when the API
// listed them (a compaction's are not in the top-level counts), else u.
func (x *streamExtras) usage(u anthropic.Usage) gateway.Usage {
	out := gateway.Usage{Requests: 1}
	if len(x.iterations) == 0 {
		out.InputTokens, out.CacheReadTokens = u.InputTokens, u.CacheReadInputTokens
		out.CacheWriteTokens, out.OutputTokens = u.CacheCreationInputTokens, u.OutputTokens
		return out
	}
	for _, it := range x.iterations {
		out.InputTokens += it.InputTokens
		out.CacheReadTokens += it.CacheReadInputTokens
		out.CacheWriteTokens += it.CacheCreationInputTokens
		out.OutputTokens += it.OutputTokens
	}
	return out
}
