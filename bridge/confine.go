package bridge

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/sandbox/confine"
)

// Confine is how a session's processes are confined by its mode (package
// sandbox/confine): its stdio servers here, and run_command in the
// built-in tools (bridge/builtin), which take the same settings. The zero
// value confines nothing.
type Confine struct {
	// Mode returns the session's mode as a process starts (a mode change
	// applies to processes started after it). Nil means full access.
	Mode func() confine.Mode
	// Workspace is what workspace-write may write: the session's
	// directories and its private temp directory, which becomes the
	// children's TMPDIR.
	Workspace confine.Workspace
	// Require refuses to start a process the kernel cannot confine in full
	// ([confine.Support.Gaps]) instead of starting it with what it can
	// (config sandbox.require).
	Require bool
	// Support is what the kernel enforces; nil means
	// confine.Supported(). Tests set a kernel without Landlock here.
	Support *confine.Support
}

// mode returns the session's current mode.
func (c *Confine) mode() confine.Mode {
	if c == nil || c.Mode == nil {
		return confine.FullAccess
	}
	return c.Mode()
}

// workspace returns the session's workspace.
func (c *Confine) workspace() confine.Workspace {
	if c == nil {
		return confine.Workspace{}
	}
	return c.Workspace
}

// support returns what the kernel enforces.
func (c *Confine) support() confine.Support {
	if c != nil && c.Support != nil {
		return *c.Support
	}
	return confine.Supported()
}

// plan decides how a process of the session runs: the mode it starts
// under, and the rules to confine it with when there is something to
// confine and the kernel can (wrap). An error (a *confine.NotEnforcedError
// under Require) means it must not start; without Landlock, and not
// required, it starts unconfined (the session's notice says so).
func (c *Confine) plan(ws confine.Workspace, s confine.Server, path string) (m confine.Mode, r confine.Rules, wrap bool, err error) {
	m = c.mode()
	r, ok := confine.For(m, ws, s, path)
	if !ok {
		return m, r, false, nil
	}
	sup := c.support()
	if gaps := sup.Gaps(r); len(gaps) > 0 && c != nil && c.Require {
		return m, r, false, &confine.NotEnforcedError{Mode: m, Gaps: gaps, Kernel: sup.Kernel()}
	}
	return m, r, sup.ABI >= 1, nil
}

// Apply confines cmd, not started yet, for a process of the session (a
// stdio server with its own rules s, or a command with none): it sets
// TMPDIR to the private temp directory and rewrites cmd to start through
// the launcher under the rules of the current mode, ws being the
// workspace to use (the session's, or the directory its children run in).
// It returns the mode the process starts under. An error (a
// *confine.NotEnforcedError under Require) means cmd must not start.
// Without Landlock, and not required, cmd starts unconfined.
func (c *Confine) Apply(cmd *exec.Cmd, ws confine.Workspace, s confine.Server) (confine.Mode, error) {
	if ws.Temp != "" {
		cmd.Env = append(cmd.Env, "TMPDIR="+ws.Temp)
	}
	m, r, wrap, err := c.plan(ws, s, cmd.Path)
	if err != nil || !wrap || cmd.Err != nil { // a lookup error: Start reports it
		return m, err
	}
	return m, confine.Wrap(cmd, r)
}

// Terminal returns the command line that runs path with argv in an
// editor's terminal (ACP terminal/create) on the agent's machine, confined
// as [Confine.Apply] confines a child: the program, its arguments and the
// environment variables to add ("NAME=value"), and the mode it runs under.
// Without anything to confine (or without Landlock, not required) it is
// path and argv[1:] themselves.
func (c *Confine) Terminal(ws confine.Workspace, path string, argv []string) (prog string, args, env []string, m confine.Mode, err error) {
	if ws.Temp != "" {
		env = append(env, "TMPDIR="+ws.Temp)
	}
	m, r, wrap, err := c.plan(ws, confine.Server{}, path)
	if err != nil {
		return "", nil, nil, m, err
	}
	if !wrap {
		return path, argv[1:], env, m, nil
	}
	prog, args, rules, err := confine.Launch(r, path, argv)
	if err != nil {
		return "", nil, nil, m, err
	}
	return prog, args, append(env, rules), m, nil
}

// denied matches the words a refused file or network access leaves in
// output: the C library's messages for EACCES, EPERM and EROFS, Node's and
// Python's error codes.
var denied = regexp.MustCompile(`(?i)permission denied|operation not permitted|read-only file system|\bEACCES\b|\bEPERM\b|\bEROFS\b`)

// DeniedNote returns the note a tool's error result gets when its text
// looks like a refused access by a process confined in mode m: what the
// mode allows and how to change it; "" when text shows no refusal or
// nothing confined the process. server names a stdio server ("" for
// run_command) whose own rules are s.
func DeniedNote(m confine.Mode, server string, s confine.Server, text string) string {
	own := server != "" && (s.NetworkOff() || s.Read != nil)
	if (m == confine.FullAccess || m == "") && !own || !denied.MatchString(text) {
		return ""
	}
	var sb strings.Builder
	switch m {
	case confine.ReadOnly:
		sb.WriteString("This session is in read-only mode: the kernel refuses every write by commands and MCP servers.")
	case confine.WorkspaceWrite:
		sb.WriteString("This session is in workspace-write mode: the kernel refuses writes outside the session's directories and its temp directory ($TMPDIR).")
		if server != "" {
			fmt.Fprintf(&sb, " Config servers.%s.sandbox.write can allow this server more paths.", server)
		}
	}
	if server != "" && s.NetworkOff() {
		fmt.Fprintf(&sb, " Config servers.%s.sandbox.network false refuses it the network.", server)
	}
	if server != "" && s.Read != nil {
		fmt.Fprintf(&sb, " Config servers.%s.sandbox.read limits what it may read.", server)
	}
	switch m {
	case confine.ReadOnly:
		sb.WriteString(" The user can switch the session to workspace-write or full-access in the editor's mode picker.")
	case confine.WorkspaceWrite:
		sb.WriteString(" The user can switch the session to full-access in the editor's mode picker.")
	}
	return strings.TrimSpace(sb.String())
}

// deniedNote is [DeniedNote] for a stdio server's process as it started;
// "" for other servers.
func (s *client) deniedNote(text string) string {
	if s.spec.Transport != TransportStdio {
		return ""
	}
	s.conn.mu.Lock()
	m := s.conn.mode
	s.conn.mu.Unlock()
	return DeniedNote(m, s.spec.Name, s.spec.Sandbox, text)
}

// withDeniedNote appends to res, an error result of a stdio server's tool,
// the note its text calls for, if any.
func (s *client) withDeniedNote(res gateway.Result) gateway.Result {
	if !res.IsError {
		return res
	}
	var text strings.Builder
	for _, c := range res.Content {
		if c.Type == gateway.ContentText {
			text.WriteString(c.Text)
			text.WriteByte('\n')
		}
	}
	if note := s.deniedNote(text.String()); note != "" {
		res.Content = append(slices.Clip(res.Content), gateway.TextContent(note))
	}
	return res
}
