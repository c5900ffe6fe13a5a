package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Config is the config file (--config, default
// $XDG_CONFIG_HOME/acp-agent/config.json). Every key is optional; unknown
// keys are an error that names them.
type Config struct {
	Timeouts Timeouts `json:"timeouts"`
}

// Timeouts are durations in Go syntax ("30s", "2m"). Zero means the default.
type Timeouts struct {
	// Connect bounds starting an MCP server and initialize (default 30s).
	Connect Duration `json:"connect"`
	// ToolsList bounds tools/list with all its pages (default 30s).
	ToolsList Duration `json:"toolsList"`
	// ToolCall bounds one tools/call (default 120s).
	ToolCall Duration `json:"toolCall"`
	// Grace is how long a stdio server gets to exit after its stdin closes,
	// before SIGTERM and then SIGKILL of its process group (default 5s).
	Grace Duration `json:"grace"`
}

// Duration is a time.Duration written as a Go duration string.
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("must be a duration string such as \"30s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a non-negative duration such as \"30s\"", s)
	}
	*d = Duration(v)
	return nil
}

// defaultConfigPath returns $XDG_CONFIG_HOME/acp-agent/config.json, falling
// back to ~/.config.
func defaultConfigPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "acp-agent", "config.json")
}

// loadConfig reads the config file at path. A missing file is an error only
// when required (the user named it with --config).
func loadConfig(path string, required bool) (*Config, error) {
	cfg := &Config{}
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return cfg, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, describeJSONError(err))
	}
	return cfg, nil
}

// describeJSONError names the key at fault.
func describeJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("key %q: must be %s", te.Field, te.Type)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, se)
	}
	return err
}
