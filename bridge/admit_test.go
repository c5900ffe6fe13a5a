package bridge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed02d3eb6b/acp-agent/gateway"
)

// errAdmit is the refusal of TestManager_Admit's policy.
var errAdmit = errors.New(`server is refused by the managed policy /etc/acp-agent/managed.json`)

// TestManager_Admit: Options.Admit is asked once about every server but an
// in-process one, before anything starts; a refused server fails at once
// with the error as it is (gateway.ErrorText adds nothing), its command never runs
// and its URL is never dialed, and Options.Dial and StdioPolicy are not
// asked about it; an admitted server goes on as usual.
func TestManager_Admit(t *testing.T) {
	dir := t.TempDir()
	refusedMarker, admittedMarker := filepath.Join(dir, "refused-ran"), filepath.Join(dir, "admitted-ran")
	var mu sync.Mutex
	var admit, stdio, dialed []string
	opts := &Options{
		Cwd: dir,
		Admit: func(spec ServerSpec) error {
			mu.Lock()
			defer mu.Unlock()
			admit = append(admit, spec.Name)
			if spec.Name == "denied" || spec.Name == "deniedhttp" {
				return errAdmit
			}
			return nil
		},
		StdioPolicy: func(spec ServerSpec) error {
			mu.Lock()
			defer mu.Unlock()
			stdio = append(stdio, spec.Name)
			return nil
		},
		Dial: func(_ context.Context, spec ServerSpec) (mcp.Transport, error) {
			mu.Lock()
			defer mu.Unlock()
			dialed = append(dialed, spec.Name)
			return nil, nil // the built-in transport
		},
	}
	m := NewManager(opts)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	// Each command leaves a marker and exits: if it ran, the marker is
	// there by the time its initialize failed (its stdout closed).
	err := m.Connect(t.Context(), []ServerSpec{
		{Name: "denied", Transport: TransportStdio, Command: "/bin/sh", Args: []string{"-c", "echo ran > " + refusedMarker}},
		{Name: "deniedhttp", Transport: TransportHTTP, URL: "http://127.0.0.1:1/mcp"},
		{Name: "admitted", Transport: TransportStdio, Command: "/bin/sh", Args: []string{"-c", "echo ran > " + admittedMarker}},
		{Name: "mem", Transport: TransportInProcess, Server: testServer(t)},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := m.Servers()
	if len(st) != 4 {
		t.Fatalf("servers = %+v", st)
	}
	for _, s := range st[:2] {
		if s.State != StateFailed || !errors.Is(s.Err, errAdmit) || gateway.ErrorText(s.Err) != errAdmit.Error() {
			t.Errorf("%s = %+v, want failed with the policy's error as it is", s.Name, s)
		}
	}
	if _, err := os.Stat(refusedMarker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused server's command ran (%v)", err)
	}
	if _, err := os.Stat(admittedMarker); err != nil {
		t.Errorf("the admitted server's command did not run: %v (status %+v)", err, st[2])
	}
	if errors.Is(st[2].Err, errAdmit) {
		t.Errorf("admitted = %+v, refused by the policy", st[2])
	}
	if st[3].State != StateConnected {
		t.Errorf("mem = %+v, want connected", st[3])
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range [][]string{admit, stdio, dialed} {
		slices.Sort(l)
	}
	if !slices.Equal(admit, []string{"admitted", "denied", "deniedhttp"}) {
		t.Errorf("Admit was asked about %v, want every server but the in-process one, once", admit)
	}
	if !slices.Equal(stdio, []string{"admitted"}) || !slices.Equal(dialed, []string{"admitted", "mem"}) {
		t.Errorf("StdioPolicy asked about %v, Dial about %v; want the admitted servers only", stdio, dialed)
	}
}
