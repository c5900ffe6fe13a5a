package gateway

import (
	"context"
	"encoding/json"
)

// Role is the author of a Message.
type Role string

// The roles of a conversation.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of a conversation.
type Message struct {
	Role Role `json:"role"`
	// Content is the text (and other blocks) of a user or assistant message.
	Content []Content `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asked for, in order.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// Thinking is the model's reasoning that came with an assistant message,
	// and ThinkingSignature the provider's signature over it (Anthropic needs
	// both back in the history of a tool-using turn). Empty when none.
	Thinking          string `json:"thinking,omitempty"`
	ThinkingSignature string `json:"thinkingSignature,omitempty"`
	// Replay is provider state that came with an assistant message and goes
	// back to the same provider and model in later requests (the OpenAI
	// Responses API's reasoning items); nil when none. Other providers
	// ignore it.
	Replay *Replay `json:"replay,omitempty"`
	// ToolCallID, ToolName and Result are set on a tool message: the result
	// of the call with that ID. ToolTitle and ToolKind are how the call was
	// shown (its tool_call), kept so a stored session can be replayed.
	ToolCallID string   `json:"toolCallId,omitempty"`
	ToolName   string   `json:"toolName,omitempty"`
	ToolTitle  string   `json:"toolTitle,omitempty"`
	ToolKind   ToolKind `json:"toolKind,omitempty"`
	Result     *Result  `json:"result,omitempty"`
	// ServerCompaction, on an assistant message, is the provider's own
	// compaction of the conversation that came with it; nil when none.
	ServerCompaction *ServerCompaction `json:"serverCompaction,omitempty"`
}

// Replay is opaque provider state kept with an assistant message
// (Message.Replay), stored with the conversation and sent back only to the
// provider and model that made it.
type Replay struct {
	// Provider and Model name who made Items, such as "openai-responses"
	// and "gpt-5".
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
	// Items are the provider's own JSON objects, in the order it sent them.
	Items []json.RawMessage `json:"items"`
}

// ToolCall is a model's request to call a tool.
type ToolCall struct {
	// ID is unique within the session.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Args is the arguments object, never nil.
	Args map[string]any `json:"args"`
}

// Request is what the runner asks a provider for one model turn.
type Request struct {
	// System is the system prompt, or "".
	System string
	// Messages is the whole conversation so far, oldest first.
	Messages []Message
	// Tools are the tools the model may call this turn, in an order that
	// does not change between requests of a session (the prompt cache's
	// prefix).
	Tools []*Tool
	// CacheKey identifies the session for the provider's prompt cache
	// routing (OpenAI prompt_cache_key), or "". It is stable for a session
	// and reveals nothing of it.
	CacheKey string
	// MaxTokens caps this request's output; 0 means the provider's own
	// setting.
	MaxTokens int64
	// Thinking turns extended thinking on or off for this request, where
	// the provider is a Thinker; nil leaves it to the provider's options.
	Thinking *bool
	// Purpose says what the request is for, when it is not a turn's own
	// model request (""): PurposeSummary, PurposeSampling or PurposeTitle.
	// Providers send it as the PurposeHeader HTTP header, for the proxies
	// and logs between the agent and the API.
	Purpose string
	// Command is the turn's slash command (SendRequest.Command) when the
	// runner hands the turn to the provider that answers commands (the
	// direct provider); nil on every request to a model, which ignores it.
	Command *Command
	// Context, if set, asks the provider (a ContextManager that manages
	// its Strategy) to manage the context on its side; nil leaves it to
	// the runner.
	Context *ContextManagement
}

// The purposes of a model request besides a turn's (Request.Purpose).
const (
	// PurposeSummary: a compaction's summary of the conversation.
	PurposeSummary = "summary"
	// PurposeSampling: an MCP server's sampling/createMessage.
	PurposeSampling = "sampling"
	// PurposeTitle: a session's title, written by the model after its
	// first turn.
	PurposeTitle = "title"
)

// PurposeHeader is the HTTP header of a model request that carries its
// Request.Purpose; a turn's own requests have none.
const PurposeHeader = "X-Acp-Agent-Purpose"

// Response is a provider's answer for one model turn.
type Response struct {
	// Message is the assistant message (text and tool calls).
	Message Message
	// StopReason is why the model stopped; empty means StopEndTurn, or "call
	// the tools" when Message has ToolCalls.
	StopReason StopReason
	// Usage is the request's usage as the provider reported it (Requests 1;
	// the runner prices it). Zero when the provider reports none.
	Usage Usage
}

// Provider is a model: given the conversation and the tools, it produces the
// next assistant message, streaming its text through emit as it goes
// (EventTextDelta, EventThoughtDelta). Complete must return promptly once ctx
// is done; it may then return the partial message it has streamed so far
// with ctx's error. It is safe for concurrent use.
type Provider interface {
	// Name identifies the provider in messages, such as "direct" or "anthropic".
	Name() string
	Complete(ctx context.Context, req *Request, emit func(Event)) (*Response, error)
}

// Thinker is a Provider whose requests can turn extended thinking on or
// off (Request.Thinking).
type Thinker interface {
	Provider
	// ThinksByDefault reports whether a request that leaves
	// Request.Thinking nil thinks.
	ThinksByDefault() bool
}

// Model is one model a session can use.
type Model struct {
	// ID identifies the model in SendRequest.Model and in the session's
	// config option, such as "anthropic:claude-sonnet-4-5" or "direct".
	ID string
	// Label is the name shown to the user.
	Label    string
	Provider Provider
	// ContextWindow is the model's context window in tokens; 0 means
	// unknown, and the runner then never compacts before a request (only
	// when the provider answers that the prompt is too long).
	ContextWindow int64
	// Pricing is the model's price, or nil when unknown (no cost is
	// reported).
	Pricing *Pricing
}

// WindowReporter is a Provider that can ask its endpoint for the context
// window of its model (Anthropic's Models API max_input_tokens; an
// OpenAI-compatible server's model list, where vLLM, OpenRouter and LM
// Studio give it). The runner asks once per model, when the model's
// ContextWindow is not known.
type WindowReporter interface {
	// ReportedWindow returns the model's context window in tokens, or 0
	// when the endpoint does not say. It returns promptly once ctx is done.
	ReportedWindow(ctx context.Context) (int64, error)
}
