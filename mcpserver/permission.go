package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// askMode is how a run asks its client to permit a tool call (only calls the
// permissions policy says "ask" about reach it).
type askMode int

const (
	// askNone: the client cannot be asked (no form elicitation capability):
	// the call is refused and the result says so.
	askNone askMode = iota
	// askElicit: elicitation/create sent while the call runs (protocol
	// versions before 2026-07-28).
	askElicit
	// askMRTR: the call returns an input-required result with the
	// elicitation, and the client retries it with the answer (multi
	// round-trip requests, SEP-2322: protocol 2026-07-28 and later).
	askMRTR
)

// mrtrVersion is the first protocol version with multi round-trip requests,
// where a server may not send requests of its own while serving one.
const mrtrVersion = "2026-07-28"

// askModeOf is how the client of req can be asked.
func askModeOf(req *mcp.CallToolRequest) askMode {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil || (caps.Elicitation.Form == nil && caps.Elicitation.URL != nil) {
		return askNone // an empty elicitation capability means form mode
	}
	if protocolVersion(req) >= mrtrVersion {
		return askMRTR
	}
	return askElicit
}

// protocolVersion is the protocol version of req: its _meta's (2026-07-28
// and later), else the session's initialize's, else the latest.
func protocolVersion(req *mcp.CallToolRequest) string {
	if v, ok := req.Params.GetMeta()[mcp.MetaKeyProtocolVersion].(string); ok && v != "" {
		return v
	}
	if p := req.Session.InitializeParams(); p != nil && p.ProtocolVersion != "" {
		return p.ProtocolVersion
	}
	return mrtrVersion
}

// question is one permission question of a turn.
type question struct {
	call   gateway.ToolCallEvent
	id     string // the input request's ID (multi round-trip)
	params *mcp.ElicitParams
	reply  chan gateway.PermissionOutcome // buffered: one answer
}

// parkedAsk is a run waiting for the retried call that answers its question.
type parkedAsk struct {
	r     *run
	q     *question
	since time.Time
}

// askFunc is the turn's gateway.AskFunc.
func (r *run) askFunc() gateway.AskFunc {
	return func(ctx context.Context, req gateway.PermissionRequest) (gateway.PermissionOutcome, error) {
		if r.mode == askNone {
			r.mu.Lock()
			r.refused = append(r.refused, refusedNote(req.Call.Name))
			r.mu.Unlock()
			r.sv.log.Info("tool call refused: the client cannot be asked for permission", "sessionKey", r.key, "tool", req.Call.Name)
			r.log(levelWarning, fmt.Sprintf("tool %s: refused: it needs permission, and this client cannot be asked (no elicitation capability)", req.Call.Name))
			return gateway.PermissionUnavailable, nil
		}
		q := &question{call: req.Call, id: "permission-" + req.Call.ID, params: elicitParams(req.Call), reply: make(chan gateway.PermissionOutcome, 1)}
		select {
		case r.asks <- q:
		case <-ctx.Done():
			return gateway.PermissionCancelled, nil
		}
		select {
		case o := <-q.reply:
			return o, nil
		case <-ctx.Done():
			return gateway.PermissionCancelled, nil
		}
	}
}

// refusedNote is the result's note on a call refused without asking.
func refusedNote(tool string) string {
	return fmt.Sprintf("Refused: the tool %s needs permission (permissions policy \"ask\"), and this MCP client cannot be asked "+
		"(it did not declare the elicitation capability); allow it in acp-agent's config (permissions.allow) to let it run.", tool)
}

// maxArgsShown is the most bytes of a call's arguments a question shows.
const maxArgsShown = 2000

// elicitParams is the form asking to permit call.
func elicitParams(call gateway.ToolCallEvent) *mcp.ElicitParams {
	args, _ := json.Marshal(call.RawInput)
	shown := string(args)
	if len(shown) > maxArgsShown {
		shown = shown[:maxArgsShown] + "…"
	}
	name := call.Name
	if call.Title != "" && call.Title != call.Name {
		name = fmt.Sprintf("%s (%s)", call.Title, call.Name)
	}
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: fmt.Sprintf("acp-agent wants to run the tool %s with the arguments %s. Allow it?", name, shown),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"allow":  map[string]any{"type": "boolean", "title": "Allow", "description": "Run this tool call"},
				"always": map[string]any{"type": "boolean", "title": "Always", "description": "Also allow this tool for the rest of the conversation", "default": false},
			},
			"required": []string{"allow"},
		},
	}
}

// outcome maps an elicitation's result to a permission outcome: accepted
// with allow true runs the call (always: for the rest of the conversation),
// accepted with allow false or declined refuses it, cancelled (dismissed)
// cancels it.
func outcome(res *mcp.ElicitResult) gateway.PermissionOutcome {
	switch res.Action {
	case "accept":
		if allow, _ := res.Content["allow"].(bool); !allow {
			return gateway.PermissionReject
		}
		if always, _ := res.Content["always"].(bool); always {
			return gateway.PermissionAllowAlways
		}
		return gateway.PermissionAllowOnce
	case "decline":
		return gateway.PermissionReject
	}
	return gateway.PermissionCancelled
}

// elicit asks the client of ss with elicitation/create.
func elicit(ctx context.Context, ss *mcp.ServerSession, q *question) gateway.PermissionOutcome {
	res, err := ss.Elicit(ctx, q.params)
	if err != nil {
		return gateway.PermissionCancelled
	}
	return outcome(res)
}

// park keeps r, waiting for the answer to q, under a new unguessable
// requestState, and returns it.
func (sv *conversations) park(r *run, q *question) string {
	state := "perm_" + rand.Text()
	sv.mu.Lock()
	sv.parked[state] = &parkedAsk{r: r, q: q, since: time.Now()}
	sv.mu.Unlock()
	return state
}

// resume answers the question of the run parked under state with the
// input response of a retried call of client with the sessionKey argument
// key, the request req (whose context is ctx) receiving the run's progress
// from then on, and returns the run. The state must have been issued to a
// call of the same client with the same key.
func (sv *conversations) resume(ctx context.Context, req *mcp.CallToolRequest, state, client, key string, responses mcp.InputResponseMap) (*run, error) {
	sv.mu.Lock()
	p := sv.parked[state]
	mine := p != nil && p.r.client == client
	if mine && p.r.inKey == key {
		delete(sv.parked, state)
	}
	sv.mu.Unlock()
	switch {
	case !mine:
		return nil, fmt.Errorf("ask_agent: requestState %q: no turn is waiting for it (it was answered, or expired after %s)", state, sv.opts.IdleTimeout)
	case p.r.inKey != key:
		return nil, fmt.Errorf("ask_agent: requestState %q was issued to a call with another sessionKey than %q", state, key)
	}
	o := gateway.PermissionCancelled
	if res, ok := responses[p.q.id].(*mcp.ElicitResult); ok {
		o = outcome(res)
	} else {
		sv.log.Warn("a retried ask_agent call does not answer the permission question: the tool call is cancelled", "sessionKey", key, "inputRequest", p.q.id)
	}
	// The retried call receives what the turn does once answered: attached
	// before the answer lets it go on.
	p.r.attach(ctx, req)
	p.q.reply <- o
	return p.r, nil
}
