package bridge

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestManager_StdioStdoutDuringInitialize: a server that writes non-JSON
// on stdout, or closes stdout, during initialize fails at once with that
// cause, not with "process exited" or after the connect timeout.
func TestManager_StdioStdoutDuringInitialize(t *testing.T) {
	tests := []struct {
		name, script, want string
	}{
		{"banner", `echo "Starting weather server v1.2 on stdio..."; sleep 60`, `server wrote non-JSON to stdout during initialize: "Starting weather server v1.2 on stdio...`},
		{"banner then exit", `echo "usage: weather [--port N]"; exit 2`, `server wrote non-JSON to stdout during initialize: "usage: weather [--port N]`},
		{"closed stdout", `exec 1>&-; sleep 60`, `server closed its stdout during initialize`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewManager(&Options{Cwd: t.TempDir(), Timeouts: Timeouts{Connect: 60 * time.Second}})
			t.Cleanup(func() { _ = m.Close(context.Background()) })
			start := time.Now()
			_ = m.Connect(t.Context(), []ServerSpec{{Name: "noisy", Transport: TransportStdio, Command: "/bin/sh", Args: []string{"-c", tt.script}}})
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("Connect took %v; the failure is certain at once", d)
			}
			st := m.Servers()[0]
			if st.State != StateFailed || st.Err == nil || !strings.Contains(st.Err.Error(), tt.want) {
				t.Errorf("status = %v %v, want failed with %q", st.State, st.Err, tt.want)
			}
		})
	}
}
