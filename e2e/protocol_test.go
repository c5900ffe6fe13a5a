package e2e

import (
	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/acpclient"
)

// legacyFixtureServer is fixtureServer speaking MCP 2025-11-25 at most
// (FIXTURE_MAX_PROTOCOL): its ask_name, sign_in and sample tools then ask
// with server-initiated elicitation/create and sampling/createMessage, as
// TypeScript servers do, which go-sdk refuses on a 2026-07-28 session. The
// agent, which asks for 2026-07-28, falls back to initialize with it.
func legacyFixtureServer(name, log string) acpsdk.McpServer {
	return acpclient.Stdio(name, fixtureBin, nil, map[string]string{"FIXTURE_LOG": log, "FIXTURE_MAX_PROTOCOL": "2025-11-25"})
}
