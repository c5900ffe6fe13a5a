package session

// /mcp: the session's servers listed, added, removed, reconnected,
// disabled and enabled by its user while it runs.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
	"github.com/seed02d3eb6b/acp-agent/sandbox/mcppolicy"
)

// mcpUsage is /mcp's help.
const mcpUsage = `Usage:
/mcp                                   list the session's MCP servers
/mcp add NAME COMMAND [ARGS...]        add a stdio server
/mcp add NAME URL                      add a Streamable HTTP server (--sse: legacy SSE)
    options before NAME: --env NAME=VALUE, --header NAME=VALUE, --sse; ${VAR} reads the agent's environment
/mcp remove NAME                       stop a server and take it out of the session
/mcp reconnect NAME                    restart a server (a stdio server's process too)
/mcp disable NAME, /mcp enable NAME    take its tools out of the session and back; it keeps running
/mcp approve                           run this project's .mcp.json servers, remembered for the project
/mcp revoke                            forget that approval and stop them`

// mcpCommand answers /mcp.
func mcpCommand(ctx context.Context, s *Session, rest string) string {
	args, err := splitArgs(rest)
	if err != nil {
		return err.Error() + "\n" + mcpUsage
	}
	if len(args) == 0 || args[0] == "list" {
		return s.ServersList()
	}
	verb, args := args[0], args[1:]
	one := func(f func(name string) string) string {
		if len(args) != 1 {
			return fmt.Sprintf("/mcp %s takes one server name.\n%s", verb, mcpUsage)
		}
		return f(args[0])
	}
	switch verb {
	case "add":
		spec, err := parseAdd(args)
		if err != nil {
			return err.Error() + "\n" + mcpUsage
		}
		ch := s.AddServer(ctx, spec)
		if ch.Note != "" {
			return ChangeText(ch) + "\n" + ch.Note
		}
		return ChangeText(ch)
	case "remove":
		return one(func(name string) string {
			if err := s.RemoveServer(ctx, name); err != nil {
				return serverErrText(name, err)
			}
			return fmt.Sprintf("Removed MCP server %q: it is stopped and its tools are out of the session, also after a reload.", name)
		})
	case "reconnect":
		return one(func(name string) string {
			st, err := s.ReconnectServer(ctx, name)
			if err != nil {
				return serverErrText(name, err)
			}
			return ChangeText(ServerChange{Name: name, Action: "reconnected", Status: st})
		})
	case "disable", "enable":
		return one(func(name string) string {
			if err := s.SetServerEnabled(ctx, name, verb == "enable"); err != nil {
				return serverErrText(name, err)
			}
			if verb == "enable" {
				return fmt.Sprintf("Enabled MCP server %q: its tools are back in the session from the next prompt.", name)
			}
			return fmt.Sprintf("Disabled MCP server %q: its tools are out of the session from the next prompt; it keeps running (/mcp enable %s).", name, name)
		})
	case "help":
		return mcpUsage
	case "approve":
		return s.approveCommand(ctx)
	case "revoke":
		return s.revokeProject(ctx)
	}
	return fmt.Sprintf("Unknown /mcp command %q.\n%s", verb, mcpUsage)
}

// serverErrText is the answer to a change refused for server name.
func serverErrText(name string, err error) string {
	if errors.Is(err, bridge.ErrUnknownServer) {
		return fmt.Sprintf("No MCP server %q in this session; /mcp lists them.", name)
	}
	return gateway.ErrorText(err) + "."
}

// approveCommand approves the project's servers the user has not approved
// (typing /mcp approve is the approval), remembered for the project.
func (s *Session) approveCommand(ctx context.Context) string {
	a := s.core.opts.ProjectApprovals
	if a == nil || s.core.opts.RemoteClients {
		return "This agent does not read projects' .mcp.json files."
	}
	project, err := readProject(s.cwd)
	s.srvMu.Lock()
	var todo []bridge.ServerSpec
	for _, p := range project {
		if _, ok := s.origins[p.Name]; !ok {
			todo = append(todo, p)
		}
	}
	s.srvMu.Unlock()
	var b strings.Builder
	if err != nil {
		b.WriteString(err.Error() + "\n")
	}
	if len(todo) == 0 {
		fmt.Fprintf(&b, "No server of %s waits for approval in this session.", s.cwd+"/"+ProjectFile)
		return b.String()
	}
	b.WriteString(s.approveProject(ctx, todo, true))
	return b.String()
}

