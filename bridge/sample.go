//lint:file-ignore SA1019 sampling is deprecated from protocol 2026-07-28 but still asked for, as input requests there.

package bridge

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Sampler serves the session's MCP servers' sampling/createMessage with
// the session's model (MCP sampling,
// https://modelcontextprotocol.io/specification/2025-11-25/client/sampling).
// With a Sampler the bridge advertises the sampling capability (without
// tools or context) to every server; without one it advertises none and
// answers a server that sends sampling/createMessage anyway with an error
// (ErrSamplingUnavailable's text). Each request takes a token of the
// server's rate limit, as a tool call does: one over the limit fails
// without calling Sample.
type Sampler struct {
	// Sample asks the user and runs the model; it is called concurrently,
	// from the server's connection. Its ctx ends when the server withdraws
	// the request, the server closes, or the tool call the request belongs
	// to (SampleRequest.CallID) ends. An error is sent to the server as a
	// JSON-RPC error.
	Sample func(ctx context.Context, req SampleRequest) (*mcp.CreateMessageResult, error)
}

// SampleRequest is one server's sampling/createMessage.
type SampleRequest struct {
	// Server is the server's name in the session.
	Server string
	// CallID is the gateway call ID of the tool call the request belongs
	// to: the one call of the server in flight when it arrived; empty when
	// none or several were.
	CallID string
	// CallTitle and CallKind are how that call is shown to the user (its
	// gateway tool's title and kind); empty when CallID is.
	CallTitle string
	CallKind  gateway.ToolKind
	// Params are the server's.
	Params *mcp.CreateMessageParams
}

// ErrSamplingUnavailable is the text of the error a server gets for
// sampling/createMessage when the session offers no sampling (no model is
// configured: direct mode, or a front end that cannot ask the user).
const ErrSamplingUnavailable = "acp-agent: sampling is not available: the session has no model to sample with (direct mode) or no user to ask; sampling was not advertised"

// methodCreateMessage is MCP's sampling request.
const methodCreateMessage = "sampling/createMessage"

// refuseSampling is the client middleware of a bridge without a Sampler:
// sampling/createMessage gets a clear error instead of the go-sdk's
// "client does not support CreateMessage".
func (s *client) refuseSampling(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != methodCreateMessage {
			return next(ctx, method, req)
		}
		s.log.Info("refused a sampling request: sampling is not available in this session")
		// Invalid Request, not Method Not Found: the go-sdk replaces the
		// message of the latter with its own.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("MCP server %q: %s", s.spec.Name, ErrSamplingUnavailable)}
	}
}

// onSample serves the server's sampling/createMessage through
// Options.Sampler, under the server's rate limit.
func (s *client) onSample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if err := s.limiter.Allow(); err != nil {
		s.log.Warn("refused a sampling request over the rate limit", "err", err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "sampling/createMessage: " + gateway.ErrorText(err)}
	}
	if req.Params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("MCP server %q: sampling/createMessage has no params", s.spec.Name)}
	}
	r := SampleRequest{Server: s.spec.Name, Params: req.Params}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if call := s.calls.only(); call != nil {
		r.CallID, r.CallTitle, r.CallKind = call.id, call.title, call.kind
		defer context.AfterFunc(call.ctx, func() { cancel(context.Cause(call.ctx)) })()
	}
	res, err := s.opts.Sampler.Sample(ctx, r)
	switch {
	case err != nil:
		s.log.Info("sampling request failed", "call", r.CallID, "err", err)
		return nil, err
	case res == nil:
		return nil, fmt.Errorf("MCP server %q: sampling: no result", s.spec.Name)
	}
	return res, nil
}
