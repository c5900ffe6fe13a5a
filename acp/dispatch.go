package acp

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/seed02d3eb6b/acp-agent/internal/mcpacp"
	"github.com/seed02d3eb6b/acp-agent/session"
)

// The dispatch table: every ACP method the Agent serves, and how each
// decodes its params. The connection's engine calls conn.dispatch, which
// runs the entry of the method; the entries are the Agent's handlers.

// method is one entry of the dispatch table: it decodes params and handles
// the call. A notification's result is dropped by the engine.
type method func(ctx context.Context, params json.RawMessage) (any, error)

// methods returns the dispatch table: every ACP method the agent serves,
// by name. A method not in it is method_not_found (framing drops a
// notification of one before the engine sees it).
func (a *Agent) methods() map[string]method {
	return map[string]method{
		acpsdk.AgentMethodInitialize:             typed(a.initialize),
		acpsdk.AgentMethodAuthenticate:           typed(a.authenticate),
		acpsdk.AgentMethodLogout:                 typed(a.logout),
		acpsdk.AgentMethodSessionNew:             withServers(a.newSession),
		acpsdk.AgentMethodSessionLoad:            withServers(a.loadSession),
		acpsdk.AgentMethodSessionResume:          withServers(a.resumeSession),
		acpsdk.AgentMethodSessionList:            typed(a.listSessions),
		acpsdk.AgentMethodSessionClose:           typed(a.closeSession),
		acpsdk.AgentMethodSessionDelete:          typed(a.deleteSession), // lifecycle.go
		acpsdk.AgentMethodSessionFork:            withServers(a.forkSession),
		methodSessionSetTitle:                    typed(a.setSessionTitle),
		acpsdk.AgentMethodSessionSetMode:         typed(a.setSessionMode),
		acpsdk.AgentMethodSessionSetConfigOption: typed(a.setSessionConfigOption),
		acpsdk.AgentMethodSessionPrompt:          a.promptEntry, // session.go
		acpsdk.AgentMethodSessionCancel:          typed(a.cancel),
		methodMCPMessage:                         a.mcpMessage,                 // mcpacp.go
		methodSetMCPServers:                      withServers(a.setMCPServers), // servers.go
	}
}

// dispatch is the engine's handler (acpsdk.MethodHandler): it runs the
// method's entry of the Agent's table, on a goroutine of handlers (whose
// stacks have grown already: acp-go-sdk's goroutine per request starts
// small, and a turn runs deep), and maps its error to the JSON-RPC error the
// client gets (toRequestError). A call (a request, as the framing layer
// counted it) is recorded as answered when its context ends, which the
// engine does once the response is written.
func (c *conn) dispatch(ctx context.Context, name string, params json.RawMessage) (any, *acpsdk.RequestError) {
	if isCall(name, params) {
		// Both end with the engine's context, after the response is
		// written: the handler's context must not end before (Agent.open
		// waits for it to send what follows a session/new response). One
		// goroutine runs them and the handler's afterAnswered funcs, those
		// before the call counts as answered: at the end of input Serve
		// waits for the count, so what they send (a held title) is written
		// before the connection closes.
		tracked, done := c.calls.track(ctx)
		hooks := &answeredHooks{}
		context.AfterFunc(ctx, func() {
			done()
			hooks.run()
			c.calls.answered()
		})
		ctx = context.WithValue(tracked, answeredKey{}, hooks)
	}
	m, ok := c.table[name]
	if !ok {
		return nil, acpsdk.NewMethodNotFound(name)
	}
	var res any
	var err error
	c.handlers.Do(func() { res, err = m(ctx, params) })
	if err != nil {
		var re *acpsdk.RequestError
		if !errors.As(toRequestError(err), &re) {
			re = acpsdk.NewInternalError(map[string]any{"error": err.Error()})
		}
		return nil, re
	}
	return res, nil
}

// answeredHooks are the funcs to run once a call's response is written
// (afterAnswered). Safe for concurrent use.
type answeredHooks struct {
	mu  sync.Mutex
	fs  []func()
	ran bool
}

// answeredKey is the context key of a call's answeredHooks.
type answeredKey struct{}

