package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// frontEndCommands answer the runner.Commands marked FrontEnd
// ([Session.Answer]), from the session's own state; the others go to the
// gateway. A test checks that the two agree.
var frontEndCommands = map[string]func(ctx context.Context, s *Session, rest string) string{
	"resources": resourcesCommand, // resources.go
	"mcp":       mcpCommand,       // mcpcommand.go
	"read":      readCommand,
	"status":    func(_ context.Context, s *Session, _ string) string { return s.StatusText() }, // mode.go
	"servers": func(_ context.Context, s *Session, _ string) string {
		return ServersText(s.Servers(), s.Manager().ToolLimit())
	},
	"login": func(_ context.Context, s *Session, rest string) string {
		if rest == "" {
			return "Usage: /login <server>; /servers lists them."
		}
		if err := s.Manager().Login(rest); err != nil {
			return err.Error() + "."
		}
		return fmt.Sprintf("Connecting MCP server %q again; a sign-in link follows if it asks for one.", rest)
	},
	"logout": func(ctx context.Context, s *Session, rest string) string {
		if rest == "" {
			return "Usage: /logout <server>; /servers lists them."
		}
		ctx, cancel := context.WithTimeout(ctx, logoutTimeout)
		defer cancel()
		if err := s.Manager().Logout(ctx, rest); err != nil {
			return gateway.ErrorText(err) + "."
		}
		return fmt.Sprintf("Signed out of MCP server %q: its tokens are deleted and revoked, and it is disconnected. /login %s signs in again.", rest, rest)
	},
}

// logoutTimeout bounds /logout's revocation requests.
const logoutTimeout = 30 * time.Second

// Answer answers a front-end command (in.Kind InputFrontEnd, from
// [Classify]: the runner.Commands marked FrontEnd, /servers, /mcp, …) from
// the session's state, and returns "" for any other input (which goes to
// [Session.Prompt]). Every front end (acp, mcpserver) answers them through
// it; call it inside [Session.Turn], with the turn's context, so it
// follows any running turn and session/cancel (or the turn's end) cancels
// what it waits for (/read's resources/read, /logout's revocations).
func (s *Session) Answer(ctx context.Context, in Input) string {
	if in.Kind != InputFrontEnd {
		return ""
	}
	run := frontEndCommands[in.Name]
	if run == nil {
		return "" // a table without its handler: TestCommands_FrontEndHandlers
	}
	return run(ctx, s, in.Args)
}

// ServersText renders /servers: one line per server (state, transport, tool
// count, server name and version, last error) and, for a server whose tools
// were cut at toolLimit, a [LeftOutText] line.
func ServersText(servers []bridge.ServerStatus, toolLimit int) string {
	if len(servers) == 0 {
		return "This session has no MCP servers."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d MCP servers in this session:\n", len(servers))
	for _, s := range servers {
		switch s.State {
		case bridge.StateConnected:
			state := "connected"
			if s.Idle {
				state = "ready"
			}
			fmt.Fprintf(&b, "- %s: %s (%s, %d tools", s.Name, state, s.Transport, s.Tools)
			if s.ServerName != "" {
				fmt.Fprintf(&b, ", %s %s", s.ServerName, s.ServerVersion)
			}
			if s.Idle {
				b.WriteString("; connects on first use")
			}
			b.WriteString(")\n")
		case bridge.StateFailed:
			fmt.Fprintf(&b, "- %s: failed (%s): %s\n", s.Name, s.Transport, gateway.ErrorText(s.Err))
		case bridge.StateSignIn:
			fmt.Fprintf(&b, "- %s: needs sign-in (%s): open %s\n", s.Name, s.Transport, s.SignInURL)
		case bridge.StateLost:
			fmt.Fprintf(&b, "- %s: lost (%s, %d tools): %s; %s\n", s.Name, s.Transport, s.Tools, gateway.ErrorText(s.Err), redialText(s.RetryAt, time.Now()))
		default:
			fmt.Fprintf(&b, "- %s: %s (%s)\n", s.Name, s.State, s.Transport)
		}
		if s.LeftOutCount > 0 {
			fmt.Fprintf(&b, "  %s\n", LeftOutText(s, toolLimit))
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

// LeftOutText says how many tools of server s were not bridged, over the
// per-session limit of limit tools, with a few of their names as examples
// (never the whole list: a server may have thousands).
func LeftOutText(s bridge.ServerStatus, limit int) string {
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
