package acp

import (
	"context"
	"errors"

	acpsdk "github.com/coder/acp-go-sdk"
)

// Errors the Agent returns; toRequestError maps them to JSON-RPC errors.
var (
	// ErrUnknownSession: the sessionId names no live session of this process.
	ErrUnknownSession = errors.New("unknown sessionId")
	// ErrShuttingDown: the agent is closing and takes no new sessions.
	ErrShuttingDown = errors.New("agent is shutting down")
	// ErrInvalidParams marks any other request the client got wrong.
	ErrInvalidParams = errors.New("invalid params")
)

// toRequestError maps a Go error to the ACP (JSON-RPC) error sent to the
// client, in one place: the client's mistakes are invalid_params (-32602)
// with a message naming the field and the rule, cancellation is "request
// cancelled" (-32800), anything else is an internal error (-32603).
func toRequestError(err error) error {
	if err == nil {
		return nil
	}
	var re *acpsdk.RequestError
	if errors.As(err, &re) {
		return re
	}
	var mse *MCPServersError
	switch {
	case errors.As(err, &mse), errors.Is(err, ErrUnknownSession), errors.Is(err, ErrInvalidParams):
		return &acpsdk.RequestError{Code: -32602, Message: "Invalid params: " + err.Error(), Data: map[string]any{"error": err.Error()}}
	case errors.Is(err, context.Canceled):
		return acpsdk.NewRequestCancelled(map[string]any{"error": err.Error()})
	}
	return acpsdk.NewInternalError(map[string]any{"error": err.Error()})
}
