package acp

import (
	"fmt"
	"strings"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// frontEndCommands answer the runner.Commands marked FrontEnd, from the
// session's own state; the others go to the gateway. A test checks that the
// two agree.
var frontEndCommands = map[string]func(s *session.Session, rest string) string{
	"servers": func(s *session.Session, _ string) string {
		return serversText(s.Servers(), s.Manager().ToolLimit())
	},
}

// availableCommands is the available_commands_update of every session
// (https://agentclientprotocol.com/protocol/slash-commands), from
// runner.Commands.
func availableCommands() acpsdk.SessionUpdate {
	cmds := runner.Commands()
	list := make([]acpsdk.AvailableCommand, 0, len(cmds))
	for _, c := range cmds {
		ac := acpsdk.AvailableCommand{Name: c.Name, Description: c.Description}
		if c.Hint != "" {
			ac.Input = &acpsdk.AvailableCommandInput{Unstructured: &acpsdk.UnstructuredCommandInput{Hint: c.Hint}}
		}
		list = append(list, ac)
	}
	return acpsdk.SessionUpdate{AvailableCommandsUpdate: &acpsdk.SessionAvailableCommandsUpdate{
		SessionUpdate: "available_commands_update", AvailableCommands: list,
	}}
}

// frontEndCommand returns the command the front end answers that text
// starts with (/servers), as a function computing the answer, or ok=false
// for any other text.
func frontEndCommand(s *session.Session, text string) (answer func() string, ok bool) {
	c, rest, ok := runner.ParseCommand(text)
	if !ok || !c.FrontEnd {
		return nil, false
	}
	run := frontEndCommands[c.Name]
	if run == nil {
		return nil, false // a table without its handler: TestCommands_FrontEndHandlers
	}
	return func() string { return run(s, rest) }, true
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
