package sandbox

import (
	"slices"
	"testing"
)

func TestChildEnv(t *testing.T) {
	agentEnv := map[string]string{
		"PATH": "/usr/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "TERM": "xterm",
		"ANTHROPIC_API_KEY": "sk-secret", "ACP_AGENT_GATEWAY_TOKEN": "tok", "AWS_SECRET_ACCESS_KEY": "aws",
	}
	lookup := func(k string) (string, bool) { v, ok := agentEnv[k]; return v, ok }
	tests := []struct {
		name string
		env  []EnvVar
		want []string
	}{
		{"baseline only", nil, []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm"}},
		{"entry adds", []EnvVar{{"FOO", "bar"}}, []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm", "FOO=bar"}},
		{"entry overrides baseline", []EnvVar{{"HOME", "/tmp/h"}}, []string{"PATH=/usr/bin", "HOME=/tmp/h", "LANG=C.UTF-8", "TERM=xterm"}},
		{"client may pass a key itself", []EnvVar{{"ANTHROPIC_API_KEY", "client"}}, []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm", "ANTHROPIC_API_KEY=client"}},
		{"last duplicate wins", []EnvVar{{"A", "1"}, {"A", "2"}}, []string{"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm", "A=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ChildEnv(tt.env, lookup)
			if !slices.Equal(got, tt.want) {
				t.Errorf("ChildEnv = %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestValidEnvName(t *testing.T) {
	for name, want := range map[string]bool{"PATH": true, "a_b": true, "": false, "A=B": false, "A\x00": false} {
		if got := ValidEnvName(name); got != want {
			t.Errorf("ValidEnvName(%q) = %v", name, got)
		}
	}
}
