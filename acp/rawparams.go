package acp

import (
	"encoding/json"
)

// metaRawMCPServers is the _meta key under which the framing layer hands the
// client's mcpServers JSON to the Agent.
const metaRawMCPServers = "acp-agent/rawMcpServers"

// moveMCPServers rewrites the params of a session/new, session/load or
// session/resume request (msg is the request's top-level object): it moves
// params.mcpServers into params._meta[metaRawMCPServers] and leaves an empty
// list in its place, so the SDK's decoder (which mis-decodes some stdio
// entries) never sees the entries, and the Agent parses the client's own JSON
// with ParseMCPServers. A client-sent value under that _meta key is dropped.
// It reports whether msg changed; params it cannot read are left for the SDK
// to refuse.
func moveMCPServers(msg map[string]json.RawMessage) bool {
	var params map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil || params == nil {
		return false
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &meta) != nil || meta == nil {
			return false // not an object: let the SDK refuse it
		}
	}
	_, forged := meta[metaRawMCPServers]
	servers, ok := params["mcpServers"]
	hasServers := ok && string(servers) != "null"
	if !forged && !hasServers {
		return false
	}
	delete(meta, metaRawMCPServers)
	if hasServers {
		meta[metaRawMCPServers] = servers
		params["mcpServers"] = json.RawMessage("[]")
	}
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return false
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return false
	}
	return true
}

// rawMCPServers returns the client's mcpServers JSON stashed in meta by the
// framing layer (moveMCPServers), or nil.
func rawMCPServers(meta map[string]any) (json.RawMessage, error) {
	v, ok := meta[metaRawMCPServers]
	if !ok {
		return nil, nil
	}
	return json.Marshal(v)
}
