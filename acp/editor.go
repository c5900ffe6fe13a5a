package acp

import (
	"bytes"
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
	conn *acpsdk.AgentSideConnection
	sid  acpsdk.SessionId
	caps editor.Capabilities
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
	res, err := e.conn.ReadTextFile(ctx, req)
	if err != nil {
		return "", fmt.Errorf("fs/read_text_file %s: %w", path, err)
	}
	return res.Content, nil
}

func (e *clientEditor) WriteTextFile(ctx context.Context, path, content string) error {
	if !e.caps.WriteTextFile {
		return errNotOffered("fs/write_text_file")
	}
	if _, err := e.conn.WriteTextFile(ctx, acpsdk.WriteTextFileRequest{SessionId: e.sid, Path: path, Content: content}); err != nil {
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
	res, err := e.conn.CreateTerminal(ctx, req)
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
	res, err := t.e.conn.TerminalOutput(ctx, acpsdk.TerminalOutputRequest{SessionId: t.e.sid, TerminalId: t.id})
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
	res, err := t.e.conn.WaitForTerminalExit(ctx, acpsdk.WaitForTerminalExitRequest{SessionId: t.e.sid, TerminalId: t.id})
	if err != nil {
		return editor.ExitStatus{}, fmt.Errorf("terminal/wait_for_exit %s: %w", t.id, err)
	}
	return editor.ExitStatus{Code: res.ExitCode, Signal: deref(res.Signal)}, nil
}

func (t *clientTerminal) Kill(ctx context.Context) error {
	if _, err := t.e.conn.KillTerminal(ctx, acpsdk.KillTerminalRequest{SessionId: t.e.sid, TerminalId: t.id}); err != nil {
		return fmt.Errorf("terminal/kill %s: %w", t.id, err)
	}
	return nil
}

func (t *clientTerminal) Release(ctx context.Context) error {
	if _, err := t.e.conn.ReleaseTerminal(ctx, acpsdk.ReleaseTerminalRequest{SessionId: t.e.sid, TerminalId: t.id}); err != nil {
		return fmt.Errorf("terminal/release %s: %w", t.id, err)
	}
	return nil
}

var _ editor.Elicitor = (*clientEditor)(nil)

// Elicit sends ACP elicitation/create, scoped to the session and, when
// r.ToolCallID is set, to that tool call. acp-go-sdk v0.13.5's request
// types have no sessionId and toolCallId fields (its generator drops the
// session scope of the ACP schema), so Elicit puts them in _meta under
// metaScope and scopeElicitation moves them to where the schema has them
// as the frame is written.
func (e *clientEditor) Elicit(ctx context.Context, r editor.ElicitRequest) (editor.ElicitResult, error) {
	var req acpsdk.UnstableCreateElicitationRequest
	scope := map[string]any{"sessionId": string(e.sid)}
	if r.ToolCallID != "" {
		scope["toolCallId"] = r.ToolCallID
	}
	meta := map[string]any{metaScope: scope}
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
		req.Form.Message, req.Form.Meta = r.Message, meta
	case editor.ModeURL:
		if !e.caps.ElicitURL {
			return editor.ElicitResult{}, errNotOffered("elicitation/create in url mode")
		}
		req = acpsdk.NewUnstableCreateElicitationRequestUrl(acpsdk.UnstableElicitationId(r.ID), r.URL)
		req.Url.Message, req.Url.Meta = r.Message, meta
	default:
		return editor.ElicitResult{}, fmt.Errorf("elicitation/create: unknown mode %q (want %q or %q)", r.Mode, editor.ModeForm, editor.ModeURL)
	}
	res, err := e.conn.UnstableCreateElicitation(ctx, req)
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

// metaScope is the _meta key under which clientEditor.Elicit hands the
// session scope of an elicitation/create to scopeElicitation.
const metaScope = "acp-agent/elicitationScope"

// scopeElicitation returns frame (one JSON-RPC message and its newline) with
// the session scope of an elicitation/create request moved from
// params._meta[metaScope] to params.sessionId and params.toolCallId, as the
// ACP schema has them (ElicitationSessionScope); any other frame is
// returned unchanged.
func scopeElicitation(frame []byte) []byte {
	if !bytes.Contains(frame, []byte(metaScope)) {
		return frame
	}
	var msg map[string]json.RawMessage
	var method string
	if json.Unmarshal(frame, &msg) != nil || json.Unmarshal(msg["method"], &method) != nil || method != acpsdk.ClientMethodElicitationCreate {
		return frame
	}
	var params, meta, scope map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil || json.Unmarshal(params["_meta"], &meta) != nil || json.Unmarshal(meta[metaScope], &scope) != nil {
		return frame
	}
	for k, v := range scope {
		params[k] = v
	}
	delete(meta, metaScope)
	delete(params, "_meta")
	if len(meta) > 0 {
		params["_meta"], _ = json.Marshal(meta)
	}
	var err error
	if msg["params"], err = json.Marshal(params); err != nil {
		return frame
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return frame
	}
	return append(out, '\n')
}

func (e *clientEditor) CompleteElicitation(ctx context.Context, id string) error {
	if !e.caps.ElicitURL {
		return errNotOffered("elicitation/complete")
	}
	if err := e.conn.UnstableCompleteElicitation(ctx, acpsdk.UnstableCompleteElicitationNotification{ElicitationId: acpsdk.UnstableElicitationId(id)}); err != nil {
		return fmt.Errorf("elicitation/complete %s: %w", id, err)
	}
	return nil
}
