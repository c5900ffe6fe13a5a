package fakemodel

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Anthropic's context management, server side, after
// https://docs.anthropic.com/en/docs/build-with-claude/context-editing and
// https://docs.anthropic.com/en/docs/build-with-claude/compaction (see the
// package doc, "Context management").

// Defaults and limits of the context edits.
const (
	defaultClearTrigger   = 100_000 // clear_tool_uses_20250919: input tokens
	defaultClearKeep      = 3       // clear_tool_uses_20250919: tool uses kept
	defaultCompactTrigger = 150_000 // compact_20260112: input tokens
	minCompactTrigger     = 50_000  // compact_20260112: the least trigger accepted
)

// ClearedPlaceholder is the text that replaces a tool result cleared by
// clear_tool_uses_20250919. (The API's own placeholder text is not
// documented; this one says the same.)
const ClearedPlaceholder = "[This tool result was cleared to save context space.]"

// contextEdit is one entry of context_management.edits.
type contextEdit struct {
	Type            string          `json:"type"`
	Trigger         *editValue      `json:"trigger"`
	Keep            *editValue      `json:"keep"`
	ClearAtLeast    *editValue      `json:"clear_at_least"`
	ExcludeTools    []string        `json:"exclude_tools"`
	ClearToolInputs json.RawMessage `json:"clear_tool_inputs"` // a bool, or tool names
}

// editValue is a trigger, keep or clear_at_least: {"type", "value"}.
type editValue struct {
	Type  string `json:"type"` // input_tokens, tool_uses
	Value int    `json:"value"`
}

// beta is the anthropic-beta value the edit needs, or "" for an unknown
// edit.
func (e *contextEdit) beta() string {
	switch e.Type {
	case "clear_tool_uses_20250919", "clear_thinking_20251015":
		return "context-management-2025-06-27"
	case "compact_20260112":
		return "compact-2026-01-12"
	}
	return ""
}

// triggerOr is the edit's input-token trigger, or def.
func (e *contextEdit) triggerOr(def int) int {
	if e.Trigger != nil && e.Trigger.Type != "tool_uses" {
		return e.Trigger.Value
	}
	return def
}

// hasBeta reports whether h's anthropic-beta headers name beta.
func hasBeta(h http.Header, beta string) bool {
	for _, v := range h.Values("anthropic-beta") {
		for b := range strings.SplitSeq(v, ",") {
			if strings.TrimSpace(b) == beta {
				return true
			}
		}
	}
	return false
}

// blockFields are the members of a block the edits look at.
type blockFields struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`          // tool_use
	Name      string          `json:"name"`        // tool_use
	ToolUseID string          `json:"tool_use_id"` // tool_result
	Content   json.RawMessage `json:"content"`     // tool_result, compaction
	Text      string          `json:"text"`        // text
}

func fields(raw []byte) blockFields {
	var f blockFields
	_ = json.Unmarshal(raw, &f)
	return f
}

// fromCompaction returns the message blocks from the last compaction block
// with a summary on: the API drops every block before it.
func fromCompaction(msgs []piece) []piece {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].role != "assistant" || !bytes.Contains(msgs[i].raw, []byte(`"compaction"`)) {
			continue // not decoded: tool results are the big blocks
		}
		if f := fields(msgs[i].raw); f.Type == "compaction" && len(f.Content) > 0 && string(f.Content) != "null" && string(f.Content) != `""` {
			return msgs[i:]
		}
	}
	return msgs
}

// clearToolUses applies clear_tool_uses_20250919 to msgs, a prompt of total
// input tokens: past the trigger, every tool use but the newest Keep (and
// those of ExcludeTools) has its result replaced by ClearedPlaceholder (and
// its input by {} under ClearToolInputs), if that frees at least
// ClearAtLeast tokens. It returns the blocks and the applied edit, or msgs
// and nil when nothing is cleared. The API is stateless: each request
// clears its full history anew, so the edits of consecutive requests agree.
func clearToolUses(e contextEdit, total int, msgs []piece) ([]piece, map[string]any) {
	type use struct {
		at   int
		id   string
		name string
	}
	var uses []use
	results := map[string]int{} // tool_use_id → block index
	for i, pc := range msgs {
		if !bytes.Contains(pc.raw, []byte(`"tool_`)) {
			continue // not decoded: neither a tool_use nor a tool_result
		}
		switch f := fields(pc.raw); f.Type {
		case "tool_use":
			uses = append(uses, use{i, f.ID, f.Name})
		case "tool_result":
			results[f.ToolUseID] = i
		}
	}
	switch {
	case e.Trigger != nil && e.Trigger.Type == "tool_uses":
		if len(uses) <= e.Trigger.Value {
			return msgs, nil
		}
	case total <= e.triggerOr(defaultClearTrigger):
		return msgs, nil
	}
	keep := defaultClearKeep
	if e.Keep != nil {
		keep = e.Keep.Value
	}
	var inputsOf []string
	allInputs := string(e.ClearToolInputs) == "true"
	_ = json.Unmarshal(e.ClearToolInputs, &inputsOf)
	out := slices.Clone(msgs)
	cleared, freed := 0, 0
	for _, u := range uses[:max(0, len(uses)-keep)] {
		if slices.Contains(e.ExcludeTools, u.name) {
			continue
		}
		did := false
		if at, ok := results[u.id]; ok {
			if raw := clearedResult(out[at].raw); raw != nil {
				freed += tokens(string(out[at].raw)) - tokens(string(raw))
				out[at].raw, did = raw, true
			}
		}
		if allInputs || slices.Contains(inputsOf, u.name) {
			var m map[string]any
			if json.Unmarshal(out[u.at].raw, &m) == nil {
				m["input"] = map[string]any{}
				raw := marshal(m)
				freed += tokens(string(out[u.at].raw)) - tokens(string(raw))
				out[u.at].raw, did = raw, true
			}
		}
		if did {
			cleared++
		}
	}
	if cleared == 0 || (e.ClearAtLeast != nil && freed < e.ClearAtLeast.Value) {
		return msgs, nil
	}
	return out, map[string]any{"type": "clear_tool_uses_20250919", "cleared_tool_uses": cleared, "cleared_input_tokens": freed}
}

