package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// Elicitor asks the session's user for input on behalf of its MCP servers
// (MCP elicitation, https://modelcontextprotocol.io/specification/2025-11-25/client/elicitation).
// The bridge advertises the elicitation capability to every server with
// exactly the modes set here, and answers elicitation/create in a mode not
// set with an Invalid Params error, without calling Elicit.
type Elicitor struct {
	// Form and URL are the modes the user can be asked in.
	Form, URL bool
	// Elicit asks the user; it is called concurrently, from the server's
	// connection. Its ctx ends when the server withdraws the request, the
	// server closes, or the tool call the request belongs to
	// (ElicitRequest.CallID) ends; then the server is answered "cancel"
	// whatever Elicit returns. An error is sent to the server as a JSON-RPC
	// error.
	Elicit func(ctx context.Context, req ElicitRequest) (*mcp.ElicitResult, error)
	// Complete, if non-nil, is told that the out-of-band interaction of a
	// URL-mode elicitation the server sent through Elicit has finished
	// (notifications/elicitation/complete). Completions of IDs the server
	// did not send are dropped.
	Complete func(ctx context.Context, server, elicitationID string)
}

// ElicitRequest is one server's elicitation/create.
type ElicitRequest struct {
	// Server is the server's name in the session.
	Server string
	// CallID is the gateway call ID of the tool call the request belongs
	// to: the one call of the server in flight when it arrived; empty when
	// none or several were.
	CallID string
	// Params are the server's; Mode is always set ("form" or "url").
	// RequestedSchema (form mode) is as the server sent it, with defaults
	// and enums, and holds no property that looks like a secret.
	Params *mcp.ElicitParams
}

func (e *Elicitor) modes() *mcp.ElicitationCapabilities {
	if e == nil || e.Elicit == nil || !e.Form && !e.URL {
		return nil
	}
	c := &mcp.ElicitationCapabilities{}
	if e.Form {
		c.Form = &mcp.FormElicitationCapabilities{}
	}
	if e.URL {
		c.URL = &mcp.URLElicitationCapabilities{}
	}
	return c
}

// maxPendingURLs bounds the URL-mode elicitation IDs a server has sent and
// not completed that the bridge remembers.
const maxPendingURLs = 256

// inflight are a server's tool calls in flight, and its URL-mode
// elicitations waiting for completion. The zero value has none.
type inflight struct {
	// mu guards calls and urls. It is never held with another lock of the
	// bridge, nor across a request.
	mu    sync.Mutex
	calls map[*inflightCall]struct{}
	urls  map[string]struct{} // elicitation IDs sent to the user, not completed
}

type inflightCall struct {
	callInfo
	ctx context.Context
}

// callInfo is a tool call as the gateway knows it: its call ID, and how it
// is shown to the user (title and kind). newBridgedTool puts it in the
// call's ctx.
type callInfo struct {
	id    string
	title string
	kind  gateway.ToolKind
}

type callInfoKey struct{}

// withCall returns ctx carrying c.
func withCall(ctx context.Context, c callInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, c)
}

// add registers a call until the returned func is called.
func (f *inflight) add(ctx context.Context) func() {
	info, _ := ctx.Value(callInfoKey{}).(callInfo)
	c := &inflightCall{callInfo: info, ctx: ctx}
	f.mu.Lock()
	if f.calls == nil {
		f.calls = make(map[*inflightCall]struct{})
	}
	f.calls[c] = struct{}{}
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.calls, c)
		f.mu.Unlock()
	}
}

// only returns the one call in flight, or nil.
func (f *inflight) only() *inflightCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) != 1 {
		return nil
	}
	for c := range f.calls {
		return c
	}
	return nil
}

func (f *inflight) sentURL(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.urls == nil {
		f.urls = make(map[string]struct{})
	}
	if len(f.urls) >= maxPendingURLs {
		for k := range f.urls {
			delete(f.urls, k)
			break
		}
	}
	f.urls[id] = struct{}{}
}

func (f *inflight) completedURL(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.urls[id]
	delete(f.urls, id)
	return ok
}

