package anthropic

import "github.com/anthropics/anthropic-sdk-go"

// setBreakpoints marks the prompt cache breakpoints of a request
// (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching),
// three of the four allowed, so that each request reads the prefix the
// previous one wrote:
//
//   - the end of the tools and system prompt (the system block, else the
//     last tool), which change only when the session's tools do;
//   - the end of the previous request's prompt: the last user message
//     before the newest assistant message (the tool results a tool-using
//     request ended with, or the user message that began the turn);
//   - the newest message, which the next request reads.
//
// The prefix itself is the runner's to keep byte-stable (tools in a fixed
// order, no timestamps or ids that change).
func setBreakpoints(p *anthropic.MessageNewParams) {
	ephemeral := anthropic.NewCacheControlEphemeralParam()
	switch {
	case len(p.System) > 0:
		p.System[len(p.System)-1].CacheControl = ephemeral
	case len(p.Tools) > 0:
		if cc := p.Tools[len(p.Tools)-1].GetCacheControl(); cc != nil {
			*cc = ephemeral
		}
	}
	n := len(p.Messages)
	if n == 0 {
		return
	}
	mark(&p.Messages[n-1], ephemeral)
	for i := n - 2; i > 0; i-- {
		if p.Messages[i].Role == anthropic.MessageParamRoleAssistant {
			if p.Messages[i-1].Role == anthropic.MessageParamRoleUser {
				mark(&p.Messages[i-1], ephemeral)
			}
			return
		}
	}
}

// mark puts a breakpoint on the last block of m that can carry one.
func mark(m *anthropic.MessageParam, cc anthropic.CacheControlEphemeralParam) {
	for i := len(m.Content) - 1; i >= 0; i-- {
		if m.Content[i].OfThinking != nil || m.Content[i].OfRedactedThinking != nil {
			continue // thinking blocks take no cache_control
		}
		if p := m.Content[i].GetCacheControl(); p != nil {
			*p = cc
			return
		}
	}
}