// clearedResult is the tool_result block raw with ClearedPlaceholder for
// content (its tool_use_id, is_error and cache_control kept), or nil if it
// is cleared already. The content is skipped, not decoded.
func clearedResult(raw []byte) []byte {
	var r struct {
		ToolUseID    string          `json:"tool_use_id"`
		IsError      json.RawMessage `json:"is_error"`
		CacheControl json.RawMessage `json:"cache_control"`
		Content      json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &r) != nil || string(r.Content) == string(marshal(ClearedPlaceholder)) {
		return nil
	}
	m := map[string]any{"type": "tool_result", "tool_use_id": r.ToolUseID, "content": ClearedPlaceholder}
	if len(r.IsError) > 0 {
		m["is_error"] = r.IsError
	}
	if len(r.CacheControl) > 0 {
		m["cache_control"] = r.CacheControl
	}
	return marshal(m)
}

// compaction is what a request that passes compact_20260112's trigger
// makes: the summary, its block, and the prompt the message is then
// written from (the tools, the system prompt and the block).
type compaction struct {
	summary string
	block   map[string]any
	after   *anthropicPrompt
}

// compact summarizes msgs, a prompt of total input tokens after head (the
// tools and system prompt). The fake's summary names what it replaced and
// quotes the newest user text.
func compact(model string, head, msgs []piece, total int) *compaction {
	latest := ""
	for _, pc := range msgs {
		if f := fields(pc.raw); pc.role == "user" && f.Type == "text" {
			latest = f.Text
		}
	}
	if len(latest) > 400 {
		latest = latest[:400]
	}
	summary := fmt.Sprintf("Summary of the conversation so far (fakemodel compaction of %d blocks, %d input tokens). The user's latest request: %s", len(msgs), total, latest)
	sum := sha256.Sum256([]byte(summary))
	block := map[string]any{"type": "compaction", "content": summary, "encrypted_content": base64.StdEncoding.EncodeToString(sum[:])}
	after := buildPrompt(model, append(slices.Clone(head), piece{tag: "message assistant", raw: marshal(block), role: "assistant"}))
	return &compaction{summary: summary, block: block, after: after}
}

// usage is the usage object of a message whose accounting is u (output
// included): with a compaction, the top-level counts are the message
// iteration's and "iterations" lists both.
func (p *anthropicPrompt) usage(u Usage) map[string]any {
	if p == nil || len(p.iterations) != 2 {
		return anthropicUsage(u, u.OutputTokens)
	}
	c, m := p.iterations[0], p.iterations[1]
	m.OutputTokens = u.OutputTokens - c.OutputTokens
	out := anthropicUsage(m, m.OutputTokens)
	ci, mi := anthropicUsage(c, c.OutputTokens), anthropicUsage(m, m.OutputTokens)
	ci["type"], mi["type"] = "compaction", "message"
	out["iterations"] = []any{ci, mi}
	return out
}

// contextManagement is the response's context_management, or nil when the
// request asked for none.
func (p *anthropicPrompt) contextManagement() any {
	if p == nil || !p.managed {
		return nil
	}
	edits := []any{}
	for _, e := range p.edits {
		edits = append(edits, e)
	}
	return map[string]any{"applied_edits": edits}
}
