package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// This file edits the config file's mcpServers for "acp-agent mcp add" and
// "mcp remove": the bytes of every other key, and of every other server,
// stay as they were; only the entry added, replaced or removed changes.

// jsonMember is a member of a JSON object (Key is its name) or an element
// of an array, by byte offsets in the text it was read from: Start is where
// its key (or the element) begins, ValStart and End bound its value.
type jsonMember struct {
	Key                  string
	Start, ValStart, End int
}

// jsonMembers reads the object or array that raw holds (white space around
// it allowed) and returns its members, with the offsets of its opening and
// closing brackets.
func jsonMembers(raw []byte) (members []jsonMember, open, close int, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, 0, 0, err
	}
	d, ok := tok.(json.Delim)
	if !ok || (d != '{' && d != '[') {
		return nil, 0, 0, fmt.Errorf("not an object or an array")
	}
	open = int(dec.InputOffset()) - 1
	for dec.More() {
		m := jsonMember{Start: skipJSONSpace(raw, int(dec.InputOffset()), ',')}
		if d == '{' {
			tok, err := dec.Token()
			if err != nil {
				return nil, 0, 0, err
			}
			m.Key, _ = tok.(string)
			m.ValStart = skipJSONSpace(raw, int(dec.InputOffset()), ':')
		} else {
			m.ValStart = m.Start
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, 0, 0, err
		}
		m.End = int(dec.InputOffset())
		members = append(members, m)
	}
	if _, err := dec.Token(); err != nil {
		return nil, 0, 0, err
	}
	return members, open, int(dec.InputOffset()) - 1, nil
}

// skipJSONSpace returns the offset of the first byte from i on that is
// neither JSON white space nor (once) sep.
func skipJSONSpace(b []byte, i int, sep byte) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	if i < len(b) && b[i] == sep {
		i++
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	return i
}

// splice returns b with b[from:to] replaced by s.
func splice(b []byte, from, to int, s string) []byte {
	return slices.Concat(b[:from], []byte(s), b[to:])
}

// insertMember adds text (one member or element, already indented for
// its place) at the end of the container whose members and closing
// bracket are given; indent is the container's own indentation.
func insertMember(b []byte, members []jsonMember, open, close int, text, indent string) []byte {
	if len(members) == 0 {
		return splice(b, open+1, close, "\n"+text+"\n"+indent)
	}
	return splice(b, members[len(members)-1].End, members[len(members)-1].End, ",\n"+text)
}

// removeMember deletes members[i] and the comma that joined it.
func removeMember(b []byte, members []jsonMember, i, open, close int) []byte {
	switch {
	case len(members) == 1:
		return splice(b, open+1, close, "")
	case i < len(members)-1:
		return splice(b, members[i].Start, members[i+1].Start, "")
	default:
		return splice(b, members[i-1].End, members[i].End, "")
	}
}

// serverEntry is a server as config mcpServers holds it, in both shapes.
type serverEntry struct {
	transport string // "stdio", "http" or "sse"
	command   string
	args      []string
	env       map[string]string
	url       string
	headers   map[string]string
}

// objectJSON is e in the Claude Desktop shape: {command, args, env} or
// {type, url, headers}, indented for a member of mcpServers.
func (e serverEntry) objectJSON() string {
	var v any
	if e.transport == "stdio" {
		v = struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env,omitempty"`
		}{e.command, nonNil(e.args), e.env}
	} else {
		v = struct {
			Type    string            `json:"type"`
			URL     string            `json:"url"`
			Headers map[string]string `json:"headers,omitempty"`
		}{e.transport, e.url, e.headers}
	}
	b, _ := json.MarshalIndent(v, "    ", "  ")
	return string(b)
}

