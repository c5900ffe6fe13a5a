package acp

// A prompt is classified once, by session.Classify (promptTurn); the
// commands of runner.Commands marked FrontEnd (/servers) are answered by
// session.Session.Answer, shared with the MCP server front end.

import (
	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway/runner"
)

// availableCommands is the available_commands_update of a session
// (https://agentclientprotocol.com/protocol/slash-commands) with cmds, its
// commands (session.Session.Commands: runner.Commands, then its MCP
// prompts).
func availableCommands(cmds []runner.Command) acpsdk.SessionUpdate {
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
