package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// credentialsFile is the name of the file "acp-agent login" stores model API
// keys in, in the config directory.
const credentialsFile = "credentials.json"

// credentials is the API key file of "acp-agent login":
// $XDG_CONFIG_HOME/acp-agent/credentials.json (~/.config/...), mode 0600 in
// a 0700 directory, {"keys": {"anthropic": "sk-..."}} by provider ID. Every
// method reads or replaces the whole file, so a key stored by another
// process is seen at once; writes are atomic (a temporary file renamed over
// it). Keys read from it go to the provider options only: never to a log,
// the session store or os.Environ (so never to a child's environment).
type credentials struct {
	path string // "" means no file: nothing is stored, storing fails
}

// credentialsData is the file's JSON.
type credentialsData struct {
	Keys map[string]string `json:"keys"`
}

// defaultCredentials returns the credentials file next to the default
// config file.
func defaultCredentials() *credentials {
	p := defaultConfigPath()
	if p == "" {
		return &credentials{}
	}
	return &credentials{path: filepath.Join(filepath.Dir(p), credentialsFile)}
}

// read returns the stored keys; a missing file is no keys.
func (c *credentials) read() (map[string]string, error) {
	if c == nil || c.path == "" {
		return map[string]string{}, nil
	}
	b, err := os.ReadFile(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("credentials %s: %w", c.path, err)
	}
	var d credentialsData
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("credentials %s: not a credentials file (%v); remove it with \"acp-agent logout\"", c.path, err)
	}
	if d.Keys == nil {
		d.Keys = map[string]string{}
	}
	return d.Keys, nil
}

// key returns the stored key of provider id, or "" (also when the file
// cannot be read: the caller then asks for the key as if none were stored).
func (c *credentials) key(id string) string {
	keys, err := c.read()
	if err != nil {
		return ""
	}
	return keys[id]
}

// providers lists the providers with a stored key, sorted.
func (c *credentials) providers() []string {
	keys, _ := c.read()
	ids := make([]string, 0, len(keys))
	for id, k := range keys {
		if k != "" {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// store stores key as provider id's key, keeping the others.
func (c *credentials) store(id, key string) error {
	keys, err := c.read()
	if err != nil {
		return err
	}
	keys[id] = key
	return c.write(keys)
}

// remove removes the key of provider id, or every key when id is "". It
// reports whether anything was removed; the file is deleted when no key
// is left.
func (c *credentials) remove(id string) (bool, error) {
	if c == nil || c.path == "" {
		return false, nil
	}
	keys, err := c.read()
	if err != nil && id != "" {
		return false, err
	}
	if id == "" || len(keys) == 1 && keys[id] != "" {
		err := os.Remove(c.path)
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return err == nil, err
	}
	if _, ok := keys[id]; !ok {
		return false, nil
	}
	delete(keys, id)
	return true, c.write(keys)
}

// write replaces the file atomically: a 0600 temporary file in the same
// directory (created 0700 if missing), synced, then renamed over it.
func (c *credentials) write(keys map[string]string) error {
	if c == nil || c.path == "" {
		return errors.New("credentials: no config directory (set XDG_CONFIG_HOME or HOME)")
	}
	dir := filepath.Dir(c.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	b, err := json.MarshalIndent(credentialsData{Keys: keys}, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".credentials-*.json") // mode 0600
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename, a no-op
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("credentials %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("credentials %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("credentials %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, c.path); err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	return nil
}
