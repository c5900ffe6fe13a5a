package acp

import (
	"fmt"
	"strings"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/bridge"
)

// commands are the slash commands advertised with available_commands_update
// (https://agentclientprotocol.com/protocol/slash-commands). /servers is
// answered here, from the session's bridge; the others by the gateway.
var commands = []struct{ name, desc, hint string }{
	{"tools", "List the tools of this session", ""},
	{"call", "Call a tool: /call <tool> {json arguments}", "<tool> {json arguments}"},
	{"servers", "Show each MCP server: state, transport, tool count, last error", ""},
	{"help", "Show the commands and how to configure a model", ""},
}

func availableCommands() acpsdk.SessionUpdate {
	list := make([]acpsdk.AvailableCommand, 0, len(commands))
	for _, c := range commands {
		ac := acpsdk.AvailableCommand{Name: c.name, Description: c.desc}
		if c.hint != "" {
			ac.Input = &acpsdk.AvailableCommandInput{Unstructured: &acpsdk.UnstructuredCommandInput{Hint: c.hint}}
		}
		list = append(list, ac)
	}
	return acpsdk.SessionUpdate{AvailableCommandsUpdate: &acpsdk.SessionAvailableCommandsUpdate{
		SessionUpdate: "available_commands_update", AvailableCommands: list,
	}}
}

// slashCommand returns the command word of a prompt ("/servers"), or "".
func slashCommand(text string) string {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "/") {
		return ""
	}
	word, _, _ := strings.Cut(text, " ")
	return word
}

// serversText renders /servers.
func serversText(servers []bridge.ServerStatus, toolLimit int) string {
	if len(servers) == 0 {
		return "This session has no MCP servers."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d MCP servers in this session:\n", len(servers))
	for _, s := range servers {
		switch s.State {
		case bridge.StateConnected:
			fmt.Fprintf(&b, "- %s: connected (%s, %d tools", s.Name, s.Transport, s.Tools)
			if s.ServerName != "" {
				fmt.Fprintf(&b, ", %s %s", s.ServerName, s.ServerVersion)
			}
			b.WriteString(")\n")
		case bridge.StateFailed:
			fmt.Fprintf(&b, "- %s: failed (%s): %v\n", s.Name, s.Transport, s.Err)
		case bridge.StateLost:
			fmt.Fprintf(&b, "- %s: lost (%s, %d tools): %v; %s\n", s.Name, s.Transport, s.Tools, s.Err, redialText(s.RetryAt, time.Now()))
		default:
			fmt.Fprintf(&b, "- %s: %s (%s)\n", s.Name, s.State, s.Transport)
		}
		if s.LeftOutCount > 0 {
			fmt.Fprintf(&b, "  %s\n", leftOutText(s, toolLimit))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// redialText says when a lost server is dialed again.
func redialText(retryAt, now time.Time) string {
	if wait := retryAt.Sub(now); wait > 0 {
		return fmt.Sprintf("the first call after %s dials it again", wait.Round(time.Second))
	}
	return "the next call dials it again"
}

// leftOutText says how many tools of a server were not bridged, with a few
// of their names as examples (never the whole list: a server may have
// thousands).
func leftOutText(s bridge.ServerStatus, limit int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "MCP server %q: %d of its %d tools left out, over the limit of %d tools per session shared between the session's servers (config limits.toolsPerSession)",
		s.Name, s.LeftOutCount, s.Tools+s.LeftOutCount, limit)
	if len(s.LeftOut) > 0 {
		b.WriteString("; e.g. " + strings.Join(s.LeftOut, ", "))
		if len(s.LeftOut) < s.LeftOutCount {
			b.WriteString(", …")
		}
	}
	return b.String()
}
