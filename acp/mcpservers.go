package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/seed02d3eb6b/acp-agent/bridge"
	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
)

// MCPServersError is a structurally broken mcpServers list: the client's bug.
// It names the entry (by index, and by name when it has one), the field and
// the rule it broke. The agent refuses the request with invalid_params.
type MCPServersError struct {
	// Index is the entry's position in mcpServers, or -1 for the list itself.
	Index int
	// Name is the entry's name, when it has a usable one.
	Name string
	// Field is the JSON field at fault, such as "command"; empty for the entry.
	Field string
	// Rule says what was wrong.
	Rule string
}

func (e *MCPServersError) Error() string {
	var b strings.Builder
	b.WriteString("mcpServers")
	if e.Index >= 0 {
		fmt.Fprintf(&b, "[%d]", e.Index)
		if e.Name != "" {
			fmt.Fprintf(&b, " (%q)", e.Name)
		}
	}
	if e.Field != "" {
		b.WriteString(" " + e.Field)
	}
	b.WriteString(": " + e.Rule)
	return b.String()
}

// ParseMCPServers validates the raw JSON of an ACP mcpServers list
// (https://agentclientprotocol.com/protocol/session-setup#mcp-servers) and
// returns one ServerSpec per entry, in order.
//
// It reads the raw JSON itself because acp-go-sdk v0.13.0 decodes some stdio
// entries (no args or env, or an unknown type) as HTTP entries with an empty
// URL. The rules:
//
//   - the list is an array of objects; null or absent means empty;
//   - every entry has a string name, unique in the list, that
//     bridge.ValidateServerName accepts (visible text: not empty, no control
//     or invisible formatting characters);
//   - type is absent or "stdio" for a stdio entry, which needs a non-empty
//     command; args (strings) and env ([{name, value}], or an object of
//     strings) may be absent, meaning empty; env names are non-empty and
//     contain no '=' or NUL;
//   - an "http" or "sse" entry needs a non-empty string url; headers
//     ([{name, value}]) may be absent;
//   - an "acp" entry (MCP-over-ACP, unstable: the client hosts the server
//     on the ACP connection) needs a non-empty string id, given as "id"
//     (acp-go-sdk v0.13's McpServerAcp: the draft binding) or "serverId"
//     (the published schema's McpServerAcp: the published binding); both
//     may be given only with the same value, which selects the draft
//     (mcpacp.go);
//   - any other type string is well-formed: the spec carries it and the
//     bridge reports that one server as failed.
//
// The JSON shape is checked here; the rules every front end shares are
// bridge.ServerSpec.Validate's, whose *bridge.SpecError becomes the
// entry's error. A violation is returned as *MCPServersError.
func ParseMCPServers(raw json.RawMessage) ([]bridge.ServerSpec, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, &MCPServersError{Index: -1, Rule: "must be an array of server objects"}
	}
	specs := make([]bridge.ServerSpec, 0, len(entries))
	seen := make(map[string]int, len(entries))
	for i, e := range entries {
		spec, err := parseEntry(i, e)
		if err != nil {
			return nil, err
		}
		if j, dup := seen[spec.Name]; dup {
			return nil, &MCPServersError{Index: i, Name: spec.Name, Field: "name", Rule: fmt.Sprintf("duplicate name %q (also mcpServers[%d])", spec.Name, j)}
		}
		seen[spec.Name] = i
		specs = append(specs, spec)
	}
	return specs, nil
}

func parseEntry(i int, raw json.RawMessage) (bridge.ServerSpec, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return bridge.ServerSpec{}, &MCPServersError{Index: i, Rule: "must be an object"}
	}
	fail := func(name, field, rule string) (bridge.ServerSpec, error) {
		return bridge.ServerSpec{}, &MCPServersError{Index: i, Name: name, Field: field, Rule: rule}
	}
	var spec bridge.ServerSpec
	if err := decodeField(fields, "name", &spec.Name); err != nil {
		return fail("", "name", err.Error())
	}
	if err := bridge.ValidateServerName(spec.Name); err != nil {
		return fail("", "name", err.Error())
	}
	typ := "stdio"
	if err := decodeField(fields, "type", &typ); err != nil {
		return fail(spec.Name, "type", err.Error())
	}
	spec.Transport = bridge.Transport(typ)
	switch spec.Transport {
	case bridge.TransportStdio:
		if err := decodeField(fields, "command", &spec.Command); err != nil {
			return fail(spec.Name, "command", err.Error())
		}
		if err := decodeField(fields, "args", &spec.Args); err != nil {
			return fail(spec.Name, "args", "must be an array of strings")
		}
		env, err := parseEnv(fields["env"])
		if err != nil {
			return fail(spec.Name, "env", err.Error())
		}
		spec.Env = env
	case bridge.TransportACP:
		if err := parseACPID(fields, &spec); err != nil {
			return fail(spec.Name, spec.ServerIDKey, err.Error())
		}
	case bridge.TransportHTTP, bridge.TransportSSE:
		if err := decodeField(fields, "url", &spec.URL); err != nil {
			return fail(spec.Name, "url", err.Error())
		}
		pairs, err := parsePairs(fields["headers"])
		if err != nil {
			return fail(spec.Name, "headers", err.Error())
		}
		for _, p := range pairs {
			spec.Headers = append(spec.Headers, bridge.Header{Name: p.Name, Value: p.Value})
		}
	}
	if raw, ok := fields["_meta"]; ok {
		t, err := parseMetaTimeouts(raw)
		if err != nil {
			return fail(spec.Name, "_meta."+MetaTimeoutsKey, err.Error())
		}
		spec.Timeouts = t
	}
	// An unknown type is well-formed: the bridge reports that server failed.
	var se *bridge.SpecError
	if err := spec.Validate(); errors.As(err, &se) && !errors.Is(err, bridge.ErrUnsupportedTransport) {
		return fail(spec.Name, se.Field, se.Rule)
	}
	return spec, nil
}

