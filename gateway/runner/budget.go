package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// The output budget. A tool result reaches the model up to a budget of
// tokens (Options.ResultBudget, the tool's own MaxResultChars where it has
// one); a larger result reaches it as its head and a note saying how large
// it is and how to read on with [ReadResultToolName], which pages through
// the whole result: the session's history keeps every result whole. The cut
// is a pure function of the result and the budget, so a request's prefix
// stays byte-stable for the prompt cache.

// ReadResultToolName is the runner's read-only tool that pages through a
// tool result larger than the budget.
const ReadResultToolName = "read_tool_result"

// DefaultResultBudget is the default budget of one tool result, in tokens
// (like Claude Code's MAX_MCP_OUTPUT_TOKENS).
const DefaultResultBudget = 25_000

// defaultReadLimit is how many characters read_tool_result returns when
// asked for no limit: a fifth of the default budget.
const defaultReadLimit = DefaultResultBudget * bytesPerToken / 5

// resultText is the text of a result for paging: its text-like blocks in
// order, joined with newlines (media blocks as a note).
func resultText(res *gateway.Result) string {
	var b strings.Builder
	for i, c := range res.Content {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch c.Type {
		case gateway.ContentText:
			b.WriteString(c.Text)
		case gateway.ContentResource:
			if c.Resource != nil && c.Resource.Blob == nil {
				b.WriteString(c.Resource.Text)
			} else {
				fmt.Fprintf(&b, "[resource %s]", c.URI)
			}
		default:
			fmt.Fprintf(&b, "[%s %s]", c.Type, c.MIMEType)
		}
	}
	return b.String()
}

// budgeted returns res as the model sees it under a budget of limit
// tokens: res itself when it fits, else its blocks up to the budget, the
// text block that crosses it cut (at a line end when one is near), the
// blocks after it left out, and a note with the whole result's size and
// the read_tool_result call that reads on. callID names the result in the
// note.
func budgeted(res *gateway.Result, limit int64, callID string) (*gateway.Result, bool) {
	if res == nil || contentTokens(res.Content) <= limit {
		return res, false
	}
	out := *res
	out.Content = nil
	left := limit * bytesPerToken // characters of budget left
	offset := 0                   // where the model's view stops in resultText
	omitted := 0
	for i, c := range res.Content {
		if i > 0 && left > 0 {
			offset++ // the newline resultText puts between blocks
		}
		if left <= 0 {
			omitted++
			continue
		}
		switch c.Type {
		case gateway.ContentText:
			if int64(len(c.Text)) <= left {
				out.Content = append(out.Content, c)
				left -= int64(len(c.Text))
				offset += len(c.Text)
				continue
			}
			head := cutText(c.Text, int(left))
			out.Content = append(out.Content, gateway.TextContent(head))
			offset += len(head)
			left = 0
		default: // media at their token cost, whole or not at all
			n := contentTokens([]gateway.Content{c}) * bytesPerToken
			if n > left {
				omitted++
				left = 0
				continue
			}
			out.Content = append(out.Content, c)
			left -= n
			offset += len(resultText(&gateway.Result{Content: []gateway.Content{c}}))
		}
	}
	whole := resultText(res)
	note := fmt.Sprintf("\n[acp-agent: this result is %d characters (about %d tokens), over the budget of %d tokens per tool result; the model was shown the first %d characters",
		len(whole), contentTokens(res.Content), limit, offset)
	if omitted > 0 {
		note += fmt.Sprintf(" (%d blocks after them left out)", omitted)
	}
	note += fmt.Sprintf(". Nothing is lost: call %s with {\"toolCallId\": %q, \"offset\": %d} to read on.]", ReadResultToolName, callID, offset)
	out.Content = append(out.Content, gateway.TextContent(note))
	out.Raw = nil
	return &out, true
}

// cutText returns the head of s of at most n bytes, on a rune boundary,
// ending at a line end when one is in the last tenth.
func cutText(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	head := s[:n]
	if i := strings.LastIndexByte(head, '\n'); i >= n-n/10 && i > 0 {
		head = head[:i+1]
	}
	return head
}

// resultLimit is the budget of tool's results, in tokens: its own
// MaxResultChars where it has one, else the runner's.
func (r *Runner) resultLimit(tool *gateway.Tool) int64 {
	if tool != nil && tool.MaxResultChars > 0 {
		return int64(tool.MaxResultChars / bytesPerToken)
	}
	return int64(r.opts.ResultBudget)
}

// readResultTool is read_tool_result: it pages through a result of the
// conversation the model sees (msgs returns it), by tool call ID, in
// characters of its text.
func readResultTool(msgs func() []gateway.Message, maxChars int) *gateway.Tool {
	return &gateway.Tool{
		Name:  ReadResultToolName,
		Label: "Read tool result",
		Description: "Read part of an earlier tool result that was too large to show whole. " +
			"Give the toolCallId of that result and the character offset to start at (the note at the end of the cut result says where it stopped); " +
			"limit is how many characters to return (default " + fmt.Sprint(defaultReadLimit) + ").",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"toolCallId":{"type":"string","description":"The ID of the tool call whose result to read"},"offset":{"type":"integer","minimum":0,"description":"The character offset to start at"},"limit":{"type":"integer","minimum":1,"description":"How many characters to return"}},"required":["toolCallId"]}`),
		Annotations: gateway.Annotations{ReadOnlyHint: true, OpenWorldHint: new(false), DestructiveHint: new(false)},
		Kind:        gateway.ToolKindRead,
		Core:        true,
		Execute: func(_ context.Context, _ string, args map[string]any, _ func(gateway.ToolUpdate)) (gateway.Result, error) {
			id, _ := args["toolCallId"].(string)
			offset, limit := intArg(args["offset"], 0), min(intArg(args["limit"], defaultReadLimit), maxChars)
			if id == "" {
				return gateway.ErrorResult("toolCallId is required: the ID of the tool call whose result to read"), nil
			}
			if offset < 0 || limit <= 0 {
				return gateway.ErrorResult("offset must be 0 or more and limit more than 0"), nil
			}
			var res *gateway.Result
			for _, m := range msgs() {
				if m.Role == gateway.RoleTool && m.ToolCallID == id {
					res = m.Result
				}
			}
			if res == nil {
				return gateway.ErrorResult(fmt.Sprintf("no tool result with toolCallId %q in this conversation", id)), nil
			}
			text := resultText(res)
			if offset >= len(text) {
				return gateway.ErrorResult(fmt.Sprintf("offset %d is past the end of the result (%d characters)", offset, len(text))), nil
			}
			end := min(offset+limit, len(text))
			for end < len(text) && !utf8.RuneStart(text[end]) {
				end++
			}
			for offset > 0 && !utf8.RuneStart(text[offset]) {
				offset--
			}
			page := text[offset:end]
			note := fmt.Sprintf("\n[characters %d to %d of %d", offset, end, len(text))
			if end < len(text) {
				note += fmt.Sprintf("; read on with offset %d", end)
			} else {
				note += "; the end of the result"
			}
			return gateway.Result{Content: []gateway.Content{gateway.TextContent(page + note + "]")}}, nil
		},
	}
}

// intArg reads a JSON number argument, def when absent or not a number.
func intArg(v any, def int) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return int(i)
		}
	case int:
		return n
	}
	return def
}
