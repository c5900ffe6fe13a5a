package remote

import (
	"bytes"
	"encoding/json"
)

// fields are what the transport reads of a message to route it: its id,
// method, params.sessionId, and result.sessionId (a session/new response).
type fields struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		SessionID string `json:"sessionId"`
	} `json:"params"`
	Result struct {
		SessionID string `json:"sessionId"`
	} `json:"result"`
	hasID bool
}

// readFields reads the routing fields of one JSON-RPC message; ok is false
// when msg is not a JSON object. Params or a result that is not an object
// names no session.
func readFields(msg []byte) (f fields, ok bool) {
	var top struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(msg, &top) != nil {
		return f, false
	}
	f.ID, f.hasID = top.ID, len(top.ID) > 0
	_ = json.Unmarshal(top.Method, &f.Method)
	if bytes.HasPrefix(bytes.TrimSpace(top.Params), []byte("{")) {
		_ = json.Unmarshal(top.Params, &f.Params)
	}
	if bytes.HasPrefix(bytes.TrimSpace(top.Result), []byte("{")) {
		_ = json.Unmarshal(top.Result, &f.Result)
	}
	return f, true
}

// isRequest reports whether the message is a request (a method and an id),
// isResponse whether it is a response (an id and no method).
func (f fields) isRequest() bool  { return f.Method != "" && f.hasID }
func (f fields) isResponse() bool { return f.Method == "" && f.hasID }

// idKey is the key of a JSON-RPC id for matching a response to its
// request: "s:" and the string, "n:" and the number as written, or "" for
// an id that is neither (null, an object).
func idKey(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s:" + s
		}
	case c == '-' || c >= '0' && c <= '9':
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			return "n:" + n.String()
		}
	}
	return ""
}

// sessionScoped are the methods whose requests the RFD scopes to a
// session: their POSTs carry Acp-Session-Id (the SDK's client sends it
// for these, and for any message whose params name a session).
var sessionScoped = map[string]bool{
	"session/cancel": true, "session/close": true, "session/delete": true, "session/fork": true,
	"session/load": true, "session/prompt": true, "session/resume": true,
	"session/set_config_option": true, "session/set_mode": true, "session/set_model": true,
}

// needsLive are the session-scoped methods that drive a session live on
// the connection: for one that is not, the POST is answered 409, which
// the SDK's client takes as "reattach this session (session/load or
// session/resume)".
var needsLive = map[string]bool{
	"session/prompt": true, "session/cancel": true, "session/set_config_option": true,
	"session/set_mode": true, "session/set_model": true,
}
