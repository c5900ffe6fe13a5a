package acpclient

import (
	"encoding/json"
	"fmt"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"
)

// Format renders one session/update as a short human-readable line (or a few
// lines), for the demo and for test failure messages.
func Format(n acpsdk.SessionNotification) string {
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil:
		return indent("agent: ", blockText(u.AgentMessageChunk.Content))
	case u.AgentThoughtChunk != nil:
		return indent("thought: ", blockText(u.AgentThoughtChunk.Content))
	case u.UserMessageChunk != nil:
		return indent("user: ", blockText(u.UserMessageChunk.Content))
	case u.ToolCall != nil:
		tc := u.ToolCall
		in, _ := json.Marshal(tc.RawInput)
		return fmt.Sprintf("tool_call %s %q kind=%s status=%s input=%s", tc.ToolCallId, tc.Title, tc.Kind, tc.Status, in)
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		status := "-"
		if tu.Status != nil {
			status = string(*tu.Status)
		}
		var parts []string
		for _, c := range tu.Content {
			if c.Content != nil {
				parts = append(parts, blockText(c.Content.Content))
			}
		}
		line := fmt.Sprintf("tool_call_update %s status=%s", tu.ToolCallId, status)
		if len(parts) > 0 {
			line += "\n" + indent("  │ ", strings.Join(parts, "\n"))
		}
		return line
	case u.AvailableCommandsUpdate != nil:
		var names []string
		for _, c := range u.AvailableCommandsUpdate.AvailableCommands {
			names = append(names, "/"+c.Name)
		}
		return "available_commands_update " + strings.Join(names, " ")
	case u.Plan != nil:
		return fmt.Sprintf("plan (%d entries)", len(u.Plan.Entries))
	}
	b, _ := json.Marshal(u)
	return string(b)
}

// blockText renders a content block: text as is, other kinds as a short note.
func blockText(b acpsdk.ContentBlock) string {
	switch {
	case b.Text != nil:
		return b.Text.Text
	case b.Image != nil:
		return fmt.Sprintf("[image %s, %d base64 chars]", b.Image.MimeType, len(b.Image.Data))
	case b.Audio != nil:
		return fmt.Sprintf("[audio %s, %d base64 chars]", b.Audio.MimeType, len(b.Audio.Data))
	case b.ResourceLink != nil:
		return fmt.Sprintf("[resource_link %s %s]", b.ResourceLink.Name, b.ResourceLink.Uri)
	case b.Resource != nil:
		if t := b.Resource.Resource.TextResourceContents; t != nil {
			return fmt.Sprintf("[resource %s] %s", t.Uri, t.Text)
		}
		if bl := b.Resource.Resource.BlobResourceContents; bl != nil {
			return fmt.Sprintf("[resource %s, blob]", bl.Uri)
		}
	}
	return "[empty]"
}

func indent(prefix, s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	pad := strings.Repeat(" ", len([]rune(prefix)))
	for i := range lines {
		if i == 0 {
			lines[i] = prefix + lines[i]
		} else {
			lines[i] = pad + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}
