// Package acpclient is a small ACP client used by acp-agent's tests and demo
// (https://agentclientprotocol.com/protocol/overview). It records every
// session/update, can wait for a given update, and serves the file-system,
// terminal and elicitation methods only when given handlers for them
// (Recorder.FS, Recorder.Terminals, Recorder.Elicitation), advertising
// exactly those. All ACP frames go through acp-go-sdk.
package acpclient

import (
	"context"
	"fmt"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"
)

// Recorder implements acpsdk.Client. The zero value is ready to use; it is
// safe for concurrent use.
type Recorder struct {
	// OnUpdate, if set, sees each update as it arrives (before it is
	// recorded). It must be set before the connection starts.
	OnUpdate func(acpsdk.SessionNotification)
	// Permission chooses the answer to session/request_permission. Nil
	// selects the first option. Set it before the connection starts, or
	// with SetPermission.
	Permission func(acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionResponse
	// FS, if set, serves fs/read_text_file and fs/write_text_file, and
	// Process.Initialize advertises both; nil refuses them (method not
	// found) and advertises neither.
	FS FileSystem
	// Terminals, if set, serves terminal/*, and Process.Initialize
	// advertises the terminal capability; nil refuses them.
	Terminals TerminalHost
	// Elicitation, if set, serves elicitation/create and
	// elicitation/complete, and Process.Initialize advertises its modes;
	// nil refuses them (method not found) and advertises no elicitation.
	Elicitation *Elicitation
	// MCP, if set, hosts MCP servers on the ACP connection (mcphost.go).
	MCP *MCPHost

	mu      sync.Mutex
	updates []acpsdk.SessionNotification
	changed chan struct{} // closed and replaced on every new update
}

var _ acpsdk.Client = (*Recorder)(nil)

// Updates returns a copy of every update received so far, in order.
func (r *Recorder) Updates() []acpsdk.SessionNotification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]acpsdk.SessionNotification(nil), r.updates...)
}

// WaitFor returns the first update at index >= from that satisfies match,
// and its index, waiting until one arrives or ctx is done.
func (r *Recorder) WaitFor(ctx context.Context, from int, match func(acpsdk.SessionNotification) bool) (int, acpsdk.SessionNotification, error) {
	for {
		r.mu.Lock()
		for i := from; i < len(r.updates); i++ {
			if match(r.updates[i]) {
				u := r.updates[i]
				r.mu.Unlock()
				return i, u, nil
			}
		}
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return -1, acpsdk.SessionNotification{}, fmt.Errorf("waiting for a session/update: %w", context.Cause(ctx))
		}
	}
}

// SessionUpdate implements acpsdk.Client.
func (r *Recorder) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	if r.OnUpdate != nil {
		r.OnUpdate(n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, n)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
	return nil
}

// SetPermission sets Permission while the connection runs.
func (r *Recorder) SetPermission(f func(acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionResponse) {
	r.mu.Lock()
	r.Permission = f
	r.mu.Unlock()
}

// RequestPermission implements acpsdk.Client.
func (r *Recorder) RequestPermission(_ context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	r.mu.Lock()
	f := r.Permission
	r.mu.Unlock()
	if f != nil {
		return f(p), nil
	}
	if len(p.Options) == 0 {
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
	}
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(p.Options[0].OptionId)}, nil
}

// FileSystem is the client's side of ACP fs/*
// (https://agentclientprotocol.com/protocol/file-system).
type FileSystem interface {
	ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error)
	WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error)
}

// TerminalHost is the client's side of ACP terminal/*
// (https://agentclientprotocol.com/protocol/terminals).
type TerminalHost interface {
	CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error)
	KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error)
	TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error)
	ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error)
	WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error)
}

// ReadTextFile implements acpsdk.Client through FS.
func (r *Recorder) ReadTextFile(ctx context.Context, p acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	if r.FS == nil {
		return acpsdk.ReadTextFileResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodFsReadTextFile)
	}
	return r.FS.ReadTextFile(ctx, p)
}

// WriteTextFile implements acpsdk.Client through FS.
func (r *Recorder) WriteTextFile(ctx context.Context, p acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	if r.FS == nil {
		return acpsdk.WriteTextFileResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodFsWriteTextFile)
	}
	return r.FS.WriteTextFile(ctx, p)
}

