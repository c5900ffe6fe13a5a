package acp

import (
	"encoding/json"
	"fmt"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"
)

// codeInvalidParams is JSON-RPC's invalid params.
const codeInvalidParams = -32602

// sessionMethods are the requests about one session: their params must
// name it (sessionId, a non-empty string). acp-go-sdk decodes a missing one
// as "", which would be answered as an unknown session.
var sessionMethods = map[string]bool{
	acpsdk.AgentMethodSessionPrompt: true, acpsdk.AgentMethodSessionLoad: true,
	acpsdk.AgentMethodSessionResume: true, acpsdk.AgentMethodSessionClose: true,
	acpsdk.AgentMethodSessionSetMode: true, acpsdk.AgentMethodSessionSetConfigOption: true,
	acpsdk.AgentMethodSessionDelete: true, acpsdk.AgentMethodSessionFork: true,
	methodSessionSetTitle: true, methodSetMCPServers: true,
}

// contentTypes are the ACP content block types
// (https://agentclientprotocol.com/protocol/content).
var contentTypes = []string{"text", "image", "audio", "resource_link", "resource"}

// checkParams checks what acp-go-sdk would read wrongly in the params of a
// request: a session method without its sessionId (read as "") and, in
// session/prompt, a content block of a type ACP does not have (read as
// empty text). It returns the invalid-params message, or "", and the
// sessionId of a session method.
func checkParams(method string, params json.RawMessage) (why, sessionID string) {
	why, sessionID = checkSessionParams(method, params)
	if why != "" {
		sessionID = ""
	}
	return why, sessionID
}

func checkSessionParams(method string, params json.RawMessage) (why, id string) {
	if !sessionMethods[method] {
		return "", ""
	}
	var p struct {
		SessionID *json.RawMessage  `json:"sessionId"`
		Prompt    []json.RawMessage `json:"prompt"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", "" // the SDK reports the params' own decoding errors
	}
	switch {
	case p.SessionID == nil:
		return fmt.Sprintf("Invalid params: %s: params.sessionId is required (the id session/new returned)", method), id
	case json.Unmarshal(*p.SessionID, &id) != nil || id == "":
		return fmt.Sprintf("Invalid params: %s: params.sessionId must be a non-empty string, not %s", method, truncate(*p.SessionID)), id
	}
	if method != acpsdk.AgentMethodSessionPrompt {
		return "", id
	}
	for i, raw := range p.Prompt {
		var b struct {
			Type *string `json:"type"`
		}
		if json.Unmarshal(raw, &b) != nil {
			return fmt.Sprintf("Invalid params: session/prompt: params.prompt[%d] must be a content block object", i), id
		}
		if b.Type == nil {
			return fmt.Sprintf("Invalid params: session/prompt: params.prompt[%d] has no type (one of %s)", i, strings.Join(contentTypes, ", ")), id
		}
		known := false
		for _, t := range contentTypes {
			known = known || *b.Type == t
		}
		if !known {
			return fmt.Sprintf("Invalid params: session/prompt: params.prompt[%d] has type %q, which is not an ACP content block (one of %s)", i, *b.Type, strings.Join(contentTypes, ", ")), id
		}
	}
	return "", id
}
