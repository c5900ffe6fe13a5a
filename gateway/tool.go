package gateway

import (
	"context"
	"encoding/json"
	"strings"
)

// Tool is one tool the runner can offer a model: a built-in tool or an extra
// tool registered for a session (for example an MCP tool bridged by package
// bridge). The gateway never needs to know where a tool came from.
//
// A Tool is immutable once registered; Execute may be called concurrently.
type Tool struct {
	// Name is the model-facing name, matching ^[a-zA-Z0-9_-]{1,64}$.
	Name string
	// Label is a human title for display, such as "server/tool". Empty means Name.
	Label string
	// Group names the provider of the tool for display (for a bridged MCP
	// tool, the server name). Empty for built-in tools.
	Group string
	// Description is the tool's description, passed to the model as given.
	Description string
	// InputSchema is the JSON Schema of the arguments object. Nil means
	// {"type":"object"}.
	InputSchema json.RawMessage
	// Annotations are the MCP tool annotations (hints), never nil after
	// registration through a Registry.
	Annotations Annotations
	// Kind is the ACP tool kind shown for the tool's calls (read, edit,
	// search, execute, …). Empty means read for a readOnlyHint tool, else
	// other.
	Kind ToolKind
	// Confined marks a tool whose effects the kernel bounds by the
	// session's mode (the built-in run_command under Landlock): read-only
	// mode lets it run, asking as the policy says, since its writes are
	// refused anyway.
	Confined bool
	// Core marks a tool the model is always offered, never deferred behind
	// tool search (the agent's built-in tools).
	Core bool
	// MaxResultChars, when positive, is the tool's own budget for one
	// result that reaches the model, in characters (MCP
	// _meta["anthropic/maxResultSizeChars"]); 0 means the runner's token
	// budget.
	MaxResultChars int
	// Execute runs the tool. args is never nil (an empty call has {}).
	// onUpdate, if non-nil, receives progress and partial content while the
	// call runs and must not be called after Execute returns. A failure the
	// model should see (bad input, the tool's own error) is a Result with
	// IsError; a returned error means the call could not be carried out
	// (transport or protocol fault, timeout, cancellation).
	Execute func(ctx context.Context, callID string, args map[string]any, onUpdate func(ToolUpdate)) (Result, error)
}

// Title returns Label, or Name when Label is empty.
func (t *Tool) Title() string {
	if t.Label != "" {
		return t.Label
	}
	return t.Name
}

// Annotations are the behaviour hints of a tool, following MCP
// ToolAnnotations (https://modelcontextprotocol.io/specification/2025-11-25/server/tools).
// Hints are advisory: a client must not trust them from an untrusted server
// for anything beyond presentation and asking permission.
type Annotations struct {
	// Title is a human-readable title for the tool.
	Title string `json:"title,omitempty"`
	// ReadOnlyHint says the tool does not modify its environment.
	ReadOnlyHint bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint says the tool may perform destructive updates; nil means
	// the MCP default (true).
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint says repeated calls with the same arguments have no
	// additional effect.
	IdempotentHint bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint says the tool interacts with external entities; nil means
	// the MCP default (true).
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// ToolUpdate is an intermediate report from a running tool call.
type ToolUpdate struct {
	// Progress and Total follow MCP notifications/progress; Total is 0 when
	// unknown.
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	// Message is the progress message, if any.
	Message string `json:"message,omitempty"`
	// Content is partial content to show, if any.
	Content []Content `json:"content,omitempty"`
	// Show is what the client should show of the running call (a live
	// terminal, the files it works on), if anything.
	Show *Show `json:"show,omitempty"`
}

// Result is the outcome of one tool call. Nothing is dropped here: every
// content kind is kept, and each consumer (a model provider, the ACP
// front end) degrades what it cannot carry.
type Result struct {
	// Content holds the result blocks in order.
	Content []Content `json:"content"`
	// Structured is the tool's structured result (MCP structuredContent), or nil.
	Structured any `json:"structured,omitempty"`
	// IsError reports that the tool itself failed (MCP isError); Content
	// carries the tool's explanation.
	IsError bool `json:"isError,omitempty"`
	// Raw is the result as the tool's source produced it (for a bridged MCP
	// tool, the whole CallToolResult), reported to the client as rawOutput.
	// Nil means none.
	Raw any `json:"raw,omitempty"`
	// Show is what the client should show of the call beyond its content
	// (diffs, terminals, locations, a plan), if anything. Models never see
	// it.
	Show *Show `json:"show,omitempty"`
	// Subagent is the child run of a task call (its transcript, kept with
	// the parent's turn for replay), or nil. Models never see it.
	Subagent *Subagent `json:"subagent,omitempty"`
}

// Show is how a client should present a tool call, beyond its content
// blocks, following ACP tool call content and locations
// (https://agentclientprotocol.com/protocol/tool-calls#content) and agent
// plans (https://agentclientprotocol.com/protocol/agent-plan). A tool of a
// trusted in-process server declares it in MCP _meta (see package bridge,
// MetaShow); the ACP front end maps it.
type Show struct {
	// Diffs are the file changes the call made, in order.
	Diffs []Diff `json:"diffs,omitempty"`
	// Terminals are the IDs of client terminals (ACP terminal/create) whose
	// output the call shows.
	Terminals []string `json:"terminals,omitempty"`
	// Locations are the files (and lines) the call works on, for a client
	// that follows along.
	Locations []Location `json:"locations,omitempty"`
	// Plan, when not nil, replaces the session's plan (ACP "plan" update);
	// a Plan without entries clears it.
	Plan *Plan `json:"plan,omitempty"`
}

// Plan is an agent plan: the model's task list, whole.
type Plan struct {
	Entries []PlanEntry `json:"entries"`
}

// Diff is one file change: Path (absolute), the text before (nil for a new
// file) and after.
type Diff struct {
	Path    string  `json:"path"`
	OldText *string `json:"oldText,omitempty"`
	NewText string  `json:"newText"`
}

// Location is a file a call works on: an absolute Path and, when known, a
// 1-based Line (0 means none).
type Location struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty"`
}

