package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Mode is a session's mode: what the processes it starts (stdio MCP
// servers, run_command) may change, enforced by the kernel where it can
// ([Supported]), and which tools run at all (read-only refuses those that
// may change things). The zero value is not a mode; [ParseMode] checks one.
type Mode string

// The modes, as the editor shows them (ACP session config option "mode",
// category mode, and ACP session modes).
const (
	// ReadOnly: commands and servers cannot write (but /dev/null and the
	// terminal); tools that may change things are refused before asking.
	ReadOnly Mode = "read-only"
	// WorkspaceWrite, the default: writes only inside the session's
	// directory, its additional directories and its private temp
	// directory; reads anywhere unless a server's config narrows them.
	WorkspaceWrite Mode = "workspace-write"
	// FullAccess: nothing is confined (what a server's own config narrows
	// still is); the agent's behaviour before modes existed.
	FullAccess Mode = "full-access"
)

// Modes lists the modes in the order the editor shows them.
var Modes = []Mode{ReadOnly, WorkspaceWrite, FullAccess}

// ParseMode returns the mode named s; an error names the valid ones.
func ParseMode(s string) (Mode, error) {
	if m := Mode(s); slices.Contains(Modes, m) {
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q: want read-only, workspace-write or full-access", s)
}

// Name is the mode's label for people, such as "Workspace write".
func (m Mode) Name() string {
	switch m {
	case ReadOnly:
		return "Read only"
	case WorkspaceWrite:
		return "Workspace write"
	case FullAccess:
		return "Full access"
	}
	return string(m)
}

// Description says in one sentence what the mode allows.
func (m Mode) Description() string {
	switch m {
	case ReadOnly:
		return "Commands and MCP servers cannot write; tools that may change things are refused"
	case WorkspaceWrite:
		return "Commands and MCP servers write only in the session's directories and a private temp directory; tools that change things ask first"
	case FullAccess:
		return "Nothing is confined: commands and MCP servers can write anywhere you can; tools that change things ask first"
	}
	return ""
}

// Server is one MCP server's own rules (config servers.<name>.sandbox),
// applied in every mode within what the mode allows. The zero value adds
// nothing.
type Server struct {
	// Network false refuses the server TCP bind and connect (Landlock ABI
	// 4+); nil or true allows them.
	Network *bool `json:"network,omitempty"`
	// Read, when non-nil, narrows what the server may read to these paths,
	// the system directories programs need to run ([SystemDirs]), its
	// command's directory and what it may write. Nil reads anywhere.
	Read []string `json:"read,omitempty"`
	// Write lists more paths the server may write in workspace-write mode
	// (a cache directory, say); read-only ignores them, full-access needs
	// none.
	Write []string `json:"write,omitempty"`
}

// Validate reports a path that is not absolute (after "~/" expansion) or
// is empty, naming the key (read or write) it is under.
func (s Server) Validate() error {
	for _, l := range []struct {
		key   string
		paths []string
	}{{"read", s.Read}, {"write", s.Write}} {
		for i, p := range l.paths {
			if p == "" || !filepath.IsAbs(expandHome(p)) {
				return fmt.Errorf("%s[%d] %q: want an absolute path or one under ~/", l.key, i, p)
			}
		}
	}
	return nil
}

// NetworkOff reports whether s refuses the network.
func (s Server) NetworkOff() bool { return s.Network != nil && !*s.Network }

// Workspace is what a session's workspace-write mode may write.
type Workspace struct {
	// Cwd is the session's directory; Dirs its additional directories.
	Cwd  string
	Dirs []string
	// Temp is the session's private temp directory ("" for none), the
	// children's TMPDIR.
	Temp string
}

// SystemDirs are the directories a server whose config narrows its reads
// still reads: those programs and their libraries, configuration and
// devices live in. Missing ones are skipped.
var SystemDirs = []string{"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix", "/proc", "/sys", "/dev", "/run"}

// devices are the files any confined process may write: the sinks and its
// terminal (ioctl allowed on them).
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts"}

// For returns the rules a process started for server s of a session in
// mode m with workspace ws runs under; exe is the program's path (its
// directory stays readable when s narrows reads). ok is false when there
// is nothing to confine (full-access and a server config that narrows
// nothing): the process then starts as before, without the launcher.
func For(m Mode, ws Workspace, s Server, exe string) (r Rules, ok bool) {
	r = Rules{Mode: m, Network: !s.NetworkOff()}
	if m != FullAccess {
		r.FS, r.Scoped = true, true
		switch m {
		case WorkspaceWrite:
			r.Write = append(r.Write, ws.Cwd)
			r.Write = append(r.Write, ws.Dirs...)
			if ws.Temp != "" {
				r.Write = append(r.Write, ws.Temp)
			}
			for _, p := range s.Write {
				r.Write = append(r.Write, expandHome(p))
			}
		}
		r.Devices = true
	}
	if s.Read != nil {
		r.FS = true
		if m == FullAccess {
			// Full access writes anywhere: narrowing reads narrows writes
			// to what it may read, less the system's directories.
			r.Write = append(r.Write, absAll(s.Read)...)
			r.Write = append(r.Write, ws.Cwd)
			r.Write = append(r.Write, ws.Dirs...)
			if ws.Temp != "" {
				r.Write = append(r.Write, ws.Temp)
			}
			r.Devices = true
		}
		r.Read = append(r.Read, SystemDirs...)
		if exe != "" && filepath.IsAbs(exe) {
			r.Read = append(r.Read, filepath.Dir(exe))
		}
		r.Read = append(r.Read, absAll(s.Read)...)
	} else if r.FS {
		r.Read = []string{"/"}
	}
	r.Write = compact(r.Write)
	r.Read = compact(r.Read)
	return r, r.FS || !r.Network || r.Scoped
}

// absAll expands "~/" in paths.
func absAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, expandHome(p))
	}
	return out
}

// compact drops empty and repeated paths, keeping the first of each.
func compact(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p = filepath.Clean(p); p != "." && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// expandHome replaces a leading "~/" (or a lone "~") by the user's home
// directory; p is returned unchanged without one, or without a home.
func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, p[1:])
}
