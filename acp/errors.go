package acp

import (
	"context"
	"errors"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/gateway"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// Errors the Agent returns; toRequestError maps them to JSON-RPC errors.
var (
	// ErrUnknownSession: the sessionId names no session the agent knows
	// (live, for most methods; stored, for session/load and session/resume).
	// It is answered with ACP's resource-not-found error (-32002).
	ErrUnknownSession = errors.New("unknown sessionId")
	// ErrShuttingDown: the agent is closing and takes no new sessions.
	ErrShuttingDown = session.ErrClosed
	// ErrInvalidParams marks any other request the client got wrong: an
	// error made by session.Invalidf, whose text is the cause alone; the
	// JSON-RPC message is "Invalid params: " and that text.
	ErrInvalidParams = session.ErrInvalid
)

// codeResourceNotFound is ACP's "Resource not found" error code
// (https://agentclientprotocol.com/protocol/schema#errorcode); acp-go-sdk
// has no constructor for it.
const codeResourceNotFound = -32002

// unknownSession is ErrUnknownSession naming the sessionId; why, if not
// empty, says more ("the session was closed").
func unknownSession(id acpsdk.SessionId, why string) error {
	if why == "" {
		return fmt.Errorf("%w %q", ErrUnknownSession, id)
	}
	return fmt.Errorf("%w %q: %s", ErrUnknownSession, id, why)
}

// toRequestError maps a Go error to the ACP (JSON-RPC) error sent to the
// client, in one place. The code says the class: the client's mistakes are
// invalid_params (-32602), an unknown sessionId is resource-not-found
// (-32002), cancellation is "request cancelled" (-32800), anything else is
// an internal error (-32603). The message is the class's title followed by
// the cause ("Invalid params: cwd \"/x\" does not exist") and what to do,
// where the error has a remedy (gateway.ErrorText: a session store's file,
// for a prompt whose turn could not be stored or session/load; a server
// name taken), the title said once; data.error repeats the cause.
func toRequestError(err error) error {
	if err == nil {
		return nil
	}
	var re *acpsdk.RequestError
	if errors.As(err, &re) {
		return re
	}
	var mse *MCPServersError
	code, title := -32603, "Internal error"
	switch {
	case errors.As(err, &mse), errors.Is(err, ErrInvalidParams):
		code, title = -32602, "Invalid params"
	case errors.Is(err, ErrUnknownSession):
		code, title = codeResourceNotFound, "Resource not found"
	case errors.Is(err, context.Canceled):
		return acpsdk.NewRequestCancelled(map[string]any{"error": err.Error()})
	}
	cause := gateway.ErrorText(err)
	return &acpsdk.RequestError{Code: code, Message: title + ": " + cause, Data: map[string]any{"error": cause}}
}