// PlanEntry is one task of an agent plan: Content, its Status ("pending",
// "in_progress", "completed") and Priority ("high", "medium", "low").
type PlanEntry struct {
	Content  string `json:"content"`
	Status   string `json:"status"`
	Priority string `json:"priority"`
}

// ContentType names the kind of a Content block, following the MCP content
// types (https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-result).
type ContentType string

// The content kinds of MCP tool results.
const (
	ContentText         ContentType = "text"
	ContentImage        ContentType = "image"
	ContentAudio        ContentType = "audio"
	ContentResourceLink ContentType = "resource_link"
	ContentResource     ContentType = "resource"
)

// Content is one block of a tool result. Which fields are set depends on Type:
//
//   - text: Text
//   - image, audio: Data (raw bytes, not base64) and MIMEType
//   - resource_link: URI, Name, and optionally Title, Description, MIMEType, Size
//   - resource: Resource (an embedded resource with text or a blob)
type Content struct {
	Type        ContentType `json:"type"`
	Text        string      `json:"text,omitempty"`
	Data        []byte      `json:"data,omitempty"`
	MIMEType    string      `json:"mimeType,omitempty"`
	URI         string      `json:"uri,omitempty"`
	Name        string      `json:"name,omitempty"`
	Title       string      `json:"title,omitempty"`
	Description string      `json:"description,omitempty"`
	// Size is the resource size in bytes, or nil when unknown.
	Size     *int64            `json:"size,omitempty"`
	Resource *EmbeddedResource `json:"resource,omitempty"`
	// ModelOnly marks a block added for the model alone: a text block
	// holding the result's structured content (Result.Structured) as JSON,
	// next to the tool's own blocks. A client shows the tool's blocks and
	// has the structured content in Result.Raw (ACP rawOutput), so it
	// leaves this one out rather than show the result twice.
	ModelOnly bool `json:"modelOnly,omitempty"`
}

// EmbeddedResource is the contents of an embedded resource: Text for a text
// resource, Blob (raw bytes) for a binary one.
type EmbeddedResource struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     []byte `json:"blob,omitempty"`
}

// TextContent returns a text Content block.
func TextContent(s string) Content { return Content{Type: ContentText, Text: s} }

// ErrorResult returns a Result with IsError set and msg as its only text.
func ErrorResult(msg string) Result {
	return Result{Content: []Content{TextContent(msg)}, IsError: true}
}

// PromptText joins the text blocks of a user message with newlines.
func PromptText(content []Content) string {
	var parts []string
	for _, c := range content {
		if c.Type == ContentText {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}