// elicitError is the Invalid Params error a server gets for an
// elicitation the bridge refuses.
func elicitError(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// onElicit serves the server's elicitation/create through Options.Elicitor.
func (s *client) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	el := s.opts.Elicitor
	p := *req.Params
	if p.Mode == "" {
		p.Mode = "form"
		if p.URL != "" || p.ElicitationID != "" {
			p.Mode = "url"
		}
	}
	switch {
	case p.Mode == "form" && !el.Form, p.Mode == "url" && !el.URL:
		return nil, elicitError("MCP server %q: elicitation mode %q was not advertised (the client does not serve it)", s.spec.Name, p.Mode)
	case p.Mode == "form":
		if field := secretField(p.RequestedSchema); field != "" {
			s.log.Warn("refused a form elicitation asking for a secret", "field", field)
			return nil, elicitError("MCP server %q: form elicitation asks for %q, which looks like a secret; form mode must not collect secrets (passwords, tokens, API keys): use URL mode", s.spec.Name, field)
		}
	case p.Mode == "url":
		if p.ElicitationID == "" {
			return nil, elicitError("MCP server %q: URL elicitation has no elicitationId", s.spec.Name)
		}
	default:
		return nil, elicitError("MCP server %q: unknown elicitation mode %q", s.spec.Name, p.Mode)
	}
	r := ElicitRequest{Server: s.spec.Name, Params: &p}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if call := s.calls.only(); call != nil {
		r.CallID = call.id
		defer context.AfterFunc(call.ctx, func() { cancel(context.Cause(call.ctx)) })()
	}
	if p.Mode == "url" {
		s.calls.sentURL(p.ElicitationID)
	}
	res, err := el.Elicit(ctx, r)
	if p.Mode == "url" && (err != nil || ctx.Err() != nil || res == nil || res.Action != "accept") {
		s.calls.completedURL(p.ElicitationID) // nothing out of band will complete
	}
	switch {
	case ctx.Err() != nil:
		s.log.Info("elicitation cancelled before the user answered", "mode", p.Mode, "call", r.CallID, "cause", context.Cause(ctx))
		return &mcp.ElicitResult{Action: "cancel"}, nil
	case err != nil:
		s.log.Warn("elicitation failed", "mode", p.Mode, "err", err)
		return nil, fmt.Errorf("MCP server %q: asking the user: %w", s.spec.Name, err)
	case res == nil:
		return nil, fmt.Errorf("MCP server %q: asking the user: no answer", s.spec.Name)
	}
	return res, nil
}

// onElicitComplete forwards notifications/elicitation/complete of a URL
// elicitation the server sent to Elicitor.Complete.
func (s *client) onElicitComplete(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
	el := s.opts.Elicitor
	if req.Params == nil || el.Complete == nil {
		return
	}
	id := req.Params.ElicitationID
	if !s.calls.completedURL(id) {
		s.log.Info("dropped the completion of an elicitation the server did not send", "elicitationId", id)
		return
	}
	el.Complete(ctx, s.spec.Name, id)
}

// secretWords are the parts of a property name or title that mark a secret
// (compared without case, spaces, '_' and '-').
var secretWords = []string{"password", "passwd", "passphrase", "secret", "apikey", "privatekey", "credential"}

// secretField returns the first property (in name order) of a form's
// requested schema that asks for a secret, or "". MCP 2025-11-25 has no
// marker for sensitive fields and forbids asking for them in form mode
// (servers MUST NOT request sensitive information through form mode, and
// the ACP elicitation RFD likewise): a property is taken as secret when it
// is writeOnly, has format "password", or its name or title names a
// password, passphrase, secret, API key, private key, credential or token.
func secretField(schema any) string {
	var s struct {
		Properties map[string]struct {
			Title     string `json:"title"`
			Format    string `json:"format"`
			WriteOnly bool   `json:"writeOnly"`
		} `json:"properties"`
	}
	b, err := json.Marshal(schema)
	if err != nil || json.Unmarshal(b, &s) != nil {
		return ""
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := s.Properties[name]
		if p.WriteOnly || strings.EqualFold(p.Format, "password") || secretWord(name) || secretWord(p.Title) {
			return name
		}
	}
	return ""
}

func secretWord(s string) bool {
	s = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '_', '-', '.':
			return -1
		}
		return r
	}, strings.ToLower(s))
	for _, w := range secretWords {
		if strings.Contains(s, w) {
			return true
		}
	}
	return strings.HasSuffix(s, "token")
}
