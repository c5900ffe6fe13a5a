package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/seed02d3eb6b/acp-agent/sandbox/environ"
)

// entryKeys are the keys of a server entry in the object shape, in the
// order error messages list them.
var entryKeys = []string{"type", "command", "args", "env", "url", "headers"}

// ParseServerEntry reads one entry of the object shape of mcpServers that
// Claude Desktop's config, Claude Code's .mcp.json and acp-agent's config
// share, keyed by server name: {"command", "args", "env"} for stdio
// ("type" absent or "stdio") or {"type": "http"|"sse", "url", "headers"},
// env and headers as objects of strings (sorted by name in the spec). An
// unknown key, a wrong JSON type or a rule of [ServerSpec.Validate] broken
// is a *SpecError whose Field is the key at fault ("" for the entry as a
// whole, "name" for the name).
func ParseServerEntry(name string, raw json.RawMessage) (ServerSpec, error) {
	fail := func(field, rule string, args ...any) (ServerSpec, error) {
		return ServerSpec{}, &SpecError{Server: name, Field: field, Rule: fmt.Sprintf(rule, args...)}
	}
	if err := ValidateServerName(name); err != nil {
		// Before decoding: the key is the name, and the entry's other
		// errors quote it.
		return fail("name", "%v", err)
	}
	var e struct {
		Type    string            `json:"type"`
		Command string            `json:"command"`
		Args    []string          `json:"args"`
		Env     map[string]string `json:"env"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) == nil {
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if !slices.ContainsFunc(entryKeys, func(known string) bool { return strings.EqualFold(k, known) }) { // as encoding/json matches
				return fail(k, "unknown key (valid keys here: %s)", strings.Join(entryKeys, ", "))
			}
		}
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fail(te.Field, "must be %s", te.Type)
		}
		return fail("", `must be {"command": "npx", "args": [...], "env": {"NAME": "value"}} or {"type": "http", "url": "https://…", "headers": {…}}`)
	}
	spec := ServerSpec{Name: name, Transport: Transport(e.Type)}
	switch spec.Transport {
	case "", TransportStdio:
		spec.Transport = TransportStdio
		spec.Command, spec.Args = e.Command, e.Args
		for _, k := range slices.Sorted(maps.Keys(e.Env)) {
			spec.Env = append(spec.Env, environ.Var{Name: k, Value: e.Env[k]})
		}
	case TransportHTTP, TransportSSE:
		spec.URL = e.URL
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			spec.Headers = append(spec.Headers, Header{Name: k, Value: e.Headers[k]})
		}
	}
	if err := spec.Validate(); err != nil {
		return ServerSpec{}, err
	}
	return spec, nil
}
