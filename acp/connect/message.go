package connect

import (
	"bytes"
	"encoding/json"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"
)

// message is what the proxy reads of one JSON-RPC message to route it: its
// id, method and params (the sessionId, the mcpServers), or result. The
// message itself is passed on as it was read (raw), unless the proxy must
// change it.
type message struct {
	raw    []byte
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// decode reads raw's routing members; ok is false when raw is not a JSON
// object (it is then passed on untouched, for the peer to answer).
func decode(raw []byte) (m message, ok bool) {
	if err := json.Unmarshal(raw, &m); err != nil {
		return message{raw: raw}, false
	}
	m.raw = raw
	return m, true
}

// hasID reports whether the message carries an id other than null.
func (m message) hasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// isRequest, isNotification and isResponse tell the message's kind by
// JSON-RPC's rules: a method with an id, a method alone, an id alone.
func (m message) isRequest() bool      { return m.Method != "" && m.hasID() }
func (m message) isNotification() bool { return m.Method != "" && len(m.ID) == 0 }
func (m message) isResponse() bool     { return m.Method == "" && len(m.ID) > 0 }

// key returns the message's id as a map key: its JSON text, compacted.
func (m message) key() string { return idKey(m.ID) }

// idKey returns id's JSON text compacted, the key of the tables of calls
// (the peers echo ids as they got them).
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// param returns the string member name of params (sessionId,
// connectionId, acpId), "" when absent or not a string.
func param(params json.RawMessage, name string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[name], &s) != nil {
		return ""
	}
	return s
}

// stringID returns the id as a Go string when it is a JSON string.
func stringID(id json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(id, &s) != nil {
		return "", false
	}
	return s, true
}

// hasIDPrefix reports whether id is a JSON string starting with prefix.
func hasIDPrefix(id json.RawMessage, prefix string) bool {
	s, ok := stringID(id)
	return ok && strings.HasPrefix(s, prefix)
}

// withID returns raw, a JSON object, with its id replaced by id.
func withID(raw []byte, id json.RawMessage) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	obj["id"] = id
	return json.Marshal(obj)
}

// withParams returns raw, a JSON object, with its params replaced.
func withParams(raw []byte, params json.RawMessage) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	obj["params"] = params
	return json.Marshal(obj)
}

// line returns raw as one line for a line-framed peer: without surrounding
// space, compacted when it spans lines (JSON allows newlines between
// tokens; stdio's framing does not), ending in '\n'.
func line(raw []byte) []byte {
	raw = bytes.TrimSpace(raw)
	if bytes.ContainsAny(raw, "\r\n") {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			raw = b.Bytes()
		}
	}
	out := make([]byte, 0, len(raw)+1)
	return append(append(out, raw...), '\n')
}

// request is a JSON-RPC request or notification the proxy sends itself.
type request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  any             `json:"params,omitempty"`
}

// errorResponse is a JSON-RPC error response the proxy sends the editor.
type errorResponse struct {
	JSONRPC string              `json:"jsonrpc"`
	ID      json.RawMessage     `json:"id"`
	Error   acpsdk.RequestError `json:"error"`
}

// result is a JSON-RPC success response the proxy sends the editor.
type result struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result"`
}

// encode marshals v, one of the types above, as a line.
func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil { // the types above always marshal
		panic("acp/connect: " + err.Error())
	}
	return append(b, '\n')
}

// codeInternal is JSON-RPC's internal error, the code of the proxy's own
// error responses (the request could not be carried out; it may be sent
// again).
const codeInternal = -32603

// errorLine is the error response to the editor's request id.
func errorLine(id json.RawMessage, code int, msg string) []byte {
	return encode(errorResponse{JSONRPC: "2.0", ID: id, Error: acpsdk.RequestError{Code: code, Message: msg}})
}

// notice is the schema's Notice update (stable in ACP v1), shown to a
// client that advertised clientCapabilities.session.notices: information
// for the user, not part of the session's history.
type notice struct {
	SessionUpdate string `json:"sessionUpdate"` // "notice"
	Severity      string `json:"severity"`      // info, warning or error
	Title         string `json:"title"`
	Description   string `json:"description,omitempty"`
}

// sessionUpdate is the params of a session/update notification.
type sessionUpdate struct {
	SessionID string `json:"sessionId"`
	Update    any    `json:"update"`
}

// tellLine is the session/update that tells the user of session sid what
// happened: a notice (title, description) for a client that shows them,
// else an agent message (text).
func tellLine(sid string, notices bool, severity, title, text string) []byte {
	var u any = acpsdk.UpdateAgentMessageText(text + "\n")
	if notices {
		u = notice{SessionUpdate: "notice", Severity: severity, Title: title, Description: text}
	}
	return encode(request{JSONRPC: "2.0", Method: acpsdk.ClientMethodSessionUpdate, Params: sessionUpdate{SessionID: sid, Update: u}})
}

// noticesOn reports whether the params of the editor's initialize
// advertise clientCapabilities.session.notices (an object).
func noticesOn(params json.RawMessage) bool {
	v := member(member(member(params, "clientCapabilities"), "session"), "notices")
	var obj map[string]json.RawMessage
	return json.Unmarshal(v, &obj) == nil && obj != nil
}

// resumeOn reports whether the result of the gateway's initialize
// advertises agentCapabilities.sessionCapabilities.resume (an object).
func resumeOn(res json.RawMessage) bool {
	v := member(member(member(res, "agentCapabilities"), "sessionCapabilities"), "resume")
	var obj map[string]json.RawMessage
	return json.Unmarshal(v, &obj) == nil && obj != nil
}

// member returns the member name of the JSON object raw, or nil.
func member(raw json.RawMessage, name string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m[name]
}