// run runs the funcs added so far, in order; any added later runs at once.
func (h *answeredHooks) run() {
	h.mu.Lock()
	fs := h.fs
	h.fs, h.ran = nil, true
	h.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// afterAnswered runs f once the response of the call whose handler has
// context ctx is written, on the one goroutine dispatch starts for the
// call then, after the funcs added before it and before the call counts
// as answered: context.AfterFunc would start a goroutine per func. f must not wait for another call's answer.
// Outside a call's handler (no hooks in ctx), or once the response is
// written, it is context.AfterFunc(ctx, f).
func afterAnswered(ctx context.Context, f func()) {
	if h, ok := ctx.Value(answeredKey{}).(*answeredHooks); ok {
		h.mu.Lock()
		if !h.ran {
			h.fs = append(h.fs, f)
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
	}
	context.AfterFunc(ctx, f)
}

// isCall reports whether a message of method with params is a call, which
// must be answered: every request but session/cancel (a notification in
// ACP), a published mcp/message (serverId, no connectionId: the agent
// receives only its notifications, and framing answers a request of it
// itself, mcpacp.go) and a draft mcp/message carrying an MCP notification.
// The framing layer counts requests by the same rule (and drops a
// notification that is a call by it), so the count of calls read and
// answered is exact.
func isCall(method string, params json.RawMessage) bool {
	switch method {
	case acpsdk.AgentMethodSessionCancel, "$/cancel_request":
		return false
	case methodMCPMessage:
		if _, published := mcpacp.Published(params); published {
			return false
		}
		var p struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(params, &p)
		return !strings.HasPrefix(p.Method, mcpNotificationPrefix)
	}
	return true
}

// typed is the entry of a method whose params decode into acp-go-sdk's
// type P: a decoding or validation error is invalid_params, as acp-go-sdk
// answers it.
func typed[P, R any](f func(context.Context, P) (R, error)) method {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p P
		if err := decodeParams(raw, &p); err != nil {
			return nil, err
		}
		return f(ctx, p)
	}
}

// decodeParams decodes raw into p (a pointer to acp-go-sdk's params type)
// and validates it when the type has a Validate method, as acp-go-sdk's
// agent side does. A fault is invalid_params naming the member in the
// schema's words ("params.prompt must be an array, not a string"), not Go's.
func decodeParams(raw json.RawMessage, p any) error {
	if err := json.Unmarshal(raw, p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return session.Invalidf("params.%s must be %s, not %s", te.Field, jsonKind(te.Type), withArticle(te.Value))
		}
		return session.Invalidf("params: %v", err)
	}
	if v, ok := p.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			if msg := err.Error(); memberFirst.MatchString(msg) {
				return session.Invalidf("params.%s", msg) // "cwd is required"
			}
			return session.Invalidf("params: %v", err)
		}
	}
	return nil
}

// memberFirst matches acp-go-sdk's validation messages that start with
// the member they are about.
var memberFirst = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]* `)

// jsonKind names the JSON value that decodes into t.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another JSON value"
}

// withArticle is encoding/json's name of a JSON value ("string",
// "number 3", "array") with its article.
func withArticle(v string) string {
	switch {
	case strings.HasPrefix(v, "array"), strings.HasPrefix(v, "object"):
		return "an " + v
	case v == "bool":
		return "a boolean"
	}
	return "a " + v
}

// withServers is the entry of session/new, session/load, session/resume
// and session/fork: acp-go-sdk's type P for every member but mcpServers,
// which goes to f as the client's own JSON (acp-go-sdk's decoder misreads
// some stdio entries; ParseMCPServers reads them as the schema has them).
// The framing layer has already refused a key that encoding/json could
// read as mcpServers.
func withServers[P, R any](f func(context.Context, P, json.RawMessage) (R, error)) method {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var members map[string]json.RawMessage
		if err := json.Unmarshal(raw, &members); err != nil {
			return nil, acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
		}
		servers := members["mcpServers"]
		if string(servers) == "null" {
			servers = nil
		}
		if members != nil && servers != nil {
			members["mcpServers"] = json.RawMessage("[]")
			var err error
			if raw, err = json.Marshal(members); err != nil {
				return nil, acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
			}
		}
		var p P
		if err := decodeParams(raw, &p); err != nil {
			return nil, err
		}
		return f(ctx, p, servers)
	}
}
