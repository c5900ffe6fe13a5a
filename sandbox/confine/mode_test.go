package confine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		if got, err := ParseMode(string(m)); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v", m, got, err)
		}
	}
	for _, bad := range []string{"", "readonly", "Read-Only", "full"} {
		if _, err := ParseMode(bad); err == nil || !strings.Contains(err.Error(), "read-only, workspace-write or full-access") {
			t.Errorf("ParseMode(%q): %v; want an error naming the modes", bad, err)
		}
	}
}

func TestFor(t *testing.T) {
	home, _ := os.UserHomeDir()
	ws := Workspace{Cwd: "/w", Dirs: []string{"/d"}, Temp: "/t"}
	off := false
	for _, tt := range []struct {
		name      string
		m         Mode
		s         Server
		want      Rules
		confining bool
	}{
		{"read-only reads all, writes nothing", ReadOnly, Server{},
			Rules{Mode: ReadOnly, FS: true, Read: []string{"/"}, Devices: true, Network: true, Scoped: true}, true},
		{"read-only ignores a server's write list", ReadOnly, Server{Write: []string{"/cache"}},
			Rules{Mode: ReadOnly, FS: true, Read: []string{"/"}, Devices: true, Network: true, Scoped: true}, true},
		{"workspace-write writes the workspace", WorkspaceWrite, Server{},
			Rules{Mode: WorkspaceWrite, FS: true, Read: []string{"/"}, Write: []string{"/w", "/d", "/t"}, Devices: true, Network: true, Scoped: true}, true},
		{"a server widens writes", WorkspaceWrite, Server{Write: []string{"~/.cache/x", "/w"}},
			Rules{Mode: WorkspaceWrite, FS: true, Read: []string{"/"}, Write: []string{"/w", "/d", "/t", filepath.Join(home, ".cache/x")}, Devices: true, Network: true, Scoped: true}, true},
		{"a server narrows reads", WorkspaceWrite, Server{Read: []string{"/data"}},
			Rules{Mode: WorkspaceWrite, FS: true, Read: append(slices.Clone(SystemDirs), "/opt/srv/bin", "/data"), Write: []string{"/w", "/d", "/t"}, Devices: true, Network: true, Scoped: true}, true},
		{"network off", WorkspaceWrite, Server{Network: &off},
			Rules{Mode: WorkspaceWrite, FS: true, Read: []string{"/"}, Write: []string{"/w", "/d", "/t"}, Devices: true, Network: false, Scoped: true}, true},
		{"full access confines nothing", FullAccess, Server{Write: []string{"/x"}},
			Rules{Mode: FullAccess, Network: true}, false},
		{"full access keeps a server's network off", FullAccess, Server{Network: &off},
			Rules{Mode: FullAccess, Network: false}, true},
		{"full access keeps a server's narrowed reads", FullAccess, Server{Read: []string{"/data"}},
			Rules{Mode: FullAccess, FS: true, Read: append(slices.Clone(SystemDirs), "/opt/srv/bin", "/data"), Write: []string{"/data", "/w", "/d", "/t"}, Devices: true, Network: true}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := For(tt.m, ws, tt.s, "/opt/srv/bin/server")
			if ok != tt.confining {
				t.Errorf("confining = %v, want %v", ok, tt.confining)
			}
			if !slices.Equal(got.Read, tt.want.Read) || !slices.Equal(got.Write, tt.want.Write) {
				t.Errorf("read %q write %q, want read %q write %q", got.Read, got.Write, tt.want.Read, tt.want.Write)
			}
			got.Read, got.Write, tt.want.Read, tt.want.Write = nil, nil, nil, nil
			if got.Mode != tt.want.Mode || got.FS != tt.want.FS || got.Devices != tt.want.Devices || got.Network != tt.want.Network || got.Scoped != tt.want.Scoped {
				t.Errorf("rules %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestServerValidate(t *testing.T) {
	if err := (Server{Read: []string{"/a", "~/b"}, Write: []string{"~"}}).Validate(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []Server{{Read: []string{"rel"}}, {Write: []string{""}}, {Write: []string{"~user/x"}}} {
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), "absolute path") {
			t.Errorf("%+v: %v; want an error naming the rule", s, err)
		}
	}
}

// TestSupport_KernelWithoutLandlock is a kernel without Landlock, and one
// with too old an ABI for some rules: what each says is and is not
// enforced.
func TestSupport_KernelWithoutLandlock(t *testing.T) {
	none := Support{ABI: 0, OS: "linux"}
	r, _ := For(WorkspaceWrite, Workspace{Cwd: "/w"}, Server{Network: new(false)}, "")
	if gaps := none.Gaps(r); !slices.Contains(gaps, "file access") || len(gaps) != 3 {
		t.Errorf("gaps without Landlock: %q", gaps)
	}
	if d := none.Describe(WorkspaceWrite); !strings.Contains(d, "not enforced") || !strings.Contains(d, "lsm=") || !strings.Contains(d, "sandbox.require") {
		t.Errorf("Describe: %q", d)
	}
	old := Support{ABI: 3, OS: "linux"}
	if gaps := old.Gaps(r); len(gaps) != 2 || !strings.Contains(gaps[0], "network") || !strings.Contains(gaps[1], "signals") {
		t.Errorf("gaps on ABI 3: %q", gaps)
	}
	if d := old.Describe(ReadOnly); !strings.Contains(d, "(Landlock ABI 3), except network") {
		t.Errorf("Describe on ABI 3: %q", d)
	}
	full := Support{ABI: 7, OS: "linux"}
	if gaps := full.Gaps(r); len(gaps) != 0 {
		t.Errorf("gaps on ABI 7: %q", gaps)
	}
	if d := full.Describe(WorkspaceWrite); d != "Workspace write: enforced by the kernel (Landlock ABI 7)." {
		t.Errorf("Describe on ABI 7: %q", d)
	}
	if d := (Support{OS: "darwin"}).Describe(ReadOnly); !strings.Contains(d, "darwin has none") {
		t.Errorf("Describe on macOS: %q", d)
	}
	if d := none.Describe(FullAccess); !strings.HasPrefix(d, "Full access: commands and MCP servers run unconfined") {
		t.Errorf("Describe full access: %q", d)
	}
}
