package bridge

import (
	"context"
	"io"
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
		{"banner without a newline", `printf 'Weather server ready'; sleep 60`, `server wrote non-JSON to stdout during initialize: "Weather server ready"`},
		{"closed stdout", `exec 1>&-; sleep 60`, `server closed its stdout during initialize`},
		// An initialize refused with a JSON-RPC error is reported as that
		// error, not as a closed stdout (closing our end of the pipe is not
		// the child closing its stdout). The server/discover probe comes
		// first (ProtocolVersion 2026-07-28) and is refused as a server
		// that predates it refuses it.
		{"initialize error", `read -r line; echo '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}'; read -r line; echo '{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Unsupported protocol version"}}'; sleep 60`, `Unsupported protocol version`},
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

func TestStdoutWatch_NonJSON(t *testing.T) {
	for _, tt := range []struct {
		out   string
		ended bool
		want  string // "" means no cause
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n", false, ""},
		{`{"jsonrpc":"2.0","id":1,"res`, false, ""}, // still being written
		{`{"jsonrpc":"2.0","id":1,"result":{}}` + "\nDeprecation warning: x\n", false, `"Deprecation warning: x"`},
		{"\n\nhello\n", false, `"hello"`},
		{"partial banner", false, `"partial banner"`},
		{`{"cut":`, true, `"{\"cut\":"`},
	} {
		w := &stdoutWatch{r: strings.NewReader(tt.out)}
		_, _ = io.ReadAll(w)
		w.ended = tt.ended
		err := w.nonJSON()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v, want none", tt.out, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: %v, want one quoting %s", tt.out, err, tt.want)
		}
	}
}
