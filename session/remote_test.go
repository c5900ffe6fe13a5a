package session

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/bridge"
)

// With RemoteClients, a session's directories are paths on its client's
// machine: Open checks only that they are absolute. The session's stdio
// servers start in a private directory of its own (mode 0700), removed
// when the session ends, while its in-process servers and Cwd keep the
// client's paths.
func TestCore_RemoteClients(t *testing.T) {
	envs := make(chan InProcessEnv, 1)
	c, _ := newTestCore(t, CoreOptions{RemoteClients: true, InProcess: []InProcessServer{{Name: "probe", New: func(env InProcessEnv) *mcp.Server {
		envs <- env
		return nil // left out of the session
	}}}})
	for _, tc := range []struct {
		name, cwd string
		dirs      []string
		want      string
	}{
		{"relative cwd", "project", nil, `cwd "project" must be an absolute path`},
		{"relative directory", "/client/project", []string{"/client/lib", "lib"}, `additionalDirectories[1] "lib" must be an absolute path`},
	} {
		if _, err := c.Open(t.Context(), OpenRequest{Cwd: tc.cwd, AdditionalDirectories: tc.dirs}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Open = %v, want ErrInvalid saying %q", tc.name, err, tc.want)
		}
	}

	out := filepath.Join(t.TempDir(), "pwd")
	const cwd = "/client/home/project" // not a directory here
	s, err := c.Open(t.Context(), OpenRequest{Cwd: cwd, AdditionalDirectories: []string{"/client/lib"},
		Servers: []bridge.ServerSpec{{Name: "pwd", Transport: bridge.TransportStdio, Command: "sh", Args: []string{"-c", "pwd > " + out}}}})
	if err != nil {
		t.Fatalf("Open with a cwd of the client's machine = %v", err)
	}
	if env := wait(t, envs, "the in-process server's environment"); env.Cwd != cwd || len(env.AdditionalDirectories) != 1 || env.AdditionalDirectories[0] != "/client/lib" || s.Cwd() != cwd {
		t.Errorf("in-process env %+v, session cwd %q; want the client's paths", env, s.Cwd())
	}
	dir := s.dir
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the session's private directory %q: %v, %v; want a directory of mode 0700", dir, fi, err)
	}
	data, err := os.ReadFile(out) // the server ran (and failed: it is no MCP server) before Open returned
	if err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if got := strings.TrimSpace(string(data)); got != dir && got != real {
		t.Errorf("the stdio server ran in %q, want the session's private directory %q", got, dir)
	}
	s.End()
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the private directory after End: %v, want it gone", err)
	}
}

// Without RemoteClients, a session's stdio servers start in its cwd,
// which must exist here; its private directory is only their TMPDIR,
// removed when it ends.
func TestCore_LocalClientsServersStartInTheCwd(t *testing.T) {
	c, _ := newTestCore(t, CoreOptions{})
	cwd := t.TempDir()
	out := filepath.Join(t.TempDir(), "pwd")
	s, err := c.Open(t.Context(), OpenRequest{Cwd: cwd,
		Servers: []bridge.ServerSpec{{Name: "pwd", Transport: bridge.TransportStdio, Command: "sh", Args: []string{"-c", "pwd > " + out + "; echo $TMPDIR >> " + out}}}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	real, _ := filepath.EvalSymlinks(cwd)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if err != nil || len(lines) != 2 || (lines[0] != cwd && lines[0] != real) || s.dir == "" || lines[1] != s.dir {
		t.Errorf("the stdio server ran in and with TMPDIR %q (%v), private dir %q; want the cwd %q and the private dir", lines, err, s.dir, cwd)
	}
	s.End()
	if _, err := os.Stat(s.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the private directory after End: %v, want it gone", err)
	}
}
