// Package gateway is acp-agent's agent runtime: the extra-tools Registry,
// the Runner (the agent loop: a model turn, then the tool calls it asked for,
// until the model ends the turn), the model providers, and the Gateway
// interface the ACP translator drives.
//
//	translator ── Send(sessionKey, message) ──▶ Runner ⇄ Provider (model)
//	           ◀── Events (text, tool start/update/end) ──┘
//	                                           │ tool calls
//	                                Registry[sessionKey] → Tool.Execute
//
// The gateway never knows where a tool came from: bridged MCP tools arrive
// as plain Tools through SetExtraTools.
package gateway
