package gateway

import "context"

// Sampler is a Gateway that can run one model call outside any turn, for
// the session's MCP servers (MCP sampling/createMessage,
// https://modelcontextprotocol.io/specification/2025-11-25/client/sampling).
// runner.Local implements it; the sessions of a Gateway that does not
// offer their servers no sampling. Methods are safe for concurrent use.
type Sampler interface {
	// CanSample reports whether the model with ID model ("" means the
	// default) can answer a sampling request: false for the direct
	// provider (no model) and for an unknown ID.
	CanSample(model string) bool
	// Sample runs one completion of req.Model with req's system prompt
	// and messages and no tools, and returns the assistant message. It
	// touches no session's conversation and streams nothing. An error
	// when the model cannot sample (see CanSample) or the provider fails.
	Sample(ctx context.Context, req SampleRequest) (*Response, error)
}

// SampleRequest is one sampling call.
type SampleRequest struct {
	// Model is the model's ID; "" means the default.
	Model string
	// System is the system prompt, or "".
	System string
	// Messages are the user and assistant messages to complete, oldest
	// first (text and image content).
	Messages []Message
	// MaxTokens caps the answer; 0 means the provider's own setting.
	MaxTokens int64
	// Purpose says what the call is for (Request.Purpose); "" means
	// PurposeSampling.
	Purpose string
}
