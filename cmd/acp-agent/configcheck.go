package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// ConfigError is a config file mistake: the full key path
// ("timeouts.connect", "servers.github.timeouts.toolCall",
// "mcpServers[1].command"; empty for the whole file), the byte offset of
// the value or key at fault (-1 when unknown) and the rule it broke, which
// says what a valid value looks like. loadConfig turns the offset into
// file:line:column.
type ConfigError struct {
	Key    string
	Offset int64
	Rule   string
}

// Error is `key "a.b": rule`, or the rule alone for the whole file; the
// position is added by loadConfig, which knows the file.
func (e *ConfigError) Error() string {
	if e.Key == "" {
		return e.Rule
	}
	return fmt.Sprintf("key %q: %s", e.Key, e.Rule)
}

// lineCol returns the 1-based line and column (in bytes) of offset in data.
func lineCol(data []byte, offset int64) (line, col int) {
	offset = min(max(offset, 0), int64(len(data)))
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// configChecker walks the config's JSON against the Config type before it
// is decoded, so that every mistake is reported with its full key path and
// position, and records where each key path is for the checks made after
// decoding.
type configChecker struct {
	at map[string]int64 // key path -> offset of its value
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	durationType    = reflect.TypeFor[Duration]()
)

// offsetOf returns the recorded offset of key, or -1.
func (c *configChecker) offsetOf(key string) int64 {
	if off, ok := c.at[key]; ok {
		return off
	}
	return -1
}

// errAt is a ConfigError at key, positioned where key was seen.
func (c *configChecker) errAt(key, rule string, args ...any) *ConfigError {
	return &ConfigError{Key: key, Offset: c.offsetOf(key), Rule: fmt.Sprintf(rule, args...)}
}

// check checks raw, the value at key found at offset base, against t; a nil
// t accepts any JSON and only records the positions of the keys inside.
func (c *configChecker) check(raw []byte, base int64, t reflect.Type, key string) error {
	c.at[key] = base
	if string(raw) == "null" { // encoding/json leaves the value as it is
		return nil
	}
	fail := func(rule string, args ...any) error {
		return &ConfigError{Key: key, Offset: base, Rule: fmt.Sprintf(rule, args...)}
	}
	if t != nil && t != reflect.TypeFor[json.RawMessage]() && (t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)) {
		if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
			return fail("%v", err)
		}
		return nil
	}
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	isObject, isArray := len(raw) > 0 && raw[0] == '{', len(raw) > 0 && raw[0] == '['
	switch {
	case t == nil || t == reflect.TypeFor[json.RawMessage]():
		if isObject {
			return c.object(raw, base, key, nil, func(string) (reflect.Type, bool) { return nil, true })
		}
		if isArray {
			return c.array(raw, base, key, nil)
		}
		return nil
	case t.Kind() == reflect.Struct:
		if !isObject {
			return fail("must be an object with the keys %s", strings.Join(structKeys(t), ", "))
		}
		return c.object(raw, base, key, structKeys(t), func(k string) (reflect.Type, bool) {
			f, ok := structField(t, k)
			return f.Type, ok
		})
	case t.Kind() == reflect.Map:
		if !isObject {
			return fail("must be an object of names to %s", example(t.Elem()))
		}
		return c.object(raw, base, key, nil, func(string) (reflect.Type, bool) { return t.Elem(), true })
	case t.Kind() == reflect.Slice:
		if !isArray {
			return fail("must be an array of %s, such as [%s]", typeName(t.Elem()), example(t.Elem()))
		}
		return c.array(raw, base, key, t.Elem())
	}
	if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
		if t.Kind() == reflect.Bool {
			return fail("must be true or false")
		}
		return fail("must be %s, such as %s", typeName(t), example(t))
	}
	return nil
}

// object checks each member of the object raw; field gives the type of a
// member's value, or false for an unknown key; keys are the valid keys, for
// that error.
func (c *configChecker) object(raw []byte, base int64, key string, keys []string, field func(string) (reflect.Type, bool)) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	for dec.More() {
		keyAt := dec.InputOffset()
		for keyAt < int64(len(raw)) && strings.IndexByte(" \t\r\n,", raw[keyAt]) >= 0 {
			keyAt++
		}
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := tok.(string)
		path := k
		if key != "" {
			path = key + "." + k
		}
		t, ok := field(k)
		if !ok {
			return &ConfigError{Key: path, Offset: base + keyAt, Rule: "unknown key (valid keys here: " + strings.Join(keys, ", ") + ")"}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if err := c.check(v, base+dec.InputOffset()-int64(len(v)), t, path); err != nil {
			return err
		}
	}
	return nil
}

// array checks each element of the array raw against elem.
func (c *configChecker) array(raw []byte, base int64, key string, elem reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // [
		return err
	}
	for i := 0; dec.More(); i++ {
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if err := c.check(v, base+dec.InputOffset()-int64(len(v)), elem, fmt.Sprintf("%s[%d]", key, i)); err != nil {
			return err
		}
	}
	return nil
}

// structField finds the field with JSON name k in t, matching case
// insensitively as encoding/json does.
func structField(t reflect.Type, k string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" && strings.EqualFold(name, k) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// structKeys lists the JSON keys of t.
func structKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// typeName is t in JSON words.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// example is a valid JSON value of type t.
func example(t reflect.Type) string {
	if t == durationType {
		return `"30s"`
	}
	switch t.Kind() {
	case reflect.String:
		return `"text"`
	case reflect.Bool:
		return "true"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "10"
	case reflect.Float64, reflect.Float32:
		return "0.5"
	case reflect.Slice:
		return "[" + example(t.Elem()) + "]"
	case reflect.Pointer:
		return example(t.Elem())
	}
	return "{…}"
}

// checkConfigJSON walks data against Config. An empty file (only white
// space) is no settings. Every error is a *ConfigError.
func checkConfigJSON(data []byte) (*configChecker, error) {
	c := &configChecker{at: map[string]int64{}}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	start := int64(len(data) - len(trimmed))
	if len(bytes.TrimSpace(trimmed)) == 0 {
		return c, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			// Offset counts the bytes read, the one at fault included.
			return nil, &ConfigError{Offset: max(se.Offset-1, 0), Rule: fmt.Sprintf("invalid JSON: %v", se)}
		default:
			return nil, &ConfigError{Offset: int64(len(data)), Rule: "invalid JSON: it ends too early (an unclosed { or [ or string?)"}
		}
	}
	if dec.More() {
		next := dec.InputOffset() + int64(len(data[dec.InputOffset():])-len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")))
		return nil, &ConfigError{Offset: next, Rule: "invalid JSON: more than one value in the file (the config is one object)"}
	}
	if raw[0] != '{' {
		return nil, &ConfigError{Offset: start, Rule: `must be a JSON object, such as {"timeouts": {"connect": "30s"}}`}
	}
	if err := c.check(raw, start, reflect.TypeFor[Config](), ""); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, &ConfigError{Offset: -1, Rule: err.Error()}
	}
	return c, nil
}