// arrayJSON is e named name in the ACP array shape of session/new:
// {name, command, args, env: [{name, value}]} or {type, name, url,
// headers: [{name, value}]}, indented for an element of mcpServers.
func (e serverEntry) arrayJSON(name string) string {
	type nameValue struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	pairs := func(m map[string]string) []nameValue {
		out := []nameValue{}
		for _, k := range sortedKeys(m) {
			out = append(out, nameValue{k, m[k]})
		}
		return out
	}
	var v any
	if e.transport == "stdio" {
		v = struct {
			Name    string      `json:"name"`
			Command string      `json:"command"`
			Args    []string    `json:"args"`
			Env     []nameValue `json:"env"`
		}{name, e.command, nonNil(e.args), pairs(e.env)}
	} else {
		v = struct {
			Type    string      `json:"type"`
			Name    string      `json:"name"`
			URL     string      `json:"url"`
			Headers []nameValue `json:"headers"`
		}{e.transport, name, e.url, pairs(e.headers)}
	}
	b, _ := json.MarshalIndent(v, "    ", "  ")
	return string(b)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// errServerExists is the error of setServer for a name already in the
// config without force.
var errServerExists = errors.New("already in the config")

// setServer returns the config text data with server name set to e in
// mcpServers, in the shape mcpServers already has (the Claude Desktop
// object when there is none). A server of that name already there is
// replaced only when force, else the error wraps errServerExists.
func setServer(data []byte, name string, e serverEntry, force bool) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}\n")
	}
	top, open, close, err := jsonMembers(data)
	if err != nil || data[open] != '{' {
		return nil, fmt.Errorf("the config file is not a JSON object")
	}
	nameJSON, _ := json.Marshal(name)
	i := slices.IndexFunc(top, func(m jsonMember) bool { return m.Key == "mcpServers" })
	if i < 0 || string(data[top[i].ValStart:top[i].End]) == "null" {
		servers := "{\n    " + string(nameJSON) + ": " + e.objectJSON() + "\n  }"
		if i >= 0 {
			return splice(data, top[i].ValStart, top[i].End, servers), nil
		}
		return insertMember(data, top, open, close, `  "mcpServers": `+servers, ""), nil
	}
	base := top[i].ValStart
	raw := data[base:top[i].End]
	members, sopen, sclose, err := jsonMembers(raw)
	if err != nil {
		return nil, fmt.Errorf("mcpServers: %w", err)
	}
	for k := range members {
		members[k].Start += base
		members[k].ValStart += base
		members[k].End += base
	}
	sopen, sclose = sopen+base, sclose+base
	if data[sopen] == '{' {
		if j := slices.IndexFunc(members, func(m jsonMember) bool { return m.Key == name }); j >= 0 {
			if !force {
				return nil, errServerExists
			}
			return splice(data, members[j].ValStart, members[j].End, e.objectJSON()), nil
		}
		return insertMember(data, members, sopen, sclose, "    "+string(nameJSON)+": "+e.objectJSON(), "  "), nil
	}
	for _, m := range members {
		var el struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(data[m.ValStart:m.End], &el) == nil && el.Name == name {
			if !force {
				return nil, errServerExists
			}
			return splice(data, m.ValStart, m.End, e.arrayJSON(name)), nil
		}
	}
	return insertMember(data, members, sopen, sclose, "    "+e.arrayJSON(name), "  "), nil
}

// deleteServer returns the config text data without server name in
// mcpServers, and whether it was there.
func deleteServer(data []byte, name string) ([]byte, bool, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return data, false, nil
	}
	top, _, _, err := jsonMembers(data)
	if err != nil {
		return nil, false, fmt.Errorf("the config file is not a JSON object")
	}
	i := slices.IndexFunc(top, func(m jsonMember) bool { return m.Key == "mcpServers" })
	if i < 0 || string(data[top[i].ValStart:top[i].End]) == "null" {
		return data, false, nil
	}
	base := top[i].ValStart
	raw := data[base:top[i].End]
	members, sopen, sclose, err := jsonMembers(raw)
	if err != nil {
		return nil, false, fmt.Errorf("mcpServers: %w", err)
	}
	for j, m := range members {
		found := m.Key == name
		if raw[sopen] == '[' {
			var el struct {
				Name string `json:"name"`
			}
			found = json.Unmarshal(raw[m.ValStart:m.End], &el) == nil && el.Name == name
		}
		if found {
			out := removeMember(raw, members, j, sopen, sclose)
			return splice(data, base, top[i].End, string(out)), true, nil
		}
	}
	return data, false, nil
}

// readConfigText reads the config file at path for an edit: its text
// (empty when it does not exist), its mode (0600 for a new file), and an
// error if it is not a valid config, since an edit must not build on a
// file the agent would refuse.
func readConfigText(path string) ([]byte, fs.FileMode, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o600, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("config: %w", err)
	}
	if _, err := loadConfig(path, true); err != nil {
		return nil, 0, fmt.Errorf("%w (fix it before adding servers)", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, fmt.Errorf("config: %w", err)
	}
	return data, fi.Mode().Perm(), nil
}

// writeConfigText checks data as a config (every key, and every mcpServers
// entry as the agent will read it) and writes it to path atomically: a
// temporary file in the same directory, synced, renamed over path (or over
// the file a symbolic link at path points to). The directory is made
// (0700) when missing; the file gets mode.
func writeConfigText(path string, data []byte, mode fs.FileMode) error {
	var cfg Config
	if err := parseConfig(data, &cfg); err != nil {
		return fmt.Errorf("config %s: the edit would make it invalid: %w", path, err)
	}
	if _, err := cfg.DefaultServers(); err != nil {
		return fmt.Errorf("config %s: the edit would make it invalid: %w", path, err)
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, nothing is there
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("config: %w", err)
	}
	if _, err := io.Copy(tmp, bytes.NewReader(data)); err != nil {
		tmp.Close()
		return fmt.Errorf("config: writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// localServerName is the config name of the registry server name: its last
// path segment ("io.github.owner/weather-mcp" → "weather-mcp"), with every
// character other than ASCII letters, digits, '_' and '-' made '-', so its
// tools are mcp__<name>__<tool> unchanged.
func localServerName(registryName string) string {
	last := registryName[strings.LastIndex(registryName, "/")+1:]
	b := []byte(last)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if s := strings.Trim(string(b), "-"); s != "" {
		return s
	}
	return "server"
}