// CreateTerminal implements acpsdk.Client through Terminals.
func (r *Recorder) CreateTerminal(ctx context.Context, p acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	if r.Terminals == nil {
		return acpsdk.CreateTerminalResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodTerminalCreate)
	}
	return r.Terminals.CreateTerminal(ctx, p)
}

// KillTerminal implements acpsdk.Client through Terminals.
func (r *Recorder) KillTerminal(ctx context.Context, p acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	if r.Terminals == nil {
		return acpsdk.KillTerminalResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodTerminalKill)
	}
	return r.Terminals.KillTerminal(ctx, p)
}

// TerminalOutput implements acpsdk.Client through Terminals.
func (r *Recorder) TerminalOutput(ctx context.Context, p acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	if r.Terminals == nil {
		return acpsdk.TerminalOutputResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodTerminalOutput)
	}
	return r.Terminals.TerminalOutput(ctx, p)
}

// ReleaseTerminal implements acpsdk.Client through Terminals.
func (r *Recorder) ReleaseTerminal(ctx context.Context, p acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	if r.Terminals == nil {
		return acpsdk.ReleaseTerminalResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodTerminalRelease)
	}
	return r.Terminals.ReleaseTerminal(ctx, p)
}

// WaitForTerminalExit implements acpsdk.Client through Terminals.
func (r *Recorder) WaitForTerminalExit(ctx context.Context, p acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	if r.Terminals == nil {
		return acpsdk.WaitForTerminalExitResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodTerminalWaitForExit)
	}
	return r.Terminals.WaitForTerminalExit(ctx, p)
}

// Elicitation is the client's side of ACP elicitation
// (https://agentclientprotocol.com/rfds/elicitation, unstable).
type Elicitation struct {
	// Form and URL are the modes advertised at initialize.
	Form, URL bool
	// Create answers elicitation/create; its ctx ends when the agent
	// withdraws the request ($/cancel_request).
	Create func(context.Context, acpsdk.UnstableCreateElicitationRequest) (acpsdk.UnstableCreateElicitationResponse, error)
	// Complete, if set, sees elicitation/complete.
	Complete func(context.Context, acpsdk.UnstableCompleteElicitationNotification)
}

// capabilities returns the elicitation capability advertising e's modes,
// or nil.
func (e *Elicitation) capabilities() *acpsdk.ElicitationCapabilities {
	if e == nil || !e.Form && !e.URL {
		return nil
	}
	c := &acpsdk.ElicitationCapabilities{}
	if e.Form {
		c.Form = &acpsdk.ElicitationFormCapabilities{}
	}
	if e.URL {
		c.Url = &acpsdk.ElicitationUrlCapabilities{}
	}
	return c
}

// UnstableCompleteElicitation implements acpsdk.Client: Elicitation.Complete.
func (r *Recorder) UnstableCompleteElicitation(ctx context.Context, p acpsdk.UnstableCompleteElicitationNotification) error {
	if r.Elicitation == nil {
		return acpsdk.NewMethodNotFound(acpsdk.ClientMethodElicitationComplete)
	}
	if r.Elicitation.Complete != nil {
		r.Elicitation.Complete(ctx, p)
	}
	return nil
}

// UnstableCreateElicitation implements acpsdk.Client: Elicitation.Create.
func (r *Recorder) UnstableCreateElicitation(ctx context.Context, p acpsdk.UnstableCreateElicitationRequest) (acpsdk.UnstableCreateElicitationResponse, error) {
	if r.Elicitation == nil || r.Elicitation.Create == nil {
		return acpsdk.UnstableCreateElicitationResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodElicitationCreate)
	}
	return r.Elicitation.Create(ctx, p)
}

// Text returns the text of an agent_message_chunk, or "".
func Text(n acpsdk.SessionNotification) string {
	if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
		return c.Content.Text.Text
	}
	return ""
}

// Stdio returns an ACP stdio mcpServers entry.
func Stdio(name, command string, args []string, env map[string]string) acpsdk.McpServer {
	vars := []acpsdk.EnvVariable{}
	for k, v := range env {
		vars = append(vars, acpsdk.EnvVariable{Name: k, Value: v})
	}
	if args == nil {
		args = []string{}
	}
	return acpsdk.McpServer{Stdio: &acpsdk.McpServerStdio{Name: name, Command: command, Args: args, Env: vars}}
}
