package provider

import (
	"encoding/json"
	"log/slog"
)

// permissiveSchema is what a tool gets when its schema cannot be used.
func permissiveSchema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{}}
}

// Capabilities are what one model API accepts, as data: they drive
// NormalizeSchema and the degradation of rich content (DegradeResult,
// ResultText), so the shared code never switches on which provider it
// serves. Each provider package declares its own. The zero value is a
// text-only API that takes any JSON Schema keyword.
type Capabilities struct {
	// ToolResultImages are the image MIME types the API takes inside a tool
	// result; an image of any other type becomes a text note. Nil means none.
	ToolResultImages map[string]bool
	// RequiredAsList says the API rejects a root "required" that is not an
	// array: NormalizeSchema drops such a "required".
	RequiredAsList bool
}

// NormalizeSchema turns a tool's input schema into one a provider accepts,
// in one place for every provider:
//
//   - the root is an object schema ("type": "object");
//   - "properties" is present, even when empty;
//   - "$schema" (and "$id") are stripped at the root;
//   - with caps.RequiredAsList (OpenAI), "required" is kept only as an array.
//
// A schema that is not a JSON object, or whose root type is not "object",
// falls back to a permissive object schema, and a warning naming the tool is
// logged. The input is not modified.
func NormalizeSchema(caps Capabilities, tool string, raw json.RawMessage, log *slog.Logger) map[string]any {
	if len(raw) == 0 || string(raw) == "null" {
		return permissiveSchema()
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil || s == nil {
		warnSchema(log, tool, "not a JSON object")
		return permissiveSchema()
	}
	delete(s, "$schema")
	delete(s, "$id")
	switch t := s["type"].(type) {
	case nil:
		if _, hasCombinator := firstOf(s, "anyOf", "oneOf", "allOf", "not", "$ref"); hasCombinator {
			warnSchema(log, tool, "the root is a combinator, not an object")
			return permissiveSchema()
		}
		s["type"] = "object"
	case string:
		if t != "object" {
			warnSchema(log, tool, "the root type is "+t+", not object")
			return permissiveSchema()
		}
	default:
		warnSchema(log, tool, "the root type is not a single type")
		return permissiveSchema()
	}
	if _, ok := s["properties"].(map[string]any); !ok {
		s["properties"] = map[string]any{}
	}
	if caps.RequiredAsList {
		if r, ok := s["required"]; ok {
			if _, isList := r.([]any); !isList {
				delete(s, "required")
			}
		}
	}
	return s
}

func firstOf(m map[string]any, keys ...string) (string, bool) {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return k, true
		}
	}
	return "", false
}

func warnSchema(log *slog.Logger, tool, why string) {
	if log != nil {
		log.Warn("tool input schema unusable by the model provider; using a permissive object schema", "tool", tool, "reason", why)
	}
}
