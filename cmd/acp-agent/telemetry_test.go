package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A traces or audit setting the agent cannot use stops it at startup with
// an error naming the flag, key or variable and the rule. Not parallel:
// t.Setenv.
func TestRun_ObservabilitySettingsAreChecked(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	cfgFile := func(body string) string {
		p := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"audit flag", nil, []string{"--audit-log", filepath.Join(dir, "missing", "audit.jsonl")}, []string{"--audit-log", "missing/audit.jsonl"}},
		{"audit key", nil, []string{"--config", cfgFile(`{"audit": {"path": "` + filepath.Join(dir, "nope", "a.jsonl") + `"}}`)}, []string{"audit.path", "nope/a.jsonl"}},
		{"endpoint key", nil, []string{"--config", cfgFile(`{"telemetry": {"endpoint": "127.0.0.1:4318"}}`)}, []string{"telemetry.endpoint", "http://"}},
		{"unknown key", nil, []string{"--config", cfgFile(`{"audit": {"paht": "x"}}`)}, []string{"audit.paht", "unknown key", "includeArguments"}},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, nil, []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			err := run(append([]string{"--store", "memory"}, tt.args...), strings.NewReader(""), &stdout, &stderr)
			if err == nil {
				t.Fatal("run succeeded, want a startup error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
