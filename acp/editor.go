package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/editor"
)

// clientEditor is one session's editor.Editor over the ACP connection: the
// client's fs/* and terminal/* methods, each offered only when the client
// advertised it at initialize (clientCapabilities.fs.readTextFile,
// fs.writeTextFile, terminal).
type clientEditor struct {
	rpc  *acpsdk.Connection
	sid  acpsdk.SessionId
	caps editor.Capabilities
	// announced is closed once the client knows the session (its
	// session/new response and the notifications after it are written):
	// Elicit waits for it, as a sign-in during the open may ask before.
	announced <-chan struct{}
}

var _ editor.Editor = (*clientEditor)(nil)

// errNotOffered is the error of a method the client did not advertise.
func errNotOffered(method string) error {
	return fmt.Errorf("the client does not offer %s (not in its clientCapabilities)", method)
}

func (e *clientEditor) Capabilities() editor.Capabilities { return e.caps }

func (e *clientEditor) ReadTextFile(ctx context.Context, path string, line, limit int) (string, error) {
	if !e.caps.ReadTextFile {
		return "", errNotOffered("fs/read_text_file")
	}
	req := acpsdk.ReadTextFileRequest{SessionId: e.sid, Path: path}
	if line > 0 {
		req.Line = &line
	}
	if limit > 0 {
		req.Limit = &limit
	}
	res, err := acpsdk.SendRequest[acpsdk.ReadTextFileResponse](e.rpc, ctx, acpsdk.ClientMethodFsReadTextFile, req)
	if err != nil {
		return "", fmt.Errorf("fs/read_text_file %s: %w", path, err)
	}
	return res.Content, nil
}

func (e *clientEditor) WriteTextFile(ctx context.Context, path, content string) error {
	if !e.caps.WriteTextFile {
		return errNotOffered("fs/write_text_file")
	}
	if _, err := acpsdk.SendRequest[acpsdk.WriteTextFileResponse](e.rpc, ctx, acpsdk.ClientMethodFsWriteTextFile, acpsdk.WriteTextFileRequest{SessionId: e.sid, Path: path, Content: content}); err != nil {
		return fmt.Errorf("fs/write_text_file %s: %w", path, err)
	}
	return nil
}

func (e *clientEditor) CreateTerminal(ctx context.Context, r editor.TerminalRequest) (editor.Terminal, error) {
	if !e.caps.Terminal {
		return nil, errNotOffered("terminal/create")
	}
	req := acpsdk.CreateTerminalRequest{SessionId: e.sid, Command: r.Command, Args: r.Args}
	if r.Cwd != "" {
		req.Cwd = &r.Cwd
	}
	for _, kv := range r.Env {
		name, value, _ := strings.Cut(kv, "=")
		req.Env = append(req.Env, acpsdk.EnvVariable{Name: name, Value: value})
	}
	if r.OutputByteLimit > 0 {
		req.OutputByteLimit = &r.OutputByteLimit
	}
	res, err := acpsdk.SendRequest[acpsdk.CreateTerminalResponse](e.rpc, ctx, acpsdk.ClientMethodTerminalCreate, req)
	if err != nil {
		return nil, fmt.Errorf("terminal/create: %w", err)
	}
	return &clientTerminal{e: e, id: res.TerminalId}, nil
}

// clientTerminal is a terminal of the client, by ID.
type clientTerminal struct {
	e  *clientEditor
	id string
}

func (t *clientTerminal) ID() string { return t.id }

func (t *clientTerminal) Output(ctx context.Context) (editor.Output, error) {
	res, err := acpsdk.SendRequest[acpsdk.TerminalOutputResponse](t.e.rpc, ctx, acpsdk.ClientMethodTerminalOutput, acpsdk.TerminalOutputRequest{SessionId: t.e.sid, TerminalId: t.id})
	if err != nil {
		return editor.Output{}, fmt.Errorf("terminal/output %s: %w", t.id, err)
	}
	out := editor.Output{Text: res.Output, Truncated: res.Truncated}
	if s := res.ExitStatus; s != nil {
		out.Exit = &editor.ExitStatus{Code: s.ExitCode, Signal: deref(s.Signal)}
	}
	return out, nil
}

func (t *clientTerminal) WaitForExit(ctx context.Context) (editor.ExitStatus, error) {
	res, err := acpsdk.SendRequest[acpsdk.WaitForTerminalExitResponse](t.e.rpc, ctx, acpsdk.ClientMethodTerminalWaitForExit, acpsdk.WaitForTerminalExitRequest{SessionId: t.e.sid, TerminalId: t.id})
	if err != nil {
		return editor.ExitStatus{}, fmt.Errorf("terminal/wait_for_exit %s: %w", t.id, err)
	}
	return editor.ExitStatus{Code: res.ExitCode, Signal: deref(res.Signal)}, nil
}