// MetaTimeoutsKey is the key, in an mcpServers entry's _meta, of that
// server's timeouts for this session: {"connect", "toolsList", "toolCall"},
// each a Go duration string ("10s", "2m") or a number of seconds. They
// override the config file's.
const MetaTimeoutsKey = "acp-agent/timeouts"

// parseMetaTimeouts reads MetaTimeoutsKey from an entry's _meta.
func parseMetaTimeouts(raw json.RawMessage) (bridge.Timeouts, error) {
	var meta map[string]json.RawMessage
	if string(raw) == "null" {
		return bridge.Timeouts{}, nil
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return bridge.Timeouts{}, fmt.Errorf("_meta must be an object")
	}
	v, ok := meta[MetaTimeoutsKey]
	if !ok || string(v) == "null" {
		return bridge.Timeouts{}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(v, &fields); err != nil || fields == nil {
		return bridge.Timeouts{}, fmt.Errorf("must be an object like {\"connect\": \"10s\", \"toolsList\": \"10s\", \"toolCall\": \"60s\"}")
	}
	var t bridge.Timeouts
	for key, dst := range map[string]*time.Duration{"connect": &t.Connect, "toolsList": &t.ToolsList, "toolCall": &t.ToolCall} {
		raw, ok := fields[key]
		if !ok {
			continue
		}
		d, err := ParseDuration(raw)
		if err != nil {
			return bridge.Timeouts{}, fmt.Errorf("%s: %v", key, err)
		}
		*dst = d
		delete(fields, key)
	}
	for key := range fields {
		return bridge.Timeouts{}, fmt.Errorf("unknown key %q (want connect, toolsList, toolCall)", key)
	}
	return t, nil
}

// ParseDuration reads a positive duration written as a Go duration string
// ("30s", "2m") or as a number of seconds (30, 0.5).
func ParseDuration(raw json.RawMessage) (time.Duration, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%q is not a positive duration such as \"30s\"", s)
		}
		return d, nil
	}
	var secs float64
	if err := json.Unmarshal(raw, &secs); err != nil || secs <= 0 || secs > 1e6 {
		return 0, fmt.Errorf("must be a positive duration such as \"30s\" or a number of seconds")
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// decodeField decodes fields[key] into dst when present and not null,
// returning an error that says which JSON type was expected.
func decodeField[T any](fields map[string]json.RawMessage, key string, dst *T) error {
	raw, ok := fields[key]
	if !ok || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var zero T
		return fmt.Errorf("must be %s", jsonTypeName(zero))
	}
	return nil
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case []string:
		return "an array of strings"
	}
	return fmt.Sprintf("%T", v)
}

type namedValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// parsePairs decodes an ACP [{name, value}] list; null or absent means empty.
func parsePairs(raw json.RawMessage) ([]namedValue, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("must be an array of {name, value} objects")
	}
	out := make([]namedValue, 0, len(items))
	for j, item := range items {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(item, &fields); err != nil || fields == nil {
			return nil, fmt.Errorf("[%d] must be a {name, value} object", j)
		}
		var p namedValue
		if err := decodeField(fields, "name", &p.Name); err != nil {
			return nil, fmt.Errorf("[%d].name %v", j, err)
		}
		if err := decodeField(fields, "value", &p.Value); err != nil {
			return nil, fmt.Errorf("[%d].value %v", j, err)
		}
		if p.Name == "" {
			return nil, fmt.Errorf("[%d].name must be a non-empty string", j)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseEnv decodes a stdio entry's env (ServerSpec.Validate checks the names
// and values): the ACP [{name, value}] list, or, as
// some clients send, an object of strings (applied in sorted key order).
func parseEnv(raw json.RawMessage) ([]environ.Var, error) {
	var pairs []namedValue
	var obj map[string]string
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("must be an array of {name, value} objects")
		}
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			pairs = append(pairs, namedValue{k, obj[k]})
		}
	} else {
		var err error
		if pairs, err = parsePairs(raw); err != nil {
			return nil, err
		}
	}
	env := make([]environ.Var, 0, len(pairs))
	for _, p := range pairs {
		env = append(env, environ.Var{Name: p.Name, Value: p.Value})
	}
	return env, nil
}

// parseACPID reads the id of an "acp" entry into spec.ServerID, and the key
// it came under into spec.ServerIDKey (see ParseMCPServers).
func parseACPID(fields map[string]json.RawMessage, spec *bridge.ServerSpec) error {
	var id, serverID string
	spec.ServerIDKey = "id"
	if err := decodeField(fields, "id", &id); err != nil {
		return err
	}
	if err := decodeField(fields, "serverId", &serverID); err != nil {
		spec.ServerIDKey = "serverId"
		return err
	}
	switch {
	case id != "" && serverID != "" && id != serverID:
		return fmt.Errorf("differs from serverId %q: give the server's id once, as id or serverId", serverID)
	case id == "" && serverID != "":
		spec.ServerID, spec.ServerIDKey = serverID, "serverId"
	default:
		spec.ServerID = id
	}
	return nil
}