// ChangeText says how one change of a session's servers went, in a
// sentence for the user (what /mcp answers).
func ChangeText(ch ServerChange) string {
	if ch.Err != nil {
		return fmt.Sprintf("MCP server %q was not %s: %s.", ch.Name, ch.Action, gateway.ErrorText(ch.Err))
	}
	what := strings.ToUpper(ch.Action[:1]) + ch.Action[1:]
	if ch.Action == "removed" {
		return fmt.Sprintf("Removed MCP server %q.", ch.Name)
	}
	st := ch.Status
	switch st.State {
	case bridge.StateConnected:
		return fmt.Sprintf("%s MCP server %q (%s): connected, %d tools, usable from the next prompt.", what, ch.Name, st.Transport, st.Tools)
	case bridge.StateSignIn:
		return fmt.Sprintf("%s MCP server %q (%s): it waits for you to sign in at %s.", what, ch.Name, st.Transport, st.SignInURL)
	case bridge.StateFailed:
		if errors.Is(st.Err, mcppolicy.ErrRefused) { // trying again changes nothing
			return fmt.Sprintf("%s MCP server %q (%s), but it may not run: %s.", what, ch.Name, st.Transport, gateway.ErrorText(st.Err))
		}
		return fmt.Sprintf("%s MCP server %q (%s), but it failed: %s. /mcp reconnect %s tries again; /mcp remove %s takes it out.", what, ch.Name, st.Transport, gateway.ErrorText(st.Err), ch.Name, ch.Name)
	}
	return fmt.Sprintf("%s MCP server %q (%s): %s.", what, ch.Name, st.Transport, st.State)
}

// ServersList renders /mcp: one line per server with its state, transport,
// tool count, mode (a stdio server's), origin and whether it is disabled,
// then the project's servers waiting for approval.
func (s *Session) ServersList() string {
	servers := s.manager.Servers()
	s.srvMu.Lock()
	origins := make(map[string]Origin, len(s.origins))
	for k, v := range s.origins {
		origins[k] = v
	}
	pending := len(s.pending)
	s.srvMu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d MCP servers in this session:", len(servers))
	for _, st := range servers {
		state := st.State.String()
		switch {
		case st.Disabled:
			state += ", disabled"
		case st.Idle:
			state = "ready"
		}
		fmt.Fprintf(&b, "\n- %s: %s (%s, %d tools", st.Name, state, st.Transport, st.Tools)
		if st.Mode != "" {
			fmt.Fprintf(&b, ", %s", st.Mode)
		}
		if o := origins[st.Name]; o != "" {
			fmt.Fprintf(&b, ", from %s", originText(o))
		}
		b.WriteString(")")
		if st.State == bridge.StateFailed || st.State == bridge.StateLost {
			b.WriteString(": " + gateway.ErrorText(st.Err))
		}
	}
	if pending > 0 {
		fmt.Fprintf(&b, "\n%d servers of this project's %s wait for your approval (/mcp approve).", pending, ProjectFile)
	}
	b.WriteString("\n/mcp help shows how to add, remove, reconnect, disable and enable them.")
	return b.String()
}

// originText names an origin for /mcp.
func originText(o Origin) string {
	switch o {
	case OriginAgent:
		return "the agent"
	case OriginConfig:
		return "your config"
	case OriginProject:
		return "the project's " + ProjectFile
	case OriginClient:
		return "the editor"
	case OriginAdded:
		return "/mcp add"
	}
	return string(o)
}

// parseAdd reads /mcp add's arguments: options, NAME, then a URL or a
// COMMAND and its ARGS.
func parseAdd(args []string) (bridge.ServerSpec, error) {
	var spec bridge.ServerSpec
	sse := false
	for len(args) > 0 && strings.HasPrefix(args[0], "--") {
		opt := args[0]
		args = args[1:]
		if opt == "--sse" {
			sse = true
			continue
		}
		if opt != "--env" && opt != "--header" {
			return spec, fmt.Errorf("/mcp add: unknown option %q", opt)
		}
		if len(args) == 0 {
			return spec, fmt.Errorf("/mcp add: %s needs NAME=VALUE", opt)
		}
		k, v, ok := strings.Cut(args[0], "=")
		args = args[1:]
		if !ok || k == "" {
			return spec, fmt.Errorf("/mcp add: %s %q: want NAME=VALUE", opt, k)
		}
		if opt == "--env" {
			spec.Env = append(spec.Env, environ.Var{Name: k, Value: v})
		} else {
			spec.Headers = append(spec.Headers, bridge.Header{Name: k, Value: v})
		}
	}
	if len(args) < 2 {
		return spec, errors.New("/mcp add needs a NAME and a COMMAND or URL")
	}
	spec.Name = args[0]
	target := args[1]
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
		if len(args) > 2 {
			return spec, fmt.Errorf("/mcp add %s: a URL takes no arguments after it (got %q)", spec.Name, args[2])
		}
		if len(spec.Env) > 0 {
			return spec, fmt.Errorf("/mcp add %s: --env is for stdio servers; an http server takes --header", spec.Name)
		}
		spec.Transport, spec.URL = bridge.TransportHTTP, target
		if sse {
			spec.Transport = bridge.TransportSSE
		}
		return spec, nil
	}
	if sse || len(spec.Headers) > 0 {
		return spec, fmt.Errorf("/mcp add %s: --sse and --header are for a URL; %q is a command", spec.Name, target)
	}
	spec.Transport, spec.Command, spec.Args = bridge.TransportStdio, target, args[2:]
	return spec, nil
}

// splitArgs splits a command line into words as a shell would for plain
// words, 'single' and "double" quotes and backslash escapes (no
// expansion: ${VAR} stays as written).
func splitArgs(line string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case unicode.IsSpace(r):
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}
