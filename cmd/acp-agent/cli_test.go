package main

import (
	"bytes"
	"strings"
	"testing"
)

// Malformed client input that acp-go-sdk itself logs at Error level (a
// $/cancel_request without a usable requestId) is one log line, with no Go
// stack frames, as is every other line.
func TestRun_BadClientLineLogsNoStackTrace(t *testing.T) {
	in := strings.NewReader("hello\n" +
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{}}` + "\n" +
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":{}}}` + "\n")
	var stdout, stderr bytes.Buffer
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	if err := run([]string{"--store", "memory"}, in, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	logs := stderr.String()
	if !strings.Contains(logs, "$/cancel_request") {
		t.Fatalf("the SDK's error line is missing; logs:\n%s", logs)
	}
	for _, frame := range []string{".go:", "acp-go-sdk.(*Connection)", "\n\t"} {
		if strings.Contains(logs, frame) {
			t.Errorf("logs contain stack frames (%q):\n%s", frame, logs)
		}
	}
	if !strings.Contains(stdout.String(), `"code":-32700`) {
		t.Errorf("stdout = %s, want a parse error for the line that is not JSON", stdout.String())
	}
}