func (t *clientTerminal) Kill(ctx context.Context) error {
	if _, err := acpsdk.SendRequest[acpsdk.KillTerminalResponse](t.e.rpc, ctx, acpsdk.ClientMethodTerminalKill, acpsdk.KillTerminalRequest{SessionId: t.e.sid, TerminalId: t.id}); err != nil {
		return fmt.Errorf("terminal/kill %s: %w", t.id, err)
	}
	return nil
}

func (t *clientTerminal) Release(ctx context.Context) error {
	if _, err := acpsdk.SendRequest[acpsdk.ReleaseTerminalResponse](t.e.rpc, ctx, acpsdk.ClientMethodTerminalRelease, acpsdk.ReleaseTerminalRequest{SessionId: t.e.sid, TerminalId: t.id}); err != nil {
		return fmt.Errorf("terminal/release %s: %w", t.id, err)
	}
	return nil
}

var _ editor.Elicitor = (*clientEditor)(nil)

// Elicit sends ACP elicitation/create, scoped to the session and, when
// r.ToolCallID is set, to that tool call (elicitationCreate, wire.go:
// acp-go-sdk v0.13.5's request type has no session scope). It first waits
// until the client knows the session (announced) or ctx ends.
func (e *clientEditor) Elicit(ctx context.Context, r editor.ElicitRequest) (editor.ElicitResult, error) {
	if e.announced != nil {
		select {
		case <-e.announced:
		case <-ctx.Done():
			return editor.ElicitResult{}, context.Cause(ctx)
		}
	}
	var req acpsdk.UnstableCreateElicitationRequest
	switch r.Mode {
	case editor.ModeForm:
		if !e.caps.ElicitForm {
			return editor.ElicitResult{}, errNotOffered("elicitation/create in form mode")
		}
		var schema acpsdk.UnstableElicitationSchema
		if r.Schema != nil {
			b, err := json.Marshal(r.Schema)
			if err == nil {
				err = json.Unmarshal(b, &schema)
			}
			if err != nil {
				return editor.ElicitResult{}, fmt.Errorf("elicitation/create: the form's requestedSchema: %w", err)
			}
		}
		req = acpsdk.NewUnstableCreateElicitationRequestForm(schema)
		req.Form.Message = r.Message
	case editor.ModeURL:
		if !e.caps.ElicitURL {
			return editor.ElicitResult{}, errNotOffered("elicitation/create in url mode")
		}
		req = acpsdk.NewUnstableCreateElicitationRequestUrl(acpsdk.UnstableElicitationId(r.ID), r.URL)
		req.Url.Message = r.Message
	default:
		return editor.ElicitResult{}, fmt.Errorf("elicitation/create: unknown mode %q (want %q or %q)", r.Mode, editor.ModeForm, editor.ModeURL)
	}
	res, err := acpsdk.SendRequest[acpsdk.UnstableCreateElicitationResponse](e.rpc, ctx, acpsdk.ClientMethodElicitationCreate,
		elicitationCreate{UnstableCreateElicitationRequest: req, SessionID: e.sid, ToolCallID: r.ToolCallID})
	if err != nil {
		if ctx.Err() != nil {
			return editor.ElicitResult{}, context.Cause(ctx)
		}
		return editor.ElicitResult{}, fmt.Errorf("elicitation/create: %w", err)
	}
	switch {
	case res.Accept != nil:
		return editor.ElicitResult{Action: editor.ActionAccept, Content: res.Accept.Content}, nil
	case res.Decline != nil:
		return editor.ElicitResult{Action: editor.ActionDecline}, nil
	case res.Cancel != nil:
		return editor.ElicitResult{Action: editor.ActionCancel}, nil
	}
	return editor.ElicitResult{}, fmt.Errorf("elicitation/create: the client's answer has no action")
}

func (e *clientEditor) CompleteElicitation(ctx context.Context, id string) error {
	if !e.caps.ElicitURL {
		return errNotOffered("elicitation/complete")
	}
	if err := e.rpc.SendNotification(ctx, acpsdk.ClientMethodElicitationComplete, acpsdk.UnstableCompleteElicitationNotification{ElicitationId: acpsdk.UnstableElicitationId(id)}); err != nil {
		return fmt.Errorf("elicitation/complete %s: %w", id, err)
	}
	return nil
}
